/**
 * Named SQL statements from the files under sql/ (sections start with `-- name: <name>`). The field
 * catalogue's column lists ({{data_columns}} and the like, see field-sql.ts) are rendered into them
 * as they load; any other `{{name}}` is left for the caller to fill (fillPlaceholders).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { QueryResult, QueryResultRow } from 'pg';
import type { PoolClient } from './pool.js';
import type { Logger } from '../log.js';
import { SQL_DIR } from '../io/paths.js';
import { renderFieldLists } from './field-sql.js';

/** `file` is relative to sql/, e.g. `load/apply.sql`. */
export function loadStatements<const N extends string>(file: string, names: readonly N[]): Record<N, string> {
  const text = readFileSync(join(SQL_DIR, file), 'utf8');
  const found = new Map<string, string>();
  for (const section of text.split(/^-- name: /m).slice(1)) {
    const newline = section.indexOf('\n');
    const name = section.slice(0, newline).trim();
    found.set(
      name,
      renderFieldLists(
        section
          .slice(newline + 1)
          .trim()
          .replace(/;$/, ''),
      ),
    );
  }
  const out = {} as Record<N, string>;
  for (const name of names) {
    const sql = found.get(name);
    if (sql === undefined) throw new Error(`sql/${file} has no statement "-- name: ${name}"`);
    out[name] = sql;
  }
  return out;
}

/**
 * Fills `{{name}}` placeholders with `values` (already quoted or escaped by the caller: identifiers
 * with quoteIdent, integers as digits). An unknown placeholder is an error naming `where`.
 */
export function fillPlaceholders(sql: string, values: Readonly<Record<string, string>>, where: string): string {
  return sql.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!Object.hasOwn(values, name)) throw new Error(`${where}: unknown placeholder {{${name}}}`);
    return values[name]!;
  });
}

/** Runs one named statement and logs its duration at debug: the benchmark reads these lines. */
export async function timedQuery<R extends QueryResultRow>(
  client: PoolClient,
  name: string,
  sql: string,
  params?: unknown[],
  log?: Logger,
): Promise<QueryResult<R>> {
  const started = Date.now();
  const result = await client.query<R>(sql, params);
  log?.debug({ statement: name, rows: result.rowCount, ms: Date.now() - started }, 'statement done');
  return result;
}
