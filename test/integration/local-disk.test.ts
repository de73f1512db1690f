import { spawn, spawnSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { recordText } from '../../src/simulator/dataset.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli, type CliResult } from '../support/harness.js';
import { describeWith } from '../support/programs.js';

const fx = useSyncFixture('disk', { simulator: { records: 20_000 }, each: true });

/** A private mount namespace with a 1 MB tmpfs over `dir`: a real full filesystem, gone with the process. */
function canMountTmpfs(): boolean {
  const probe = spawnSync(
    'unshare',
    ['-m', 'sh', '-c', 'd=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs "$d" && umount "$d" && rmdir "$d"'],
    {
      stdio: 'ignore',
      timeout: 30_000,
    },
  );
  return probe.status === 0;
}

/** The CLI's `run --json` (with `args`) with TMPDIR on a tmpfs of `size` over fx.dir. */
function runInFullTmpfs(env: Record<string, string>, { size = '1m', args = [] as string[] } = {}): Promise<CliResult> {
  const script =
    `mount -t tmpfs -o size=${size} tmpfs "$SPOOL_DIR"` + ` && TMPDIR="$SPOOL_DIR" exec "$NODE" "$BIN" run --json "$@"`;
  const child = spawn('unshare', ['-m', 'sh', '-c', script, 'sh', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      ...env,
      SPOOL_DIR: fx.dir,
      NODE: process.execPath,
      BIN: join(ROOT, 'bin', 'wine-recon-sync'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    }),
  );
}

describeWith(
  'mount in a private namespace (unshare -m, as root)',
  canMountTmpfs(),
  'local disk faults are not retried',
  () => {
    // A gzip listing is spooled twice: decoded, and as it arrived for the archive; either file may fill the disk.
    it.each([
      ['plain', null],
      ['gzip', 'gzip'],
    ] as const)(
      'a full spool directory fails the run at once (%s listing), naming the directory, with one login and one listing request',
      async (_label, coding) => {
        fx.sim.setContentCoding(coding);
        const r = await runInFullTmpfs(fx.envWith({ WINE_API_RETRIES: '5' }));
        expect(r.code, r.stderr).toBe(1);
        const run = JSON.parse(r.stdout);
        expect(run.status).toBe('failed');
        expect(run.error).toMatch(
          new RegExp(`^no space left in ${fx.dir} while spooling the listing \\(\\d+\\.\\d MB needed so far\\)`),
        );
        expect(r.stderr).not.toContain('retrying');
        expect(fx.sim.stats).toMatchObject({ logins: 1, listings: 1 });
        expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
      },
    );

    it("a full disk met by the run's other files (a first load's fingerprints) names the directory too", async () => {
      // Given with --from-file, the listing is not spooled: only the run's own files go to TMPDIR.
      const listing = join(tmpdir(), `wrs-local-disk-${process.pid}.json`);
      fx.onTeardown(() => rm(listing, { force: true }));
      const records = Array.from({ length: 20_000 }, (_, i) => recordText(3, i + 1, 1)).join(',');
      await writeFile(listing, `{"count":20000,"bulk_wine_reconciliation":[${records}],"recordCount":20000}`);
      const r = await runInFullTmpfs(fx.env, { size: '64k', args: ['--from-file', listing] });
      expect(r.code, r.stderr).toBe(1);
      const run = JSON.parse(r.stdout);
      expect(run.status).toBe('failed');
      expect(run.error).toBe(
        `no space left in ${fx.dir} for the run's temporary files` +
          `; set TMPDIR to a writable directory with room for them (ENOSPC)`,
      );
      expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
    });
  },
);

describeWith(
  'mount in a private namespace (unshare -m, as root)',
  canMountTmpfs(),
  'a write the disk takes only part of',
  () => {
    it('fails with ENOSPC instead of leaving a file short of bytes (AppendFile, as a first load sets fingerprints aside)', async () => {
      // One flush of 200 KB into a 64 KB filesystem: the first write takes what fits, and only the
      // retry of the rest is refused. Taking the first write's count as the end lost bytes silently.
      const script = `mount -t tmpfs -o size=64k tmpfs "$DIR" && exec "$NODE" --input-type=module -e '
      const { AppendFile } = await import(process.env.MODULE);
      const file = new AppendFile(process.env.DIR + "/set-aside");
      file.append(Buffer.alloc(200 * 1024, 120));
      try { await file.close(); console.log("closed"); } catch (error) { console.log(error.code); }'`;
      const r = spawnSync('unshare', ['-m', 'sh', '-c', script], {
        env: {
          PATH: process.env.PATH ?? '',
          DIR: fx.dir,
          NODE: process.execPath,
          MODULE: join(ROOT, 'dist', 'src', 'io', 'file-write.js'),
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stdout.trim(), r.stderr).toBe('ENOSPC');
    });
  },
);

it('a TMPDIR that is not a directory fails the run before any request, naming it', async () => {
  const notADir = join(fx.dir, 'file');
  await writeFile(notADir, 'x');
  const r = await runCli(['run', '--json'], { ...fx.env, TMPDIR: notADir });
  expect(r.code, r.stderr).toBe(1);
  expect(JSON.parse(r.stdout).error).toContain(`${notADir} is not a directory: cannot spool the listing there`);
  expect(fx.sim.stats).toMatchObject({ logins: 0, listings: 0, connections: 0 });
});
