/**
 * The BI views (sql/bi/views.sql) depend on settings (SYNC_BI_SCHEMA, SYNC_BI_SCALE), so they are
 * installed at start-up, inside the migrate transaction and under its advisory lock: concurrent
 * starters wait, and the second finds them current. They are re-created only when the rendered
 * SQL differs from what sync_bi_views recorded, or when someone dropped them. They also show the
 * extra fields (sync_fields, bi-extra-fields.ts): a run that kept such fields
 * renders them again after it commits when they changed (refreshBiViews), under the same lock.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BiSettings } from '../config.js';
import { BI_PRECISION, KNOWN_FIELDS, biDecimalType, checkBiScale } from '../fields.js';
import { SQL_DIR } from '../io/paths.js';
import { extraFieldComment, extraFieldFragments, type BiShape, type ExtraFieldColumn } from './bi-extra-fields.js';
import { renderBiFieldLists } from './field-sql.js';
import { migrateLock } from './lock.js';
import { quoteIdent, withIdentifiers, type Pool, type PoolClient } from './pool.js';
import { fillPlaceholders, loadStatements } from './statements.js';

export const BI_VIEWS = [
  'reconciliation',
  'reconciliation_history',
  'sync_freshness',
  'run_profiles',
  'run_checks',
  'data_dictionary',
] as const;

const SQL = loadStatements('db/bi_views.sql', [
  'installed',
  'schema_exists',
  'create_schema',
  'views_present',
  'current_grants',
  'grant',
  'record_installed',
  'drop_views',
  'savepoint',
  'rollback_to_savepoint',
  'drop_schema',
  'extra_field_columns',
  'quote_literals',
]);
const FILE = 'sql/db/bi_views.sql';

/** The views template with the field catalogue's column lists rendered; the settings are filled per call. */
const TEMPLATE = renderBiFieldLists(readFileSync(join(SQL_DIR, 'bi', 'views.sql'), 'utf8'));

/** What the views' SQL is made of, besides the template: the settings, as they are substituted. */
function shapeOf(dataSchema: string, bi: BiSettings): BiShape {
  const scale = checkBiScale(bi.scale);
  return {
    scale,
    biType: biDecimalType(scale),
    limit: `1e${BI_PRECISION - scale}`,
    data: quoteIdent(dataSchema),
    dataName: dataSchema,
  };
}

/**
 * The views' SQL for these settings and extra fields' columns (with their quoted comments, two per
 * column). Only validated names (quoted), integers and PostgreSQL-quoted literals are substituted,
 * in one pass: nothing substituted is read as a placeholder.
 */
export function renderBiViews(
  dataSchema: string,
  bi: BiSettings,
  extraColumns: readonly ExtraFieldColumn[] = [],
  comments: readonly string[] = [],
): string {
  const shape = shapeOf(dataSchema, bi);
  return fillPlaceholders(
    TEMPLATE,
    {
      bi: quoteIdent(bi.schema),
      data: shape.data,
      bi_name: bi.schema.replaceAll("'", "''"),
      data_name: dataSchema.replaceAll("'", "''"),
      scale: String(shape.scale),
      bi_type: shape.biType,
      int_digits: String(BI_PRECISION - shape.scale),
      limit: shape.limit,
      ...extraFieldFragments(extraColumns, comments, shape, quoteIdent(bi.schema)),
    },
    'sql/bi/views.sql',
  );
}

/**
 * The views' SQL as the database's sync_fields has it: the extra fields' columns and their comments read and
 * quoted there.
 */
async function renderInstalled(client: PoolClient, dataSchema: string, bi: BiSettings): Promise<string> {
  const { rows } = await client.query<ExtraFieldColumn>(SQL.extra_field_columns, [KNOWN_FIELDS]);
  if (rows.length === 0) return renderBiViews(dataSchema, bi);
  const shape = shapeOf(dataSchema, bi);
  const texts = rows.flatMap((c) => [
    extraFieldComment(c, 'bulk_wine_reconciliation', shape),
    extraFieldComment(c, 'bulk_wine_reconciliation_history', shape),
  ]);
  const quoted = (await client.query<{ literal: string }>(SQL.quote_literals, [texts])).rows.map((r) => r.literal);
  return renderBiViews(dataSchema, bi, rows, quoted);
}

