import { spawn, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli, type CliResult } from '../support/harness.js';
import { describeWith } from '../support/programs.js';

const fx = useSyncFixture('disk', { simulator: { records: 20_000 }, each: true });

/** A private mount namespace with a 1 MB tmpfs over `dir`: a real full filesystem, gone with the process. */
function canMountTmpfs(): boolean {
  const probe = spawnSync('unshare', ['-m', 'sh', '-c', 'd=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs "$d" && umount "$d" && rmdir "$d"'], {
    stdio: 'ignore',
    timeout: 30_000,
  });
  return probe.status === 0;
}

function runInFullTmpfs(env: Record<string, string>): Promise<CliResult> {
  const script = 'mount -t tmpfs -o size=1m tmpfs "$SPOOL_DIR" && TMPDIR="$SPOOL_DIR" exec "$NODE" "$BIN" run --json';
  const child = spawn('unshare', ['-m', 'sh', '-c', script], {
    env: { PATH: process.env.PATH ?? '', ...env, SPOOL_DIR: fx.dir, NODE: process.execPath, BIN: join(ROOT, 'bin', 'wine-recon-sync') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.on('close', (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal, stdout, stderr });
  }));
}

describeWith('mount in a private namespace (unshare -m, as root)', canMountTmpfs(), 'local disk faults are not retried', () => {
  // A gzip listing is spooled twice: decoded, and as it arrived for the archive; either file may fill the disk.
  it.each([
    ['plain', null],
    ['gzip', 'gzip'],
  ] as const)('a full spool directory fails the run at once (%s listing), naming the directory, with one login and one listing request', async (_label, coding) => {
    fx.sim.setContentCoding(coding);
    const r = await runInFullTmpfs(fx.envWith({ WINE_API_RETRIES: '5' }));
    expect(r.code, r.stderr).toBe(1);
    const run = JSON.parse(r.stdout);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(new RegExp(`^no space left in ${fx.dir} while spooling the listing \\(\\d+\\.\\d MB needed so far\\)`));
    expect(r.stderr).not.toContain('retrying');
    expect(fx.sim.stats).toMatchObject({ logins: 1, listings: 1 });
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
  });
});

it('a TMPDIR that is not a directory fails the run before any request, naming it', async () => {
  const notADir = join(fx.dir, 'file');
  await writeFile(notADir, 'x');
  const r = await runCli(['run', '--json'], { ...fx.env, TMPDIR: notADir });
  expect(r.code, r.stderr).toBe(1);
  expect(JSON.parse(r.stdout).error).toContain(`${notADir} is not a directory: cannot spool the listing there`);
  expect(fx.sim.stats).toMatchObject({ logins: 0, listings: 0, connections: 0 });
});
