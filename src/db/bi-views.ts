/**
 * The BI views (sql/bi/views.sql) depend on settings (SYNC_BI_SCHEMA, SYNC_BI_SCALE), so they are
 * installed at start-up, inside the migrate transaction and under its advisory lock: concurrent
 * starters wait, and the second finds them current. They are re-created only when the rendered
 * SQL differs from what sync_bi_views recorded, or when someone dropped them.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BiSettings } from '../config.js';
import { SQL_DIR } from '../paths.js';
import { quoteIdent, type PoolClient } from './pool.js';

/** Total digits of every BI decimal: what .NET's System.Decimal (Npgsql, Power BI) always holds. */
export const BI_PRECISION = 28;
export const BI_VIEWS = ['reconciliation', 'reconciliation_history', 'sync_freshness', 'data_dictionary'] as const;

const TEMPLATE = readFileSync(join(SQL_DIR, 'bi', 'views.sql'), 'utf8');

/** The views' SQL for these settings. Only validated names (quoted) and integers are substituted. */
export function renderBiViews(dataSchema: string, bi: BiSettings): string {
  const scale = bi.scale;
  if (!Number.isInteger(scale) || scale < 0 || scale > 20) throw new RangeError(`BI scale must be 0..20, got ${scale}`);
  const values: Record<string, string> = {
    bi: quoteIdent(bi.schema),
    data: quoteIdent(dataSchema),
    bi_name: bi.schema.replaceAll("'", "''"),
    data_name: dataSchema.replaceAll("'", "''"),
    scale: String(scale),
    int_digits: String(BI_PRECISION - scale),
    limit: `1e${BI_PRECISION - scale}`,
  };
  return TEMPLATE.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`sql/bi/views.sql: unknown placeholder {{${name}}}`);
    return value;
  });
}

/** Creates or re-creates the BI views when needed; true when it did. Runs in the caller's transaction. */
export async function installBiViews(client: PoolClient, dataSchema: string, bi: BiSettings): Promise<boolean> {
  const sql = renderBiViews(dataSchema, bi);
  const sha256 = createHash('sha256').update(sql).digest('hex');
  const { rows } = await client.query<{ bi_schema: string; definition_sha256: string }>('SELECT bi_schema, definition_sha256 FROM sync_bi_views');
  const installed = rows[0];
  if (installed?.definition_sha256 === sha256 && (await viewsPresent(client, bi.schema))) return false;

  if (installed && installed.bi_schema !== bi.schema) await dropOldViews(client, installed.bi_schema, dataSchema);
  // Checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the database.
  const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [bi.schema]);
  if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoteIdent(bi.schema)}`);
  const grants = await currentGrants(client, bi.schema);
  try {
    await client.query(sql);
  } catch (error) {
    throw new Error(`creating the BI views in schema "${bi.schema}" failed: ${(error as Error).message}`, { cause: error });
  }
  // Dropping a view drops its grants: give back what the read-only role (or anyone) had.
  for (const g of grants) {
    await client.query(`GRANT ${g.privilege} ON ${quoteIdent(bi.schema)}.${quoteIdent(g.view)} TO ${g.grantee === null ? 'PUBLIC' : quoteIdent(g.grantee)}`);
  }
  await client.query(
    `INSERT INTO sync_bi_views (bi_schema, scale, definition_sha256) VALUES ($1, $2, $3)
     ON CONFLICT (singleton) DO UPDATE SET bi_schema = excluded.bi_schema, scale = excluded.scale,
       definition_sha256 = excluded.definition_sha256, installed_at = now()`,
    [bi.schema, bi.scale, sha256],
  );
  return true;
}

async function viewsPresent(client: PoolClient, schema: string): Promise<boolean> {
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relkind = 'v' AND c.relname = ANY($2)`,
    [schema, BI_VIEWS],
  );
  return rows[0]!.n === BI_VIEWS.length;
}

interface Grant {
  view: string;
  privilege: string;
  /** null: PUBLIC. */
  grantee: string | null;
}

async function currentGrants(client: PoolClient, schema: string): Promise<Grant[]> {
  const { rows } = await client.query<Grant>(
    `SELECT c.relname AS view, a.privilege_type AS privilege, r.rolname AS grantee
     FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace
     CROSS JOIN LATERAL aclexplode(c.relacl) a
     LEFT JOIN pg_roles r ON r.oid = a.grantee
     WHERE n.nspname = $1 AND c.relname = ANY($2) AND a.grantee <> c.relowner`,
    [schema, BI_VIEWS],
  );
  return rows;
}

/** SYNC_BI_SCHEMA changed: remove our views from the old schema, and the schema when nothing else is left in it. */
async function dropOldViews(client: PoolClient, oldSchema: string, dataSchema: string): Promise<void> {
  const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [oldSchema]);
  if (exists.rowCount === 0 || oldSchema === dataSchema) return;
  const q = quoteIdent(oldSchema);
  await client.query(`DROP VIEW IF EXISTS ${BI_VIEWS.map((v) => `${q}.${quoteIdent(v)}`).join(', ')}`);
  // RESTRICT: the schema goes only when nothing else lives in it.
  await client.query('SAVEPOINT drop_old_bi_schema');
  try {
    await client.query(`DROP SCHEMA ${q}`);
  } catch {
    await client.query('ROLLBACK TO SAVEPOINT drop_old_bi_schema');
  }
}
