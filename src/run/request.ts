/**
 * What a sync run is asked to do and what it is given (SyncRequest, SyncDeps), shared by sync.ts,
 * which wraps a run with its lock and audit row, and run.ts, which does the run's work: neither
 * imports the other's module for them.
 */
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { WineApi } from '../extract/http/api.js';
import type { RetryOf, StartedRun, Trigger } from '../load/audit.js';
import type { Logger, SecretRegistry } from '../log.js';

export type SyncSource = { kind: 'api' } | { kind: 'file'; path: string } | { kind: 'replay'; runId: string };

export interface SyncRequest {
  source: SyncSource;
  trigger: Trigger;
  dryRun?: boolean;
  allowMassDelete?: boolean;
  /** Load even when a field the last successful run had is gone (the schema-drift guard). */
  acceptSchemaChange?: boolean;
  /** Error-level checks to let through for this run (run --accept-check NAME). */
  acceptChecks?: readonly string[];
  /** A retry's attempt number and the chain's first run (the daemon's retries); a first attempt otherwise. */
  retry?: RetryOf;
}

export interface SyncDeps {
  pool: Pool;
  log: Logger;
  /** Needed for API runs; the daemon keeps one so the token is reused between runs. */
  api?: WineApi;
  /** The secrets to censor in the error stored with the run (BI users read it); none in tests that have none. */
  secrets?: SecretRegistry;
  signal?: AbortSignal;
  tmpDir?: string;
  onProgress?: (progress: { received: number; bytes: number }) => void;
  /**
   * Called once the run's row is written `running`: its id, trigger, attempt and the chain it
   * retries, and the runs it has just marked abandoned.
   */
  onRunStarted?: (run: StartedRun, abandoned: number[]) => void;
}

/**
 * idle_in_transaction_session_timeout of the run's transactions: they wait idle while the listing
 * downloads, for up to SYNC_RUN_TIMEOUT_MS; a shorter server default would end them half way.
 * The grace covers the run's own abort path (deadline.ts). PostgreSQL takes at most 2^31-1 ms.
 */
export function idleTimeoutMs(config: Pick<Config, 'runTimeoutMs'>): number {
  return Math.min(config.runTimeoutMs + 60_000, 2_147_483_647);
}
