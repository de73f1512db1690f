/**
 * The upgrade cases (test/fixtures/upgrade/, README "Upgrading"): a schema as an earlier release
 * left it, made from this build's own migration files up to that release's last one, and the rows
 * that release wrote (NNNN-before.sql, written by test/fixtures/upgrade/make-fixture.sh).
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { listMigrations } from '../../src/db/migrate.js';
import { quoteIdent, type Pool } from '../../src/db/pool.js';
import { ROOT } from './harness.js';

export const UPGRADE_DIR = join(ROOT, 'test', 'fixtures', 'upgrade');

/** The migrations that have an upgrade case: the first migration each earlier release lacked. */
export async function upgradeCases(): Promise<number[]> {
  return (await readdir(UPGRADE_DIR))
    .flatMap((f) => (/^\d{4}-before\.sql$/.test(f) ? [Number.parseInt(f, 10)] : []))
    .sort((a, b) => a - b);
}

/**
 * Migrations 1..`before`-1 into `schema` (created), recorded as the runner of those releases did
 * (no app_version), then the rows of the case.
 */
export async function schemaBefore(pool: Pool, schema: string, before: number): Promise<void> {
  await pool.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
  await pool.query(
    'CREATE TABLE sync_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  for (const m of await listMigrations()) {
    if (m.version >= before) break;
    const sql = await readFile(join(ROOT, 'sql', 'migrations', m.file), 'utf8');
    await pool.transaction(async (client) => {
      await client.query(sql);
      await client.query('INSERT INTO sync_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    });
  }
  const rows = await readFile(join(UPGRADE_DIR, `${String(before).padStart(4, '0')}-before.sql`), 'utf8');
  await pool.query(rows.replaceAll('{{schema}}', quoteIdent(schema)));
}
