/**
 * The one description of the relations the job owns, read from the connected database: columns in
 * the database's order, their types, nullability, keys and the COMMENTs the migrations and the BI
 * views put on them. `schema --json`, `dbt-sources` and the lineage schema facets are all built
 * from it (src/describe/), so they cannot disagree with each other or with the tables.
 */
import { BI_VIEWS } from './bi-views.js';
import type { Pool } from './pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('db/relations.sql', ['relations', 'columns', 'constraints', 'database']);

/** Every table and view the migrations create in SYNC_DB_SCHEMA (a test holds this list to a migrated schema). */
export const DATA_RELATIONS = [
  'bulk_wine_reconciliation',
  'bulk_wine_reconciliation_closed_versions',
  'bulk_wine_reconciliation_current',
  'bulk_wine_reconciliation_history',
  'bulk_wine_reconciliation_source_hash',
  'bulk_wine_reconciliation_source_hash_state',
  'bulk_wine_reconciliation_source_shape',
  'sync_bi_views',
  'sync_fields',
  'sync_last_load',
  'sync_migrations',
  'sync_payload_chunks',
  'sync_payloads',
  'sync_rejects',
  'sync_run_checks',
  'sync_run_profiles',
  'sync_runs',
  'sync_runs_latest',
] as const;

/** The exact tables and views an analyst reads (the rest is the job's own bookkeeping). */
export const ANALYST_DATA_RELATIONS = [
  'bulk_wine_reconciliation',
  'bulk_wine_reconciliation_current',
  'bulk_wine_reconciliation_history',
  'sync_runs',
  'sync_runs_latest',
  'sync_last_load',
  'sync_rejects',
  'sync_fields',
  'sync_run_profiles',
  'sync_run_checks',
] as const;

export interface ColumnDescription {
  name: string;
  /** 1-based, in the database's order. */
  position: number;
  /** As PostgreSQL declares it (format_type), e.g. `numeric(28,10)`, `text[]`. */
  type: string;
  /** The type's own name (pg_type.typname), e.g. `numeric`, `_text`; its element's for an array. */
  baseType: string;
  elementType: string | null;
  /** As declared: a view's columns are always nullable to PostgreSQL. */
  nullable: boolean;
  description: string | null;
  /** The name must be double-quoted in SQL (a keyword, or not plain lower case). */
  needsQuoting: boolean;
  /** The values a one-column CHECK allows (`col IN (...)`), when there is one. */
  allowedValues: string[] | null;
}

export interface ForeignKey {
  columns: string[];
  references: { schema: string; relation: string; columns: string[] };
}

export interface RelationDescription {
  schema: string;
  name: string;
  kind: 'table' | 'view';
  description: string | null;
  columns: ColumnDescription[];
  primaryKey: string[] | null;
  uniqueKeys: string[][];
  foreignKeys: ForeignKey[];
}

export interface DatabaseDescription {
  database: string;
  /** The two schemas and their COMMENTs. */
  schemas: { data: { name: string; description: string | null }; bi: { name: string; description: string | null } };
  /** SYNC_DB_SCHEMA's relations (DATA_RELATIONS found there), by name. */
  data: RelationDescription[];
  /** SYNC_BI_SCHEMA's views (BI_VIEWS found there), by name. */
  bi: RelationDescription[];
}

