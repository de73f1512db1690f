/**
 * Freshness means fresh data: a dry run after a real one changes no "last successful load",
 * wherever it is read (sync_last_load, sync_runs_latest, the BI sync_freshness view, the metric
 * on the daemon's real /metrics endpoint, /healthz and healthcheck).
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli } from '../support/harness.js';

const fx = useSyncFixture('fresh_data', { simulator: { records: 20 } });
let real: { id: number; finished_at: string };
let dry: { id: number; finished_at: string; dry_run: boolean };

beforeAll(async () => {
  const first = await runCli(['run', '--json'], fx.env);
  expect(first.code, first.stderr).toBe(0);
  real = JSON.parse(first.stdout);
  fx.sim.mutate({ change: 5 });
  const second = await runCli(['run', '--dry-run', '--json'], fx.env);
  expect(second.code, second.stderr).toBe(0);
  dry = JSON.parse(second.stdout);
  expect(dry).toMatchObject({ status: 'succeeded', dry_run: true });
  expect(dry.id).toBeGreaterThan(real.id);
});

describe('a dry run after a real one', () => {
  it('is not the last successful load in sync_last_load or sync_runs_latest (the README freshness query)', async () => {
    expect(await fx.db.rows('SELECT run_id::int, finished_at FROM sync_last_load')).toEqual([
      { run_id: real.id, finished_at: new Date(real.finished_at) },
    ]);
    expect(await fx.db.rows("SELECT run_id::int, dry_run FROM sync_runs_latest WHERE status = 'succeeded'")).toEqual([
      { run_id: real.id, dry_run: false },
    ]);
    const [age] = await fx.db.rows<{ seconds: number }>(
      "SELECT extract(epoch FROM age)::float8 AS seconds FROM sync_runs_latest WHERE status = 'succeeded'",
    );
    expect(age!.seconds).toBeGreaterThanOrEqual((Date.now() - Date.parse(dry.finished_at)) / 1000);
  });

  it('is not the last success of the BI sync_freshness view, which still shows it as the last run', async () => {
    expect(
      await fx.db.rows(`SELECT last_success_run_id::int, last_run_id::int FROM "${fx.db.schema}_bi".sync_freshness`),
    ).toEqual([{ last_success_run_id: real.id, last_run_id: dry.id }]);
  });

  it('is not the last success of the metric on /metrics, of /healthz, or of healthcheck', async () => {
    const port = await freePort();
    const healthFile = join(fx.dir, 'health');
    // A schedule that does not fire during the test: what the daemon reports comes from sync_runs.
    const daemon = startCli(['schedule'], {
      ...fx.env,
      SYNC_SCHEDULE: '0 0 1 1 *',
      SYNC_METRICS_PORT: String(port),
      SYNC_HEALTH_FILE: healthFile,
    });
    try {
      await daemon.waitForLog(/daemon started/);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const line = metrics.split('\n').find((l) => l.startsWith('wine_recon_sync_last_success_timestamp_seconds '));
      expect(Number(line!.split(' ')[1])).toBeCloseTo(Date.parse(real.finished_at) / 1000, 3);
      const healthz = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { detail: string };
      expect(healthz.detail).toContain(`last successful load run ${real.id} at ${real.finished_at}`);
      const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: healthFile });
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toContain(`last successful load run ${real.id} at ${real.finished_at}`);
    } finally {
      daemon.kill('SIGTERM');
      expect((await daemon.result).code).toBe(0);
    }
  });
});
