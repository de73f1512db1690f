/**
 * Migrations are hand-written and the field catalogue (src/fields.ts) is code: this start-up check
 * (run by migrate() once the migrations are applied) fails fast, naming the field, when they
 * disagree, instead of a run failing later on a column that is missing or loading a decimal into
 * a column that rounds it.
 */
import { CatalogueMismatchError } from '../errors.js';
import { EXTRA_COLUMN, FIELDS, SQL_TYPE, type Field } from '../fields.js';
import type { PoolClient } from './pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('db/catalogue_check.sql', ['columns']);

/** The tables with one column per field: the live rows and the closed versions. */
export const FIELD_TABLES = ['bulk_wine_reconciliation', 'bulk_wine_reconciliation_closed_versions'] as const;

interface Column {
  table_name: string;
  column_name: string;
  type: string;
  not_null: boolean;
}

/** What is wrong with one field's column in one table, as a sentence; undefined when it agrees. */
export function columnProblem(field: Field, table: string, column: Column | undefined): string | undefined {
  if (column === undefined) return `${field.name} has no column in ${table} (add a migration)`;
  const expected = SQL_TYPE[field.kind];
  if (column.type !== expected)
    return (
      `${field.name} is ${column.type} in ${table}, but the catalogue's kind ${field.kind} needs ` +
      `${expected} (fix it with a migration)`
    );
  if (field.required && !column.not_null)
    return `${field.name} may be NULL in ${table}, but the catalogue says it is required (add NOT NULL in a migration)`;
  // A record may lack an optional field: a NOT NULL column would fail the run's load.
  if (!field.required && column.not_null)
    return (
      `${field.name} is NOT NULL in ${table}, but the catalogue says it is optional (drop NOT NULL in ` + `a migration)`
    );
  return undefined;
}

/** Throws CatalogueMismatchError naming every field whose column disagrees with its catalogue entry. */
export async function checkFieldCatalogue(client: PoolClient, schema: string): Promise<void> {
  const { rows } = await client.query<Column>(SQL.columns, [schema, FIELD_TABLES]);
  const byName = new Map(rows.map((c) => [`${c.table_name}.${c.column_name}`, c]));
  const problems: string[] = [];
  for (const table of FIELD_TABLES) {
    for (const field of FIELDS) {
      const problem = columnProblem(field, table, byName.get(`${table}.${field.name}`));
      if (problem !== undefined) problems.push(problem);
    }
    // Beside the catalogue: a record's fields it does not know (sql/migrations/0009).
    const extra = byName.get(`${table}.${EXTRA_COLUMN}`);
    if (extra?.type !== 'jsonb')
      problems.push(
        `${EXTRA_COLUMN} is ${extra === undefined ? 'missing' : extra.type} in ${table}, but must be jsonb ` +
          `(add a migration)`,
      );
  }
  if (problems.length > 0) throw new CatalogueMismatchError(problems);
}
