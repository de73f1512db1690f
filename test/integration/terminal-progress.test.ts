/**
 * `run --from-file` on a terminal (issue 29, "Also"): the progress line is cleared before any log
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
  expect(progressText({ received: 303_496, bytes: 70 * 2 ** 20, elapsedMs: 1600 })).toBe('  303,496 records parsed and staged (70 MB), 1.6 s ');
});

describeWith('script (util-linux)', runs('script', ['--version']), 'run --from-file on a terminal', () => {
  it('clears the progress line before each log line', async () => {
    const file = join(fx.dir, 'listing.json');
    await writeFile(file, (await rawListing(fx.sim, 'identity')).body);
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, 'bin', 'wine-recon-sync'))} run --from-file ${JSON.stringify(file)}`;
    const out = await new Promise<string>((resolve) => {
      const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { PATH: process.env.PATH ?? '', TERM: 'xterm', NO_COLOR: '1', DATABASE_URL: fx.env.DATABASE_URL!, SYNC_DB_SCHEMA: fx.db.schema } });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.on('close', () => resolve(text));
    });
    expect(out).toContain('run 1 succeeded');
    expect(out).toMatch(/\[#*\.*\] \d+%  [\d,]+ records parsed and staged \(\d+ of \d+ MB\)/);
    // Every log line starts a line of its own: after a newline, or right after the progress line is cleared.
    const starts = [...out.matchAll(/\[\d\d:\d\d:\d\d\.\d{3}\] /g)].map((m) => m.index);
    expect(starts.length).toBeGreaterThan(3);
    for (const i of starts) {
      const before = out.slice(Math.max(0, i - 3), i);
      expect(i === 0 || before.endsWith('\n') || before.endsWith('\x1b[K'), JSON.stringify(out.slice(Math.max(0, i - 60), i + 20))).toBe(true);
    }
    expect(out).not.toMatch(/ s \[\d\d:\d\d/);
  });
});
