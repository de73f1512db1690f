/**
 * `healthcheck` (which reads the heartbeat file) agrees with `/healthz` (answered by the daemon)
 * right after a run ends, not up to 15 s later: the file is rewritten when a run starts and ends.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { freePort } from '../support/global-setup.js';
import { createTestDb, runCli, startCli, syncEnv, tempDir, type TestDb } from '../support/harness.js';

let sim: Simulator;
let db: TestDb;

beforeAll(async () => {
  sim = await startSimulator({ records: 20 });
  db = await createTestDb('daemon_health');
});
afterAll(async () => {
  await sim.close();
  await db.close();
});

describe('healthcheck after schedule --run-now', () => {
  it('reports the run that just finished, as /healthz does', async () => {
    const port = await freePort();
    const healthFile = join(await tempDir(), 'health');
    const daemon = startCli(['schedule', '--run-now'], {
      ...syncEnv(db, sim),
      SYNC_SCHEDULE: '0 0 1 1 *',
      SYNC_METRICS_PORT: String(port),
      SYNC_HEALTH_FILE: healthFile,
    });
    try {
      // Logged once the run is over and its outcome is in the daemon's health.
      await daemon.waitForLog(/next sync scheduled/);
      const ended = Date.now();
      const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: healthFile });
      const healthz = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { status: string; detail: string };
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toMatch(/^healthy: idle, next run \S+, last run 1 succeeded, last successful load run 1 at \S+\n$/);
      expect(healthz).toEqual({ status: 'ok', detail: check.stdout.slice('healthy: '.length).trim() });
      // Well within the 15 s heartbeat period: the file was rewritten when the run ended.
      expect(Date.now() - ended).toBeLessThan(5_000);
    } finally {
      daemon.kill('SIGTERM');
      expect((await daemon.result).code).toBe(0);
    }
    expect(await db.rows('SELECT id::int, status FROM sync_runs')).toEqual([{ id: 1, status: 'succeeded' }]);
  });
});
