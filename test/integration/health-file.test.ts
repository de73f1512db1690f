/**
 * The heartbeat file cannot be planted or forged by another local user: the default lives in a
 * private directory (0700), it is written without following symbolic links, and `healthcheck`
 * trusts neither another user's file, nor a symbolic link, nor a pid it cannot signal.
 */
import { spawnSync } from 'node:child_process';
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeHealth, type Health } from '../../src/observe/health.js';
import { ROOT, runCli, tempDir as newTempDir } from '../support/harness.js';
import { describeWith } from '../support/programs.js';

const fresh = (pid = process.pid): Health => ({
  pid,
  state: 'idle',
  heartbeatAt: new Date().toISOString(),
  nextRunAt: null,
  lastRun: null,
  runStartedAt: null,
  runTimeoutMs: 7_200_000,
});
const NOBODY = 65534;
const made: string[] = [];
const tempDir = async () => {
  const dir = await newTempDir();
  made.push(dir);
  return dir;
};
afterAll(() => Promise.all(made.map((d) => rm(d, { recursive: true, force: true }))));
const isRoot = process.getuid?.() === 0;

const hasRunuser = isRoot && spawnSync('runuser', ['-u', 'nobody', '--', 'true']).status === 0;

describe('writing the heartbeat', () => {
  it('makes the private directory 0700 and the file 0600, and healthcheck reads it', async () => {
    const dir = join(await tempDir(), 'wine-recon-sync-x');
    expect(await writeHealth('unused', fresh(), [dir])).toBe(join(dir, 'health'));
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, 'health'))).mode & 0o777).toBe(0o600);
    const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: join(dir, 'health') });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/^healthy: idle/);
  });

  it('refuses a private directory that is open to others or a symbolic link, naming SYNC_HEALTH_FILE', async () => {
    const base = await tempDir();
    const open = join(base, 'open');
    await mkdir(open, { mode: 0o777 });
    await chmod(open, 0o777);
    await expect(writeHealth('unused', fresh(), [open])).rejects.toThrow(
      /^no private directory of this user's \(mode 0700\) for the heartbeat: .*open is open to other users \(mode 777\); remove the one another user made, or set SYNC_HEALTH_FILE/,
    );
    const linked = join(base, 'linked');
    await mkdir(join(base, 'elsewhere'), { mode: 0o700 });
    await symlink(join(base, 'elsewhere'), linked);
    await expect(writeHealth('unused', fresh(), [linked])).rejects.toThrow(/linked is not a directory/);
    expect(spawnSync('ls', ['-A', join(base, 'elsewhere')]).stdout.toString()).toBe('');
  });

  it('never writes through a symbolic link planted at the file or at its temporary name', async () => {
    const dir = await tempDir();
    const victim = join(dir, 'victim');
    await writeFile(victim, 'precious');
    await symlink(victim, join(dir, 'health.tmp'));
    await symlink(victim, join(dir, 'health'));
    await writeHealth(join(dir, 'health'), fresh());
    expect(await readFile(victim, 'utf8')).toBe('precious');
    expect((await lstat(join(dir, 'health'))).isFile()).toBe(true);
    expect(JSON.parse(await readFile(join(dir, 'health'), 'utf8'))).toMatchObject({ pid: process.pid });
  });
});

describe('default directories that another user made first, or that cannot be made', () => {
  // As root: really another user's (nobody's). Otherwise: one open to every user, refused alike.
  const squat = async (dir: string) => {
    await mkdir(dir, { mode: 0o777 });
    await chmod(dir, 0o777);
    if (isRoot) await chown(dir, NOBODY, NOBODY);
  };

  it('when no directory will do, the daemon says why and names SYNC_HEALTH_FILE', async () => {
    const base = await tempDir();
    const squatted = join(base, 'wine-recon-sync-x');
    await squat(squatted);
    await writeFile(join(base, 'not-a-dir'), '');
    await expect(
      writeHealth('unused', fresh(), [squatted, join(base, 'not-a-dir', 'wine-recon-sync')]),
    ).rejects.toThrow(
      /^no private directory of this user's \(mode 0700\) for the heartbeat: .*wine-recon-sync-x (belongs to uid 65534, another user, who may have made it first|is open to other users \(mode 777\)); .*not-a-dir\/wine-recon-sync cannot be made \(ENOTDIR\); remove the one another user made, or set SYNC_HEALTH_FILE/,
    );
  });
});

