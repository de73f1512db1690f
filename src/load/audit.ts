/** sync_runs and sync_rejects: the audit trail, written on the pool outside the data transaction. */
import type { Pool } from '../db/pool.js';
import type { FieldCounts } from '../fields.js';
import type { BiRounding } from './bi-rounding.js';
import { loadStatements } from '../db/statements.js';

const SQL = loadStatements('load/audit.sql', [
  'mark_abandoned',
  'start_run',
  'finish_run',
  'record_progress',
  'insert_rejects',
  'delete_rejects',
  'prune_rejects',
  'recent_runs',
  'schema_baseline',
  'run_totals',
  'last_success',
  'latest_finished',
  'set_retry_at',
  'latest_daemon_run_since',
]);

/** What started a run; the daemon's are schedule, run-now, catch-up, retry and page. */
export type Trigger = 'schedule' | 'manual' | 'replay' | 'file' | 'demo' | 'run-now' | 'catch-up' | 'retry' | 'page';
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'aborted' | 'abandoned';

/** The record counts that the metrics (label `kind`: contract) and the notifications report. */
export const RECORD_KINDS = [
  'received',
  'rejected',
  'duplicates',
  'inserted',
  'updated',
  'unchanged',
  'deleted',
  'restored',
] as const;
export const COUNT_COLUMNS = [
  'reported_count',
  'reported_record_count',
  ...RECORD_KINDS,
  'bytes',
  'skipped_unchanged',
  'kept_on_reject',
  'backfilled',
] as const;
export type CountColumn = (typeof COUNT_COLUMNS)[number];
export type RunCounts = Partial<Record<CountColumn, number | string | null>>;

export interface RunRow extends Record<CountColumn, number | null> {
  id: number;
  trigger: Trigger;
  status: RunStatus;
  dry_run: boolean;
  started_at: string;
  finished_at: string | null;
  error: string | null;
  unknown_fields: string[] | null;
  field_counts: FieldCounts | null;
  app_version: string;
  source: string | null;
  /** 1 for a first attempt; n for the (n-1)th retry of a chain. */
  attempt: number;
  /** For a retry: the chain's first recorded attempt. */
  retry_of: number | null;
  /** For a failed run of the daemon: when it will be tried again (ISO); null when it will not. */
  retry_at: string | null;
}

/** A retry's place in its chain: its attempt number and the chain's first recorded run. */
export interface RetryOf {
  attempt: number;
  retryOf: number | null;
}

/** The run row as written at its start. */
export interface StartedRun {
  id: string;
  trigger: Trigger;
  attempt: number;
  retryOf: number | null;
  startedAt: string;
}

export interface Reject {
  position: number | string;
  recordId: string | null;
  errors: Array<{ path: string; message: string }>;
  raw: string;
}

/** Raw text kept for an earlier copy of a duplicate id, read back from the spooled listing. */
export const MAX_DUPLICATE_RAW_BYTES = 65_536;

/** The reject of an earlier copy of an id: the last copy in the listing wins (docs/data-safety.md). */
export function duplicateIdReject(position: number | string, id: string, raw: string): Reject {
  return {
    position,
    recordId: id,
    errors: [{ path: 'id', message: `duplicate id ${id}: a later record in the listing has the same id and wins` }],
    raw,
  };
}

export async function markAbandoned(pool: Pool): Promise<number[]> {
  const { rows } = await pool.query<{ id: string }>(SQL.mark_abandoned);
  return rows.map((r) => Number(r.id));
}

export async function startRun(
  pool: Pool,
  run: { trigger: Trigger; dryRun: boolean; appVersion: string; source: string | null; retry?: RetryOf },
): Promise<StartedRun> {
  const attempt = run.retry?.attempt ?? 1;
  const retryOf = run.retry?.retryOf ?? null;
  const { rows } = await pool.query<{ id: string; started_at: Date }>(SQL.start_run, [
    run.trigger,
    run.dryRun,
    run.appVersion,
    run.source,
    attempt,
    retryOf,
  ]);
  return { id: rows[0]!.id, trigger: run.trigger, attempt, retryOf, startedAt: rows[0]!.started_at.toISOString() };
}

/** A running run's records and bytes so far (status page); a failure only leaves them older. */
export async function recordProgress(
  pool: Pool,
  runId: string,
  progress: { received: number; bytes: number },
): Promise<void> {
  await pool.query(SQL.record_progress, [runId, progress.received, progress.bytes]);
}

