/**
 * `dbt-sources`: a dbt properties file for the relations of the one description (db/relations.ts).
 * Rule: the output depends on the description and the options only (no clock, no host name).
 */
import { Document, isPair, isScalar, isSeq, visit } from 'yaml';
import type { ColumnDescription, DatabaseDescription, RelationDescription } from '../db/relations.js';
import { quoteIdent } from '../db/pool.js';
import { ANALYST_DATA_RELATIONS } from '../db/relations.js';

/** The first line of every file this command writes: how it recognises a file it may overwrite. */
export const DBT_HEADER = '# Written by wine-recon-sync dbt-sources';

export type DbtForm = 'config' | 'legacy';

export interface DbtOptions {
  /** The BI source's name; the exact one is `<name>_exact`. */
  name: string;
  exact: boolean;
  form: DbtForm;
  warnAfterMs: number;
  errorAfterMs: number;
}

/**
 * Which table column a view column shows, row for row, for the views whose rows keep that
 * column's constraints (the current views keep one row per id; sync_freshness shows a sync_runs
 * status and trigger). The data tests of a view column come from its table column's key or CHECK.
 */
const SHOWN_AS: Record<string, string> = {
  'bi.reconciliation.id': 'bulk_wine_reconciliation.id',
  'bi.sync_freshness.last_run_status': 'sync_runs.status',
  'bi.sync_freshness.last_run_trigger': 'sync_runs.trigger',
  'bi.run_profiles.run_status': 'sync_runs.status',
  'bi.run_checks.run_status': 'sync_runs.status',
  'bi.run_checks.severity': 'sync_run_checks.severity',
  'data.bulk_wine_reconciliation_current.id': 'bulk_wine_reconciliation.id',
  'data.sync_runs_latest.status': 'sync_runs.status',
};

/** The relation whose column carries the time of the last successful load, per schema (dbt 1.9's loaded_at_field). */
const LOAD_TIME = {
  bi: { relation: 'sync_freshness', column: 'last_success_finished_at' },
  data: { relation: 'sync_last_load', column: 'finished_at' },
} as const;

export function dbtSources(description: DatabaseDescription, options: DbtOptions): string {
  const sources = [source(description, 'bi', options.name, options)];
  if (options.exact) sources.push(source(description, 'data', `${options.name}_exact`, options));
  const document = new Document({ version: 2, sources }, { aliasDuplicateObjects: false });
  // `{count: 25, period: hour}` and `values: [running, ...]` on one line, as dbt's own docs write them.
  visit(document, {
    Map: (_, node) => {
      if (
        node.items.length === 2 &&
        node.items.every((p) => isPair(p) && isScalar(p.key) && ['count', 'period'].includes(String(p.key.value)))
      )
        node.flow = true;
    },
    Pair: (_, pair) => {
      if (isScalar(pair.key) && pair.key.value === 'values' && isSeq(pair.value)) pair.value.flow = true;
    },
  });
  const body = document.toString({ lineWidth: 100, minContentWidth: 40 });
  const header = [
    `${DBT_HEADER} from the database's own description of its tables (columns, types, COMMENTs);`,
    `# regenerate it rather than edit it: wine-recon-sync dbt-sources --out FILE. Form: ` +
      `${options.form === 'config' ? 'dbt 1.10 and later (loaded_at_query)' : 'dbt 1.8 and 1.9 (loaded_at_field)'}.`,
  ];
  return `${header.join('\n')}\n${body}`;
}

type Yaml = Record<string, unknown>;

function source(description: DatabaseDescription, which: 'bi' | 'data', name: string, options: DbtOptions): Yaml {
  const schema = description.schemas[which];
  const relations =
    which === 'bi'
      ? description.bi
      : ANALYST_DATA_RELATIONS.flatMap((name) => description.data.filter((r) => r.name === name));
  const freshness = { warn_after: period(options.warnAfterMs), error_after: period(options.errorAfterMs) };
  const load = LOAD_TIME[which];
  const relation = `${quoteIdent(schema.name)}.${quoteIdent(load.relation)}`;
  const loadedAtQuery = `select max(${quoteIdent(load.column)}) from ${relation}`;
  const tables = relations.map((relation) => {
    const legacyFreshness =
      options.form === 'legacy' && relation.name === load.relation ? { freshness, loaded_at_field: load.column } : {};
    return {
      name: relation.name,
      ...(relation.description === null ? {} : { description: relation.description }),
      ...legacyFreshness,
      columns: relation.columns.map((column) => columnEntry(description, which, relation, column, options.form)),
    };
  });
  return {
    name,
    ...(schema.description === null ? {} : { description: schema.description }),
    schema: schema.name,
    loader: 'wine-recon-sync',
    // dbt-postgres quotes by default; said here so that a project's own quoting default cannot
    // turn these exact, lower-case names into something else.
    quoting: { schema: true, identifier: true },
    ...(options.form === 'config' ? { config: { freshness, loaded_at_query: loadedAtQuery } } : {}),
    tables,
  };
}

function columnEntry(
  description: DatabaseDescription,
  which: 'bi' | 'data',
  relation: RelationDescription,
  column: ColumnDescription,
  form: DbtForm,
): Yaml {
  const tests = dataTests(description, which, relation, column, form);
  return {
    name: column.name,
    ...(column.description === null ? {} : { description: column.description }),
    data_type: column.type,
    ...(column.needsQuoting ? { quote: true } : {}),
    ...(tests.length === 0 ? {} : { data_tests: tests }),
  };
}

/** A table's one-column primary key: unique and not_null; a CHECK's list of values: accepted_values. */
function dataTests(
  description: DatabaseDescription,
  which: 'bi' | 'data',
  relation: RelationDescription,
  column: ColumnDescription,
  form: DbtForm,
): unknown[] {
  const shown =
    relation.kind === 'table'
      ? `${relation.name}.${column.name}`
      : SHOWN_AS[`${which}.${relation.name}.${column.name}`];
  if (shown === undefined) return [];
  const [tableName, columnName] = shown.split('.') as [string, string];
  const table = description.data.find((r) => r.name === tableName && r.kind === 'table');
  const source = table?.columns.find((c) => c.name === columnName);
  if (table === undefined || source === undefined) return [];
  const tests: unknown[] = [];
  if (table.primaryKey?.length === 1 && table.primaryKey[0] === columnName) tests.push('unique', 'not_null');
  if (source.allowedValues !== null) {
    const values = { values: source.allowedValues };
    tests.push({ accepted_values: form === 'config' ? { arguments: values } : values });
  }
  return tests;
}

/** A length of time as dbt's `{count, period}`: whole days or hours when it is one, else minutes (rounded up). */
export function period(ms: number): { count: number; period: 'day' | 'hour' | 'minute' } {
  if (ms % 86_400_000 === 0) return { count: ms / 86_400_000, period: 'day' };
  if (ms % 3_600_000 === 0) return { count: ms / 3_600_000, period: 'hour' };
  return { count: Math.max(1, Math.ceil(ms / 60_000)), period: 'minute' };
}

/** `--dbt-version`: 1.10 and later take the config form, 1.8 and 1.9 the older one; undefined for anything else. */
export function formFor(version: string): DbtForm | undefined {
  const m = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(version.trim());
  if (m === null) return undefined;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major > 1 || (major === 1 && minor >= 10)) return 'config';
  if (major === 1 && minor >= 8) return 'legacy';
  return undefined;
}