describe('healthcheck', () => {
  it('does not trust a heartbeat reached through a symbolic link', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'forged'), JSON.stringify(fresh()));
    await symlink(join(dir, 'forged'), join(dir, 'health'));
    const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: join(dir, 'health') });
    expect(check.code).toBe(1);
    expect(check.stderr).toBe(
      `unhealthy: ${join(dir, 'health')} is a symbolic link: not trusted as the daemon's heartbeat\n`,
    );
  });

  describeWith(
    'root, to make a file of another user (nobody) and run healthcheck as that user (runuser)',
    hasRunuser,
    'against another user',
    () => {
      it("does not trust another user's heartbeat file", async () => {
        const dir = await tempDir();
        const file = join(dir, 'health');
        await writeFile(file, JSON.stringify(fresh()));
        await chown(file, NOBODY, NOBODY);
        const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: file });
        expect(check.code).toBe(1);
        expect(check.stderr).toBe(
          `unhealthy: ${file} belongs to uid ${NOBODY}, not to this user (uid 0)` +
            `: not trusted; run healthcheck as the daemon's user\n`,
        );
      });

      it("does not trust a heartbeat naming a pid it cannot signal (EPERM: another user's process)", async () => {
        // nobody's own file, forged to name this (root's) process: alive, but not nobody's daemon.
        const dir = await mkdtemp(join(tmpdir(), 'wrs-nobody-'));
        made.push(dir);
        await chmod(dir, 0o755);
        const file = join(dir, 'health');
        await writeFile(file, JSON.stringify(fresh(process.pid)));
        await chown(file, NOBODY, NOBODY);
        const asNobody = (command: string, args: string[], env: Record<string, string> = {}) =>
          spawnSync('runuser', ['-u', 'nobody', '--', command, ...args], {
            env: { PATH: process.env.PATH ?? '', ...env },
            encoding: 'utf8',
          });
        // The whole command, when nobody can read this checkout and run this Node.js (a CI runner may
        // keep either under root's home).
        const bin = join(ROOT, 'bin', 'wine-recon-sync');
        if (
          asNobody(process.execPath, [
            '-e',
            `require('fs').accessSync(${JSON.stringify(bin)}, require('fs').constants.R_OK)`,
          ]).status === 0
        ) {
          const r = asNobody(process.execPath, [bin, 'healthcheck'], { SYNC_HEALTH_FILE: file });
          expect(r.status).toBe(1);
          expect(r.stderr).toBe(
            `unhealthy: process ${process.pid} is another user's (EPERM)` +
              `: not this daemon; run healthcheck as the daemon's user\n`,
          );
        } else {
          console.warn(
            '*** the EPERM check runs the rule (observe/health.js) as nobody, not the whole command: nobody cannot read this checkout or run this Node.js ***',
          );
        }
        // The rule itself, whatever the checkout's permissions: health.js imports Node.js's modules only.
        const copy = join(dir, 'health.mjs');
        await writeFile(copy, await readFile(join(ROOT, 'dist', 'src', 'observe', 'health.js')));
        await chmod(copy, 0o644);
        const node = [process.execPath, '/usr/bin/node'].find((n) => asNobody(n, ['--version']).status === 0);
        expect(node, 'a Node.js binary that nobody can run').toBeDefined();
        const rule = asNobody(node!, [
          '--input-type=module',
          '-e',
          `const h = await import(${JSON.stringify(copy)}); console.log(h.processState(${process.pid}))`,
        ]);
        expect(rule.stdout.trim(), rule.stderr).toBe('foreign');
      });
    },
  );
});