export async function finishRun(
  pool: Pool,
  runId: string,
  outcome: {
    status: RunStatus;
    error: string | null;
    counts: RunCounts;
    unknownFields: string[] | null;
    fieldCounts?: FieldCounts | null;
    bi?: BiRounding | undefined;
    /** Each phase's wall time (run/phase-timer.ts); null when none ran. */
    phases?: ReadonlyArray<{ phase: string; ms: number }> | null;
  },
): Promise<RunRow> {
  const c = outcome.counts;
  const { rows } = await pool.query(SQL.finish_run, [
    runId,
    outcome.status,
    outcome.error === null ? null : clean(outcome.error),
    ...COUNT_COLUMNS.map((k) => c[k] ?? null),
    outcome.unknownFields?.map(cleanName) ?? null,
    outcome.fieldCounts == null ? null : JSON.stringify(cleanCounts(outcome.fieldCounts)),
    outcome.bi?.scale ?? null,
    outcome.bi?.rounded ?? null,
    outcome.bi?.overflow ?? null,
    outcome.phases == null ? null : JSON.stringify(outcome.phases),
  ]);
  return toRunRow(rows[0]);
}

const STATUS_SQL = loadStatements('load/status.sql', ['run_by_id']);

/** One run, every column (for `status --run ID`); undefined when there is no such run. */
export async function findRun(pool: Pool, id: string): Promise<RunRow | undefined> {
  const { rows } = await pool.query(STATUS_SQL.run_by_id, [id]);
  return rows[0] === undefined ? undefined : toRunRow(rows[0]);
}

export async function recentRuns(pool: Pool, limit: number): Promise<RunRow[]> {
  const { rows } = await pool.query(SQL.recent_runs, [limit]);
  return rows.map(toRunRow);
}

export interface LastSuccess {
  id: string;
  field_counts: FieldCounts | null;
  unknown_fields: string[] | null;
  bi_scale: number | null;
  /** bigint columns: text from pg. */
  bi_rounded: string | null;
  bi_overflow: string | null;
  /** Live rows after that run: its valid, distinct records. */
  live_after: string | null;
}

/** The last successful non-dry run, for the schema-drift guard; undefined before the first. */
export async function lastSuccess(pool: Pool): Promise<LastSuccess | undefined> {
  const { rows } = await pool.query<LastSuccess>(SQL.schema_baseline);
  return rows[0];
}

/** Removes a run's rejects: they came from a download attempt that failed part way. */
export async function deleteRejects(pool: Pool, runId: string): Promise<void> {
  await pool.query(SQL.delete_rejects, [runId]);
}

/**
 * Removes the rejects of every run but the newest `keep` (SYNC_REJECTS_KEEP); returns how many
 * rows went. Called once a run's row is finished, whatever its outcome: rejects are written
 * outside the run's transaction so that a failed run keeps them, and failed runs (up to 10,000
 * rejects of up to 64 kB each, night after night) are the ones that would otherwise pile up.
 */
export async function pruneRejects(pool: Pool, keep: number): Promise<number> {
  const { rowCount } = await pool.query(SQL.prune_rejects, [keep]);
  return rowCount ?? 0;
}

/** One insert carries rejects of at most this many characters of raw text (at least one reject). */
const INSERT_CHARS = 4 * 1024 * 1024;

/**
 * Stores rejects, in inserts of at most INSERT_CHARS of raw text each: the parse hands over a
 * thousand or a few (run/pipeline.ts), the duplicates pass every earlier copy of an id at once,
 * each of up to 64 kB.
 */
export async function insertRejects(pool: Pool, runId: string, rejects: readonly Reject[]): Promise<void> {
  for (let from = 0; from < rejects.length;) {
    let to = from;
    for (let chars = 0; to < rejects.length && (to === from || chars + rejects[to]!.raw.length <= INSERT_CHARS); to++)
      chars += rejects[to]!.raw.length;
    const rows = rejects.slice(from, to).map((r) => ({
      position: String(r.position),
      record_id: r.recordId === null ? null : cleanText(r.recordId),
      errors: r.errors.map((e) => ({ path: cleanText(e.path), message: cleanText(e.message) })),
      raw: cleanText(r.raw),
    }));
    await pool.query(SQL.insert_rejects, [runId, JSON.stringify(rows)]);
    from = to;
  }
}

/** PostgreSQL text and jsonb cannot hold NUL; show it escaped instead of failing the audit write. */
function clean(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\\u0000') : text;
}

/**
 * Text for a JSON parameter: NUL escaped (clean), and an unpaired surrogate as U+FFFD, as a text
 * parameter reached PostgreSQL (JSON.stringify would write it as a \uD800 escape, which json
 * refuses to turn into text).
 */
