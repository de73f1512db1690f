/**
 * Applies sql/migrations/NNNN_name.sql in order, each once, in one transaction under an
 * advisory lock, so concurrent migrators (two daemons starting together) wait for each other.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BiSettings } from '../config.js';
import { SQL_DIR } from '../paths.js';
import { biDecimalType } from '../bi-types.js';
import { installBiViews } from './bi-views.js';
import { checkFieldCatalogue } from './catalogue-check.js';
import { migrateLock } from './lock.js';
import { inTransaction, withIdentifiers, type Pool } from './pool.js';
import { explainMissingPrivilege } from './privileges.js';
import { loadStatements } from './statements.js';

export interface Migration {
  version: number;
  name: string;
  file: string;
}

const MIGRATIONS_DIR = join(SQL_DIR, 'migrations');
const SQL = loadStatements('db/migrate.sql', ['schema_exists', 'create_schema', 'use_schema', 'create_migrations_table', 'applied', 'record']);

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
  try {
    return await migrateIn(pool, schema, migrations, bi);
  } catch (error) {
    // A least-privilege role is told what it lacks and the SQL that gives it.
    throw (await explainMissingPrivilege(pool, error, schema, bi?.schema)) ?? error;
  }
}

function migrateIn(pool: Pool, schema: string, migrations: Migration[], bi: BiSettings | undefined): Promise<string[]> {
  return inTransaction(pool, async (client) => {
    await migrateLock(client, schema);
    const exists = await client.query(SQL.schema_exists, [schema]);
    if (exists.rowCount === 0) await client.query(withIdentifiers(SQL.create_schema, { schema }));
    await client.query(withIdentifiers(SQL.use_schema, { schema }));
    await client.query(SQL.create_migrations_table);
    const { rows } = await client.query<{ version: number }>(SQL.applied);
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
      await client.query(SQL.record, [m.version, m.name]);
      done.push(m.name);
    }
    await checkFieldCatalogue(client, schema);
    if (bi && (await installBiViews(client, schema, bi))) done.push(`bi views (${bi.schema}, ${biDecimalType(bi.scale)})`);
    return done;
  });
}
