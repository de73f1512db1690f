/**
 * `run --from-file` on a terminal: the progress line is cleared before any log
 * line, so that none is glued onto it, and with the file's size known it shows a bar, the share
 * done and the time left. The terminal is a real pseudo-terminal made by util-linux's `script`.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { progressText } from '../../src/cli/main.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';
import { rawListing } from '../support/raw-listing.js';

const fx = useSyncFixture('tty', { simulator: { records: 60_000 } });

it('writes a bar with the share done and the time left when the size is known, and the plain line when not', () => {
  expect(progressText({ received: 303_496, bytes: 70 * 2 ** 20, totalBytes: 140 * 2 ** 20, elapsedMs: 1600 })).toBe(
    '  [############............] 50%  303,496 records parsed and staged (70 of 140 MB), 1.6 s, about 1.6 s left ',
  );
  expect(progressText({ received: 303_496, bytes: 70 * 2 ** 20, elapsedMs: 1600 })).toBe(
    '  303,496 records parsed and staged (70 MB), 1.6 s ',
  );
  expect(
    progressText({
      received: 1000,
      bytes: 2 ** 20,
      download: { received: 19 * 2 ** 20, declared: 76 * 2 ** 20 },
      elapsedMs: 1000,
    }),
  ).toBe(
    '  [######..................] 25% of 76 MB downloaded  1,000 records parsed and staged (1 MB), 1.0 s, about 3.0 s left ',
  );
});

describeWith('script (util-linux)', runs('script', ['--version']), 'run --from-file on a terminal', () => {
  const onTerminal = (args: string[]) => {
    const command = [process.execPath, join(ROOT, 'bin', 'wine-recon-sync'), ...args]
      .map((a) => JSON.stringify(a))
      .join(' ');
    return new Promise<string>((resolve) => {
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', TERM: 'xterm', NO_COLOR: '1', ...fx.env },
      });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.on('close', () => resolve(text));
    });
  };
  /** Every log line starts a line of its own: after a newline, or right after the progress line is cleared. */
  const expectNoGluedLines = (out: string) => {
    const starts = [...out.matchAll(/\[\d\d:\d\d:\d\d\.\d{3}\] /g)].map((m) => m.index);
    expect(starts.length).toBeGreaterThan(3);
    for (const i of starts) {
      const before = out.slice(Math.max(0, i - 3), i);
      expect(
        i === 0 || before.endsWith('\n') || before.endsWith('\x1b[K'),
        JSON.stringify(out.slice(Math.max(0, i - 60), i + 20)),
      ).toBe(true);
    }
    expect(out).not.toMatch(/ s \[\d\d:\d\d/);
  };

  it('clears the progress line before each log line; a file shows a bar of the share parsed', async () => {
    const file = join(fx.dir, 'listing.json');
    await writeFile(file, (await rawListing(fx.sim, 'identity')).body);
    const out = await onTerminal(['run', '--from-file', file]);
    expect(out).toContain('succeeded');
    expect(out).toMatch(/\[#*\.*\] \d+%  [\d,]+ records parsed and staged \(\d+ of \d+ MB\)/);
    expectNoGluedLines(out);
  });

  it('a download with a Content-Length shows a bar of the share downloaded', async () => {
    fx.sim.setRawBody((await rawListing(fx.sim, 'identity')).body);
    const out = await onTerminal(['run']);
    fx.sim.setRawBody(null);
    expect(out).toContain('succeeded');
    expect(out).toMatch(/\[#*\.*\] \d+% of \d+ MB downloaded  [\d,]+ records parsed and staged/);
    expectNoGluedLines(out);
  });
});
