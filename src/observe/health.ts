/**
 * The daemon's health, shared by `healthcheck` (reading the heartbeat file) and `/healthz`
 * (answered by the daemon itself). Unhealthy: the heartbeat is stale or its process gone, or a run
 * has outlived SYNC_RUN_TIMEOUT_MS by more than a grace period, i.e. even its own time limit
 * could not stop it.
 */
import { rename, writeFile } from 'node:fs/promises';

/** A heartbeat older than this means the daemon is stuck or gone. */
const STALE_MS = 60_000;
/** Time the timeout's abort path (request abort, statement cancel, rollback) gets to finish. */
export const RUN_GRACE_MS = 60_000;

export interface Health {
  pid: number;
  state: 'idle' | 'running' | 'stopping';
  heartbeatAt: string;
  nextRunAt: string | null;
  lastRun: { id: number; status: string; finishedAt: string | null } | null;
  /** The last successful load (sync_last_load: dry runs excluded), read from the database at start and after each run. */
  lastSuccess?: { id: number; finishedAt: string } | null;
  /** When the current run started; null while idle. */
  runStartedAt: string | null;
  runTimeoutMs: number;
}

export interface Verdict {
  healthy: boolean;
  reason: string;
}

/** `heartbeat`: also judge the heartbeat's age (false for the daemon judging itself). */
export function assessHealth(health: Health, nowMs: number, heartbeat: boolean): Verdict {
  if (heartbeat) {
    const age = nowMs - Date.parse(health.heartbeatAt);
    if (!(age <= STALE_MS)) return { healthy: false, reason: `last heartbeat ${Math.round(age / 1000)} s ago from pid ${health.pid}` };
  }
  if (health.runStartedAt !== null) {
    const runMs = nowMs - Date.parse(health.runStartedAt);
    if (runMs > health.runTimeoutMs + RUN_GRACE_MS) {
      return {
        healthy: false,
        reason: `a run started ${Math.round(runMs / 1000)} s ago, beyond SYNC_RUN_TIMEOUT_MS=${health.runTimeoutMs} plus ${RUN_GRACE_MS / 1000} s of grace: it is stuck`,
      };
    }
  }
  const last = health.lastRun ? `${health.lastRun.id} ${health.lastRun.status}` : 'none';
  const load = health.lastSuccess ? `run ${health.lastSuccess.id} at ${health.lastSuccess.finishedAt}` : health.lastSuccess === null ? 'none' : 'unknown';
  return { healthy: true, reason: `${health.state}, next run ${health.nextRunAt ?? 'none'}, last run ${last}, last successful load ${load}` };
}

export async function writeHealth(path: string, health: Health): Promise<void> {
  // Write then rename, so a reader never sees half a file.
  await writeFile(`${path}.tmp`, JSON.stringify(health));
  await rename(`${path}.tmp`, path);
}