function cleanText(text: string): string {
  const cleaned = clean(text);
  return LONE_SURROGATE.test(cleaned) ? cleaned.replace(LONE_SURROGATES, '\uFFFD') : cleaned;
}
const LONE_SURROGATE = /\p{Surrogate}/u;
const LONE_SURROGATES = /\p{Surrogate}/gu;

/** Field names come from the upstream: jsonb refuses NUL and unpaired surrogates, text NUL. */
function cleanName(name: string): string {
  return cleanText(name);
}

function cleanCounts(counts: FieldCounts): FieldCounts {
  const unknown: Record<string, number> = Object.create(null);
  for (const [name, count] of Object.entries(counts.unknown))
    unknown[cleanName(name)] = (unknown[cleanName(name)] ?? 0) + count;
  return { ...counts, unknown };
}

/** bigint counts arrive as text; they are counts, far below 2^53, so numbers are exact here. */
function toRunRow(row: Record<string, unknown>): RunRow {
  const out: Record<string, unknown> = {
    ...row,
    id: Number(row.id),
    attempt: Number(row.attempt ?? 1),
    retry_of: row.retry_of == null ? null : Number(row.retry_of),
  };
  for (const k of [...COUNT_COLUMNS, 'bi_rounded', 'bi_overflow'])
    out[k] = row[k] === null || row[k] === undefined ? null : Number(row[k]);
  for (const k of ['started_at', 'finished_at', 'retry_at'] as const) {
    const v = row[k];
    out[k] = v instanceof Date ? v.toISOString() : (v ?? null);
  }
  return out as unknown as RunRow;
}

/** The daemon's plan for failed run `id`: when it will be tried again, or null (never). */
export async function setRetryAt(pool: Pool, id: number, at: Date | null): Promise<void> {
  await pool.query(SQL.set_retry_at, [id, at]);
}

/** The newest run the daemon started at or after `since` (catch-up at start). */
export async function latestDaemonRunSince(
  pool: Pool,
  since: Date,
): Promise<{ latest: RunRow; succeededSince: boolean } | undefined> {
  const { rows } = await pool.query(SQL.latest_daemon_run_since, [since]);
  const row = rows[0] as Record<string, unknown> | undefined;
  if (row === undefined) return undefined;
  const { succeeded_since, ...run } = row;
  return { latest: toRunRow(run), succeededSince: succeeded_since === true };
}

/** What the metrics start from: per status and trigger, how many runs finished and when the last one did. */
export interface RunHistory {
  totals: Array<{ status: RunStatus; trigger: Trigger; runs: number; lastFinished: number | null }>;
  /** Unix seconds of the newest successful non-dry run; null when there is none. */
  lastSuccess: number | null;
  /** That run (sync_last_load); null when there is none. */
  lastLoad: LastLoad | null;
  latest: RunRow | undefined;
}

export async function runHistory(pool: Pool): Promise<RunHistory> {
  const totals = await pool.query<{ status: RunStatus; trigger: Trigger; runs: number; last_finished: number | null }>(
    SQL.run_totals,
  );
  const load = await lastLoad(pool);
  return {
    totals: totals.rows.map((r) => ({
      status: r.status,
      trigger: r.trigger,
      runs: r.runs,
      lastFinished: r.last_finished,
    })),
    lastSuccess: load ? Date.parse(load.finishedAt) / 1000 : null,
    lastLoad: load ?? null,
    latest: await latestFinishedBefore(pool, Number.MAX_SAFE_INTEGER),
  };
}

/** The last successful load: a succeeded run that committed data (view sync_last_load, dry runs excluded). */
export interface LastLoad {
  id: number;
  finishedAt: string;
}

/** The one reader of sync_last_load in the program: metrics, the daemon's health and its healthcheck use it. */
export async function lastLoad(pool: Pool): Promise<LastLoad | undefined> {
  const { rows } = await pool.query<{ id: string; finished_at: Date }>(SQL.last_success);
  const row = rows[0];
  return row === undefined ? undefined : { id: Number(row.id), finishedAt: row.finished_at.toISOString() };
}

/** The newest finished run before run `id` (for "recovered": the run before a success failed). */
export async function latestFinishedBefore(pool: Pool, id: number): Promise<RunRow | undefined> {
  const { rows } = await pool.query(SQL.latest_finished, [id]);
  return rows[0] === undefined ? undefined : toRunRow(rows[0]);
}
