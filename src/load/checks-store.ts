/** The run checks' reads of the runs before, and their rows (sync_run_checks, sync_runs.accepted_checks). */
import { loadStatements } from '../db/statements.js';
import type { QueryResult, QueryResultRow } from 'pg';
import type { Logger } from '../log.js';
import type { FieldProfile, Queryable } from './profile.js';

const SQL = loadStatements('load/checks.sql', [
  'recent_received',
  'store_checks',
  'set_accepted',
  'runs_checks',
  'runs_profiles',
]);

/** One statement, its duration logged at debug as db/statements.ts timedQuery logs it (the bench reads these lines). */
export async function timed<R extends QueryResultRow>(
  db: Queryable,
  name: string,
  sql: string,
  params: unknown[],
  log?: Logger,
): Promise<QueryResult<R>> {
  const started = Date.now();
  const result = await db.query<R>(sql, params);
  log?.debug({ statement: name, rows: result.rowCount, ms: Date.now() - started }, 'statement done');
  return result;
}

/** One row of sync_run_checks. */
export interface StoredCheck {
  check_name: string;
  field: string | null;
  severity: 'warn' | 'error';
  passed: boolean;
  observed: string | null;
  expected: string | null;
  message: string;
}

/** Records received by the last `limit` successful runs that committed before `runId`, newest first. */
export async function recentReceived(db: Queryable, runId: string, limit: number, log?: Logger): Promise<number[]> {
  const { rows } = await timed<{ received: string }>(db, 'recent_received', SQL.recent_received, [runId, limit], log);
  return rows.map((r) => Number(r.received));
}

export async function storeChecks(
  db: Queryable,
  runId: string,
  checks: readonly StoredCheck[],
  log?: Logger,
): Promise<void> {
  if (checks.length === 0) return;
  await timed(db, 'store_checks', SQL.store_checks, [runId, JSON.stringify(checks)], log);
}

/** The checks a person let through for this run (run --accept-check). */
export async function setAcceptedChecks(db: Queryable, runId: string, names: readonly string[]): Promise<void> {
  await db.query(SQL.set_accepted, [runId, names.length === 0 ? null : names]);
}

/** The checks of these runs by run id, failed ones first. */
export async function checksOfRuns(db: Queryable, runIds: readonly string[]): Promise<Map<string, StoredCheck[]>> {
  const { rows } = await db.query<StoredCheck & { run_id: string }>(SQL.runs_checks, [runIds]);
  const out = new Map<string, StoredCheck[]>();
  for (const { run_id, ...check } of rows) out.set(run_id, [...(out.get(run_id) ?? []), check]);
  return out;
}

/** The profiles of these runs by run id. */
export async function profilesOfRuns(db: Queryable, runIds: readonly string[]): Promise<Map<string, FieldProfile[]>> {
  const { rows } = await db.query<FieldProfile & { run_id: string }>(SQL.runs_profiles, [runIds]);
  const out = new Map<string, FieldProfile[]>();
  for (const { run_id, ...profile } of rows) out.set(run_id, [...(out.get(run_id) ?? []), profile]);
  return out;
}
