/**
 * Loaded with `node --import` into a benchmarked process: reports on exit its peak RSS and the CPU
 * it used (user and system, every thread of the process: the main thread, workers, libuv's pool).
 */
import { writeSync } from 'node:fs';

const fd = Number(process.env.BENCH_RSS_FD ?? 3);
process.on('exit', () => {
  try {
    const usage = process.resourceUsage();
    const probe = {
      maxRssBytes: usage.maxRSS * 1024,
      userCpuMicros: usage.userCPUTime,
      systemCpuMicros: usage.systemCPUTime,
    };
    writeSync(fd, `${JSON.stringify(probe)}\n`);
  } catch {
    // not run by the benchmark: nothing to report to
  }
});
