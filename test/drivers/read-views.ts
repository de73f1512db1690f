/** The JSON that test/drivers/read_views.py prints, and how the tests read it. */
import { join } from 'node:path';
import { runProgram } from '../support/drivers.js';
import { ROOT, type TestDb } from '../support/harness.js';
import { BI_DECIMALS, connectionParts } from './hard-values.js';

type Cell = string | null | { decimal: string };
export interface DriverResult {
  columns: Array<{ name: string; type: string; precision: number | null; scale: number | null }>;
  rows: Cell[][];
}
export interface DriverOutput {
  views: Record<'reconciliation' | 'reconciliation_history' | 'sync_freshness', DriverResult>;
  remarks: Record<string, Record<string, string | null | Array<string | null>>>;
  exact?: DriverResult;
  dictionary: { columns: DriverResult['columns']; rows: Array<Array<string | null>> };
}

/** Runs read_views.py with `python` through `driver` against the test schema and its BI views. */
export async function readViews(python: string, driver: 'odbc' | 'psycopg2', db: TestDb): Promise<DriverOutput> {
  const c = connectionParts(db.url);
  const stdout = await runProgram(
    python,
    [join(ROOT, 'test', 'drivers', 'read_views.py'), driver, `${db.schema}_bi`, db.schema],
    {
      PGHOST: c.host,
      PGPORT: c.port,
      PGDATABASE: c.database,
      PGUSER: c.user,
      PGPASSWORD: c.password,
    },
  );
  return JSON.parse(stdout) as DriverOutput;
}

/**
 * id -> the decimal columns (and overflow_columns, when present) as exact text. A decimal cell must
 * have arrived as a Decimal: a float or text there would fail the comparison.
 */
export function decimalsById(
  result: DriverResult,
  withVersion = false,
  decimals: readonly string[] = BI_DECIMALS,
): Record<string, Record<string, string | null>> {
  const index = (name: string) => result.columns.findIndex((c) => c.name === name);
  const out: Record<string, Record<string, string | null>> = {};
  for (const row of result.rows) {
    const cell = (name: string) => row[index(name)] ?? null;
    const values: Record<string, string | null> = {};
    for (const name of decimals) {
      const v = cell(name);
      values[name] = v === null ? null : typeof v === 'object' ? v.decimal : `not a Decimal: ${v}`;
    }
    if (index('overflow_columns') >= 0) values.overflow_columns = cell('overflow_columns') as string | null;
    const id = String(cell('id'));
    out[withVersion ? `${id}@${String(cell('valid_from'))}` : id] = values;
  }
  return out;
}
