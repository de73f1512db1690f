/**
 * Applies sql/migrations/NNNN_name.sql in order, each once, in one transaction under an
 * advisory lock, so concurrent migrators (two daemons starting together) wait for each other.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BiSettings } from '../config.js';
import { SQL_DIR } from '../paths.js';
import { installBiViews } from './bi-views.js';
import { MIGRATE_LOCK_SQL } from './lock.js';
import { inTransaction, quoteIdent, type Pool } from './pool.js';

export interface Migration {
  version: number;
  name: string;
  file: string;
}

const MIGRATIONS_DIR = join(SQL_DIR, 'migrations');

export async function listMigrations(): Promise<Migration[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return files.map((file) => ({ version: Number.parseInt(file, 10), name: file.replace(/\.sql$/, ''), file }));
}

/**
 * Returns the names of the migrations it applied (empty when the schema was current). With `bi`,
 * the BI views are (re-)created too when they differ from those settings ("bi views" is listed).
 */
export async function migrate(pool: Pool, schema: string, bi?: BiSettings): Promise<string[]> {
  const migrations = await listMigrations();
  return inTransaction(pool, async (client) => {
    await client.query(MIGRATE_LOCK_SQL, [schema]);
    // Checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the database.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
    await client.query(`CREATE TABLE IF NOT EXISTS sync_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM sync_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const done: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      const sql = await readFile(join(MIGRATIONS_DIR, m.file), 'utf8');
      try {
        await client.query(sql);
      } catch (error) {
        throw new Error(`migration ${m.file} failed: ${(error as Error).message}`, { cause: error });
      }
      await client.query('INSERT INTO sync_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      done.push(m.name);
    }
    if (bi && (await installBiViews(client, schema, bi))) done.push(`bi views (${bi.schema}, numeric(28,${bi.scale}))`);
    return done;
  });
}
