/**
 * One sync run: the run lock (db/lock.ts: a transaction of its own, held from before the run's
 * row is written until after it is finished), the audit row written `running` first and finished
 * whatever happens, the deadline (SYNC_RUN_TIMEOUT_MS), and rollback on failure. The run's own
 * work, in named phases and in ONE transaction on a connection of its own, is in run.ts.
 */
import type { Config } from '../config.js';
import { RunLock } from '../db/lock.js';
import type { PoolClient } from '../db/pool.js';
import { AbortedError, LockHeldError, describeError } from '../errors.js';
import {
  finishRun,
  markAbandoned,
  pruneRejects,
  recordProgress,
  startRun,
  type RunRow,
  type RunStatus,
} from '../load/audit.js';
import type { BiRounding } from '../load/bi-rounding.js';
import { checkListingFile, checkReplaySource } from '../load/listing-source.js';
import { APP_VERSION } from '../io/paths.js';
import { runDeadline } from './deadline.js';
import { idleTimeoutMs, type SyncDeps, type SyncRequest, type SyncSource } from './request.js';
import { Run } from './run.js';
import { checkRuleFields } from './run-checks.js';
import type { CheckResult } from '../checks/evaluate.js';
import { setAcceptedChecks } from '../load/checks-store.js';

export type { SyncDeps, SyncRequest, SyncSource } from './request.js';

export interface SyncOutcome {
  run: RunRow;
  /** Most frequent reject reasons, for the human summary. */
  topReasons: Array<{ reason: string; count: number }>;
  /** Unknown fields the last successful run did not see (for the summary and notifications). */
  newFields: Array<{ name: string; count: number }>;
  /** What the BI views round or leave NULL, after a successful run. */
  bi?: BiRounding;
  /** Every check of the run (sync_run_checks), and those that failed but let it commit. */
  checks: CheckResult[];
  warnedChecks: CheckResult[];
  /** What made the run fail (the daemon decides from it whether to try again); undefined when it succeeded. */
  failure?: unknown;
}