/**
 * After a run that kept extra fields: the views rendered again when sync_fields changed
 * them (a new column or type, or an earlier refresh that failed), in a transaction of their own
 * under the migrate lock; nothing is done when they are current. The run has committed by then:
 * if this fails, the views stay as they were (every cast in them is guarded) and the next start
 * or run renders them.
 */
export async function refreshBiViews(pool: Pool, dataSchema: string, bi: BiSettings): Promise<boolean> {
  return pool.transaction(async (client) => {
    await migrateLock(client, dataSchema);
    return installBiViews(client, dataSchema, bi);
  });
}

/** Creates or re-creates the BI views when needed; true when it did. Runs in the caller's transaction. */
export async function installBiViews(client: PoolClient, dataSchema: string, bi: BiSettings): Promise<boolean> {
  const sql = await renderInstalled(client, dataSchema, bi);
  const sha256 = createHash('sha256').update(sql).digest('hex');
  const { rows } = await client.query<{ bi_schema: string; definition_sha256: string }>(SQL.installed);
  const installed = rows[0];
  if (installed?.definition_sha256 === sha256 && (await viewsPresent(client, bi.schema))) return false;

  if (installed && installed.bi_schema !== bi.schema) await dropOldViews(client, installed.bi_schema, dataSchema);
  const exists = await client.query(SQL.schema_exists, [bi.schema]);
  if (exists.rowCount === 0) await client.query(withIdentifiers(SQL.create_schema, { schema: bi.schema }));
  const grants = await currentGrants(client, bi.schema);
  try {
    await client.query(sql);
  } catch (error) {
    throw new Error(`creating the BI views in schema "${bi.schema}" failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
  // Dropping a view drops its grants: give back what the read-only role (or anyone) had.
  for (const g of grants) {
    const grantee = g.grantee === null ? 'PUBLIC' : quoteIdent(g.grantee);
    await client.query(
      fillPlaceholders(
        SQL.grant,
        { privilege: g.privilege, schema: quoteIdent(bi.schema), view: quoteIdent(g.view), grantee },
        FILE,
      ),
    );
  }
  await client.query(SQL.record_installed, [bi.schema, bi.scale, sha256]);
  return true;
}

async function viewsPresent(client: PoolClient, schema: string): Promise<boolean> {
  const { rows } = await client.query<{ n: number }>(SQL.views_present, [schema, BI_VIEWS]);
  return rows[0]!.n === BI_VIEWS.length;
}

interface Grant {
  view: string;
  privilege: string;
  /** null: PUBLIC. */
  grantee: string | null;
}

async function currentGrants(client: PoolClient, schema: string): Promise<Grant[]> {
  const { rows } = await client.query<Grant>(SQL.current_grants, [schema, BI_VIEWS]);
  return rows;
}

/** SYNC_BI_SCHEMA changed: remove our views from the old schema, and the schema when nothing else is left in it. */
async function dropOldViews(client: PoolClient, oldSchema: string, dataSchema: string): Promise<void> {
  const exists = await client.query(SQL.schema_exists, [oldSchema]);
  if (exists.rowCount === 0 || oldSchema === dataSchema) return;
  await client.query(withIdentifiers(SQL.drop_views, { schema: oldSchema }));
  // The schema goes only when nothing else lives in it: a failed DROP is undone, not an error.
  await client.query(SQL.savepoint);
  try {
    await client.query(withIdentifiers(SQL.drop_schema, { schema: oldSchema }));
  } catch {
    await client.query(SQL.rollback_to_savepoint);
  }
}
