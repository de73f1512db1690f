import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assessHealth, RUN_GRACE_MS, writeHealth, type Health } from '../../src/observe/health.js';
import { startMetricsServer, type MetricsServer } from '../../src/observe/metrics-server.js';
import { SyncMetrics } from '../../src/observe/metrics.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'wine-recon-sync');
const HOUR = 3_600_000;

function health(runStartedAgoMs: number | null, now = Date.now()): Health {
  return {
    pid: process.pid,
    state: runStartedAgoMs === null ? 'idle' : 'running',
    heartbeatAt: new Date(now).toISOString(),
    nextRunAt: null,
    lastRun: null,
    runStartedAt: runStartedAgoMs === null ? null : new Date(now - runStartedAgoMs).toISOString(),
    runTimeoutMs: 2 * HOUR,
  };
}

describe('health', () => {
  it('is unhealthy only while a run is older than SYNC_RUN_TIMEOUT_MS plus the grace period', () => {
    const now = Date.now();
    expect(assessHealth(health(null, now), now, true).healthy).toBe(true);
    expect(assessHealth(health(2 * HOUR, now), now, true).healthy).toBe(true);
    expect(assessHealth(health(2 * HOUR + RUN_GRACE_MS - 1000, now), now, true).healthy).toBe(true);
    const stuck = assessHealth(health(2 * HOUR + RUN_GRACE_MS + 1000, now), now, true);
    expect(stuck).toEqual({ healthy: false, reason: expect.stringContaining('beyond SYNC_RUN_TIMEOUT_MS=7200000') });
  });

  it('is unhealthy when the heartbeat is stale, unless the daemon judges itself', () => {
    const now = Date.now();
    const stale = { ...health(null, now - 5 * 60_000) };
    expect(assessHealth(stale, now, true).healthy).toBe(false);
    expect(assessHealth(stale, now, false).healthy).toBe(true);
  });

  describe('the healthcheck command and /healthz', () => {
    let dir: string;
    let server: MetricsServer;
    let current: Health;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'wrs-health-'));
      server = await startMetricsServer({
        host: '127.0.0.1',
        port: 0,
        metrics: new SyncMetrics({ processMetrics: false, trigger: 'schedule' }),
        health: () => assessHealth(current, Date.now(), false),
        onError: () => undefined,
      });
    });
    afterAll(async () => {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('report a stuck run: healthcheck exits 1, /healthz answers 503', async () => {
      const file = join(dir, 'health');
      current = health(3 * HOUR);
      await writeHealth(file, current);
      const check = spawnSync(process.execPath, [BIN, 'healthcheck'], {
        env: { PATH: process.env.PATH, SYNC_HEALTH_FILE: file },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(check.status).toBe(1);
      expect(check.stderr).toMatch(
        /^unhealthy: a run started 108\d\d s ago, beyond SYNC_RUN_TIMEOUT_MS=7200000 plus 60 s of grace/,
      );
      const stuck = await fetch(`${server.url}/healthz`);
      expect(stuck.status).toBe(503);
      expect(await stuck.json()).toMatchObject({ status: 'stuck' });

      current = health(HOUR);
      await writeHealth(file, current);
      const fine = spawnSync(process.execPath, [BIN, 'healthcheck'], {
        env: { PATH: process.env.PATH, SYNC_HEALTH_FILE: file },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(fine.status, fine.stderr).toBe(0);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    });
  });
});