export async function runSync(config: Config, deps: SyncDeps, request: SyncRequest): Promise<SyncOutcome> {
  const { pool } = deps;
  const lock = await RunLock.acquire(pool, config.schema, idleTimeoutMs(config));
  if (!lock) throw new LockHeldError(`another sync holds the lock for schema "${config.schema}"; this run was skipped`);
  let client: PoolClient | undefined;
  let broken = false;
  try {
    // The run's own connection, for its one transaction; the lock's is another.
    client = await pool.connect();
    // Only the lock's holder gets here, and a run finishes its row before it lets the lock go.
    const abandoned = await markAbandoned(pool);
    if (abandoned.length > 0)
      deps.log.warn({ runs: abandoned }, 'marked runs left running by a dead process as abandoned');
    const source = await describeSource(deps, request.source);
    await checkRuleFields(pool, config);
    const started = await startRun(pool, {
      trigger: request.trigger,
      dryRun: request.dryRun === true,
      appVersion: APP_VERSION,
      source,
      retry: request.retry,
    });
    const runId = started.id;
    if (request.acceptChecks && request.acceptChecks.length > 0)
      await setAcceptedChecks(pool, runId, request.acceptChecks);
    const log = deps.log.child({ runId: Number(runId) });
    log.info(
      {
        trigger: request.trigger,
        attempt: started.attempt,
        retryOf: started.retryOf,
        dryRun: request.dryRun === true,
        source,
      },
      'sync started',
    );
    // The one place where a run is known to have started, with its row: whoever watches runs hears it here.
    deps.onRunStarted?.(started, abandoned);
    const startedMs = Date.now();
    const deadline = runDeadline(deps.signal ?? new AbortController().signal, config.runTimeoutMs);
    const { signal } = deadline;
    const onProgress = progressRecorder(deps, runId);
    const run = new Run(config, { ...deps, log, signal, onProgress }, request, runId, client, lock);
    let status: RunStatus = 'succeeded';
    let error: string | null = null;
    let failure: unknown;
    try {
      await run.execute();
    } catch (caught) {
      failure = deadline.expired ? signal.reason : caught;
      status = !deadline.expired && (signal.aborted || caught instanceof AbortedError) ? 'aborted' : 'failed';
      error = deadline.expired
        ? describeError(signal.reason)
        : status === 'aborted'
          ? new AbortedError().message
          : describeError(caught);
      broken = !(await rollback(client));
      log.error({ err: deadline.expired ? signal.reason : caught }, `sync ${status}`);
    } finally {
      deadline.clear();
    }
    // A dry run's or a refused run's profile and checks: what it would have committed.
    if (!broken)
      await run.checks
        .storeOutside(pool, failure, request.dryRun === true)
        .catch((e: unknown) =>
          log.warn({ err: e }, `the run's profile and checks were not stored: ${(e as Error).message}`),
        );
    const row = await finishRun(pool, runId, {
      status,
      error: error === null ? null : (deps.secrets?.scrub(error) ?? error),
      counts: run.counts(status),
      unknownFields: run.unknownFields(),
      fieldCounts: run.fieldCounts(),
      bi: status === 'succeeded' ? run.bi : undefined,
      phases: run.phases.toJSON(),
    });
    log.info({ status, ms: Date.now() - startedMs, ...pickCounts(row) }, 'sync finished');
    // After the row is finished (whatever the outcome): a failure to prune does not change the run's.
    await pruneRejects(pool, config.rejectsKeep).catch((e: unknown) =>
      log.warn({ err: e }, `older rejects were not pruned (the next run will): ${(e as Error).message}`),
    );
    return {
      run: row,
      topReasons: run.topReasons(),
      newFields: run.newFields(),
      bi: status === 'succeeded' ? run.bi : undefined,
      checks: run.checks.results(),
      warnedChecks: status === 'succeeded' ? run.checks.warned() : [],
      failure,
    };
  } finally {
    // A connection in an unknown state is closed, not reused.
    client?.release(broken ? new Error('discarding connection after a failed rollback') : undefined);
    await lock.release();
  }
}

/** Checked before the run row is written: an unreadable file or a run without a payload records no run (exit 2). */
async function describeSource(deps: SyncDeps, source: SyncSource): Promise<string> {
  if (source.kind === 'file') return checkListingFile(source.path);
  if (source.kind === 'api') return deps.api?.listingUrl ?? 'api';
  const payload = await checkReplaySource(deps.pool, source.runId);
  return `replay of run ${payload.runId} (sha256 ${payload.sha256})`;
}

async function rollback(client: PoolClient): Promise<boolean> {
  try {
    await client.query('ROLLBACK');
    return true;
  } catch {
    return false;
  }
}

function pickCounts(row: RunRow): Record<string, number | null> {
  const { received, rejected, duplicates, inserted, updated, unchanged, deleted, restored } = row;
  return { received, rejected, duplicates, inserted, updated, unchanged, deleted, restored };
}

/** How often a running run writes its records and bytes so far to its row. */
const PROGRESS_EVERY_MS = 1000;

/**
 * The caller's progress callback, and the run's row kept up to date with the same numbers (for
 * the status page of `serve`, which only reads the database): the first report at once, then at
 * most one write a second, never two at a time, never waited for.
 */
function progressRecorder(deps: SyncDeps, runId: string): (progress: { received: number; bytes: number }) => void {
  let lastAt = 0;
  let writing = false;
  return (progress) => {
    deps.onProgress?.(progress);
    const now = Date.now();
    if (writing || now - lastAt < PROGRESS_EVERY_MS) return;
    lastAt = now;
    writing = true;
    // Progress is advisory: one write at a time, a failed one skipped; the run's end writes the final counts.
    void recordProgress(deps.pool, runId, progress)
      .catch(() => undefined)
      .finally(() => (writing = false));
  };
}
