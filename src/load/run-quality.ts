/**
 * What a finished run's checks found and what its profile says (sync_run_checks and
 * sync_run_profiles, written by the run): read by run id for the metrics and the OpenLineage
 * events. Every number stays the exact text the database gives.
 */
import type { Pool } from '../db/pool.js';
import { loadStatements } from '../db/statements.js';

const SQL = loadStatements('load/run_quality.sql', ['checks', 'profiles']);

export interface RunCheck {
  runId: string;
  check: string;
  field: string | null;
  severity: 'warn' | 'error';
  passed: boolean;
  observed: string | null;
  expected: string | null;
  message: string;
}

export interface RunProfileField {
  runId: string;
  field: string;
  rowCount: string;
  nullCount: string;
  /** The exact sum, for a numeric field; null for the others. */
  total: string | null;
  minValue: string | null;
  maxValue: string | null;
}

/** The checks of these runs: per run, failed first, errors before warnings, then by name. */
export async function runChecks(pool: Pool, runIds: readonly (number | string)[]): Promise<RunCheck[]> {
  if (runIds.length === 0) return [];
  const { rows } = await pool.query<Record<string, unknown>>(SQL.checks, [runIds.map(String)]);
  return rows.map((r) => ({
    runId: r.run_id as string,
    check: r.check_name as string,
    field: r.field as string | null,
    severity: r.severity as 'warn' | 'error',
    passed: r.passed as boolean,
    observed: r.observed as string | null,
    expected: r.expected as string | null,
    message: r.message as string,
  }));
}

/** The profiles of these runs, by run and field. */
export async function runProfiles(pool: Pool, runIds: readonly (number | string)[]): Promise<RunProfileField[]> {
  if (runIds.length === 0) return [];
  const { rows } = await pool.query<Record<string, string | null>>(SQL.profiles, [runIds.map(String)]);
  return rows.map((r) => ({
    runId: r.run_id!,
    field: r.field!,
    rowCount: r.row_count!,
    nullCount: r.null_count!,
    total: r.total ?? null,
    minValue: r.min_value ?? null,
    maxValue: r.max_value ?? null,
  }));
}