/** Reads the job's relations in both schemas; a relation missing from the database is left out. */
export async function describeDatabase(
  pool: Pool,
  schemas: { data: string; bi: string },
): Promise<DatabaseDescription> {
  const names = [...DATA_RELATIONS, ...BI_VIEWS];
  const wanted = (schema: string, name: string) =>
    schema === schemas.data
      ? (DATA_RELATIONS as readonly string[]).includes(name)
      : (BI_VIEWS as readonly string[]).includes(name);
  const params = [[schemas.data, schemas.bi], names];
  // One transaction: one snapshot, so a run re-creating the views in between cannot mix two versions.
  const { relations, columns, constraints, database } = await pool.transaction(
    async (client) => ({
      relations: await client.query<{
        schema: string;
        name: string;
        kind: 'table' | 'view';
        description: string | null;
      }>(SQL.relations, params),
      columns: await client.query<ColumnRow>(SQL.columns, params),
      constraints: await client.query<ConstraintRow>(SQL.constraints, params),
      database: await client.query<{ name: string; data_description: string | null; bi_description: string | null }>(
        SQL.database,
        [schemas.data, schemas.bi],
      ),
    }),
    { mode: 'ISOLATION LEVEL REPEATABLE READ READ ONLY' },
  );
  const key = (schema: string, name: string) => `${schema}.${name}`;
  const byRelation = new Map<string, RelationDescription>();
  for (const r of relations.rows) {
    if (!wanted(r.schema, r.name)) continue;
    byRelation.set(key(r.schema, r.name), { ...r, columns: [], primaryKey: null, uniqueKeys: [], foreignKeys: [] });
  }
  const checks = new Map<string, string[]>();
  for (const k of constraints.rows) {
    const relation = byRelation.get(key(k.schema, k.relation));
    if (relation === undefined) continue;
    if (k.kind === 'p') relation.primaryKey = k.columns;
    else if (k.kind === 'u') relation.uniqueKeys.push(k.columns);
    else if (k.kind === 'f')
      relation.foreignKeys.push({
        columns: k.columns,
        references: { schema: k.ref_schema!, relation: k.ref_relation!, columns: k.ref_columns },
      });
    else if (k.columns.length === 1) {
      const values = allowedValues(k.definition);
      if (values !== null) checks.set(key(key(k.schema, k.relation), k.columns[0]!), values);
    }
  }
  for (const c of columns.rows) {
    const relation = byRelation.get(key(c.schema, c.relation));
    if (relation === undefined) continue;
    relation.columns.push({
      name: c.name,
      position: c.position,
      type: c.type,
      baseType: c.base_type,
      elementType: c.element_type,
      nullable: c.nullable,
      description: c.description,
      needsQuoting: c.needs_quoting,
      allowedValues: checks.get(key(key(c.schema, c.relation), c.name)) ?? null,
    });
  }
  // In the lists' order (the BI views as an analyst meets them), not the catalogue's.
  const inSchema = (schema: string, order: readonly string[]) =>
    [...byRelation.values()]
      .filter((r) => r.schema === schema)
      .sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  const { name, data_description, bi_description } = database.rows[0]!;
  return {
    database: name,
    schemas: {
      data: { name: schemas.data, description: data_description },
      bi: { name: schemas.bi, description: bi_description },
    },
    data: inSchema(schemas.data, DATA_RELATIONS),
    bi: inSchema(schemas.bi, BI_VIEWS),
  };
}

/**
 * The list of a CHECK written `col IN ('a', 'b')`, as pg_get_constraintdef prints it:
 * `CHECK ((status = ANY (ARRAY['a'::text, 'b'::text])))`; null for any other CHECK.
 */
export function allowedValues(definition: string): string[] | null {
  const m = /^CHECK \(\(\w+ = ANY \(ARRAY\[(.*)\]\)\)\)$/.exec(definition);
  if (m === null) return null;
  const items = [...m[1]!.matchAll(/'((?:[^']|'')*)'::(?:text|character varying)/g)];
  // Anything else in the list (a cast, an expression) is not a plain list of values.
  if (items.length === 0 || items.map((i) => i[0]).join(', ') !== m[1]) return null;
  return items.map((i) => i[1]!.replaceAll("''", "'"));
}

interface ColumnRow {
  schema: string;
  relation: string;
  name: string;
  position: number;
  type: string;
  base_type: string;
  element_type: string | null;
  nullable: boolean;
  description: string | null;
  needs_quoting: boolean;
}

interface ConstraintRow {
  schema: string;
  relation: string;
  name: string;
  kind: 'p' | 'u' | 'f' | 'c';
  columns: string[];
  ref_schema: string | null;
  ref_relation: string | null;
  ref_columns: string[];
  definition: string;
}
