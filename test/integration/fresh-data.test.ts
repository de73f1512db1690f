/**
 * Freshness means fresh data: a dry run after a real one changes no "last successful load",
 * wherever it is read (sync_last_load, sync_runs_latest, the BI sync_freshness view, the metric
 * on the daemon's real /metrics endpoint, /healthz and healthcheck).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { freePort } from '../support/global-setup.js';
import { createTestDb, runCli, startCli, syncEnv, tempDir, type TestDb } from '../support/harness.js';

let sim: Simulator;
let db: TestDb;
let env: Record<string, string>;
let real: { id: number; finished_at: string };
let dry: { id: number; finished_at: string; dry_run: boolean };

beforeAll(async () => {
  sim = await startSimulator({ records: 20 });
  db = await createTestDb('fresh_data');
  env = syncEnv(db, sim);
  const first = await runCli(['run', '--json'], env);
  expect(first.code, first.stderr).toBe(0);
  real = JSON.parse(first.stdout);
  sim.mutate({ change: 5 });
  const second = await runCli(['run', '--dry-run', '--json'], env);
  expect(second.code, second.stderr).toBe(0);
  dry = JSON.parse(second.stdout);
  expect(dry).toMatchObject({ status: 'succeeded', dry_run: true });
  expect(dry.id).toBeGreaterThan(real.id);
});
afterAll(async () => {
  await sim.close();
  await db.close();
});

describe('a dry run after a real one', () => {
  it('is not the last successful load in sync_last_load or sync_runs_latest (the README freshness query)', async () => {
    expect(await db.rows('SELECT run_id::int, finished_at FROM sync_last_load')).toEqual([{ run_id: real.id, finished_at: new Date(real.finished_at) }]);
    expect(await db.rows("SELECT run_id::int, dry_run FROM sync_runs_latest WHERE status = 'succeeded'")).toEqual([{ run_id: real.id, dry_run: false }]);
    const [age] = await db.rows<{ seconds: number }>("SELECT extract(epoch FROM age)::float8 AS seconds FROM sync_runs_latest WHERE status = 'succeeded'");
    expect(age!.seconds).toBeGreaterThanOrEqual((Date.now() - Date.parse(dry.finished_at)) / 1000);
  });

  it('is not the last success of the BI sync_freshness view, which still shows it as the last run', async () => {
    expect(await db.rows(`SELECT last_success_run_id::int, last_run_id::int FROM "${db.schema}_bi".sync_freshness`)).toEqual([
      { last_success_run_id: real.id, last_run_id: dry.id },
    ]);
  });

  it('is not the last success of the metric on /metrics, of /healthz, or of healthcheck', async () => {
    const port = await freePort();
    const healthFile = join(await tempDir(), 'health');
    // A schedule that does not fire during the test: what the daemon reports comes from sync_runs.
    const daemon = startCli(['schedule'], { ...env, SYNC_SCHEDULE: '0 0 1 1 *', SYNC_METRICS_PORT: String(port), SYNC_HEALTH_FILE: healthFile });
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
