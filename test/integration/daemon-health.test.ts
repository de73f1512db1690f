/**
 * `healthcheck` (which reads the heartbeat file) agrees with `/healthz` (answered by the daemon)
 * right after a run ends, not up to 15 s later: the file is rewritten when a run starts and ends.
 */
import { chmod, chown, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli } from '../support/harness.js';

const fx = useSyncFixture('daemon_health', { simulator: { records: 20 } });

describe('healthcheck after schedule --run-now', () => {
  it('reports the run that just finished, as /healthz does', async () => {
    const port = await freePort();
    const healthFile = join(fx.dir, 'health');
    const daemon = startCli(['schedule', '--run-now'], {
      ...fx.env,
      SYNC_SCHEDULE: '0 0 1 1 *',
      SYNC_METRICS_PORT: String(port),
      SYNC_HEALTH_FILE: healthFile,
    });
    try {
      // Logged once the run is over and its outcome is in the daemon's health.
      await daemon.waitForLog(/next sync scheduled/);
      const ended = Date.now();
      const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: healthFile });
      const healthz = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as {
        status: string;
        detail: string;
      };
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toMatch(
        /^healthy: idle, next run \S+, last run 1 succeeded, last successful load run 1 at \S+\n$/,
      );
      expect(healthz).toEqual({ status: 'ok', detail: check.stdout.slice('healthy: '.length).trim() });
      // Well within the 15 s heartbeat period: the file was rewritten when the run ended.
      expect(Date.now() - ended).toBeLessThan(5_000);
    } finally {
      daemon.kill('SIGTERM');
      expect((await daemon.result).code).toBe(0);
    }
    expect(await fx.db.rows('SELECT id::int, status FROM sync_runs')).toEqual([{ id: 1, status: 'succeeded' }]);
  });
});

describe('the default health file', () => {
  it('lives in a private directory of its own under TMPDIR, made 0700, where healthcheck finds it', async () => {
    const daemon = startCli(['schedule', '--run-now'], { ...fx.env, SYNC_SCHEDULE: '0 0 1 1 *', TMPDIR: fx.dir });
    const dir = join(fx.dir, `wine-recon-sync-${process.getuid?.() ?? 'user'}`);
    try {
      await daemon.waitForLog(/next sync scheduled/);
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      expect((await stat(join(dir, 'health'))).mode & 0o777).toBe(0o600);
      const check = await runCli(['healthcheck'], { TMPDIR: fx.dir });
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toMatch(/^healthy: idle/);
    } finally {
      daemon.kill('SIGTERM');
      expect((await daemon.result).code).toBe(0);
    }
  });
});

describe('a default health directory that another user made first in TMPDIR', () => {
  it('is left alone: the daemon writes its heartbeat under the cache directory, and healthcheck finds it there', async () => {
    const tmp = join(fx.dir, 'shared-tmp');
    const squatted = join(tmp, `wine-recon-sync-${process.getuid?.() ?? 'user'}`);
    await mkdir(squatted, { mode: 0o777, recursive: true });
    await chmod(squatted, 0o777);
    // As root: really another user's (nobody's). Otherwise one open to every user, refused alike.
    if (process.getuid?.() === 0) await chown(squatted, 65534, 65534);
    const env = { TMPDIR: tmp, XDG_CACHE_HOME: join(fx.dir, 'cache') };
    const fallback = join(fx.dir, 'cache', 'wine-recon-sync');
    const daemon = startCli(['schedule', '--run-now'], { ...fx.env, ...env, SYNC_SCHEDULE: '0 0 1 1 *' });
    try {
      await daemon.waitForLog(/next sync scheduled/);
      expect((await stat(fallback)).mode & 0o777).toBe(0o700);
      expect((await stat(join(fallback, 'health'))).mode & 0o777).toBe(0o600);
      const check = await runCli(['healthcheck'], env);
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toMatch(/^healthy: idle, next run \S+, last run \d+ succeeded/);
      expect(await readdir(squatted)).toEqual([]);
    } finally {
      daemon.kill('SIGTERM');
      expect((await daemon.result).code).toBe(0);
    }
  });
});
