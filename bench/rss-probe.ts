/** Loaded with `node --import` into a benchmarked process: reports its peak RSS on exit. */
import { writeSync } from 'node:fs';

const fd = Number(process.env.BENCH_RSS_FD ?? 3);
process.on('exit', () => {
  try {
    writeSync(fd, `${JSON.stringify({ maxRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
  } catch {
    // not run by the benchmark: nothing to report to
  }
});
