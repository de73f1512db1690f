// The CLI (as bin/wine-recon-sync runs it), reporting its peak RSS as its last stderr line,
// `peak-rss-kb N`: the kernel's own high-water mark of the process (getrusage ru_maxrss), read as
// it exits. Run as `node test/support/peak-rss-cli.mjs ARGS` (harness.ts runCli's `bin`).
import { writeSync } from 'node:fs';
import { main } from '../../dist/src/cli/main.js';

process.on('exit', () => writeSync(2, `peak-rss-kb ${process.resourceUsage().maxRSS}\n`));
const code = await main(process.argv.slice(2));
process.exitCode = code;
setTimeout(() => process.exit(code), 2000).unref();
