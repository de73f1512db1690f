/**
 * Applies sql/migrations/NNNN_name.sql in order, each once, in one transaction under an
 * advisory lock, so concurrent migrators (two daemons starting together) wait for each other.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BiSettings } from '../config.js';
import { SchemaTooNewError } from '../errors.js';
import { APP_VERSION, SQL_DIR } from '../io/paths.js';
import { biDecimalType } from '../fields.js';
import { installBiViews } from './bi-views.js';
import { checkFieldCatalogue } from './catalogue-check.js';
import { migrateLock } from './lock.js';
import { withIdentifiers, type Pool } from './pool.js';
import { explainMissingPrivilege } from './privileges.js';
import { loadStatements } from './statements.js';

export interface Migration {
  version: number;
  name: string;
  file: string;
}

const MIGRATIONS_DIR = join(SQL_DIR, 'migrations');
const SQL = loadStatements('db/migrate.sql', [
  'schema_exists',
  'create_schema',
  'use_schema',
  'create_migrations_table',
  'lacks_app_version',
  'add_app_version',
  'applied',
  'record',
]);

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
  return pool.transaction(async (client) => {
    await migrateLock(client, schema);
    const exists = await client.query(SQL.schema_exists, [schema]);
    if (exists.rowCount === 0) await client.query(withIdentifiers(SQL.create_schema, { schema }));
    await client.query(withIdentifiers(SQL.use_schema, { schema }));
    await client.query(SQL.create_migrations_table);
    if ((await client.query<{ lacks: boolean }>(SQL.lacks_app_version)).rows[0]!.lacks)
      await client.query(SQL.add_app_version);
    const { rows } = await client.query<AppliedMigration>(SQL.applied);
    refuseNewerSchema(rows, migrations);
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
      await client.query(SQL.record, [m.version, m.name, APP_VERSION]);
      done.push(m.name);
    }
    await checkFieldCatalogue(client, schema);
    if (bi && (await installBiViews(client, schema, bi)))
      done.push(`bi views (${bi.schema}, ${biDecimalType(bi.scale)})`);
    return done;
  });
}

interface AppliedMigration {
  version: number;
  name: string;
  app_version: string | null;
}

/**
 * An older release started against a schema a newer one migrated (a rollback): it would fail in
 * the middle of its first run on a column it does not know, recorded as a failed run. Refused
 * here instead, before a run row is written, changing nothing (the caller's transaction rolls
 * back what this one created). Migrations are forward-only.
 */
function refuseNewerSchema(applied: AppliedMigration[], known: Migration[]): void {
  const knownVersions = new Set(known.map((m) => m.version));
  const unknown = applied.filter((m) => !knownVersions.has(m.version));
  if (unknown.length === 0) return;
  const newest = unknown[unknown.length - 1]!;
  const ours = known.at(-1);
  const releases = [...new Set(unknown.map((m) => m.app_version).filter((v): v is string => v !== null))];
  const need =
    releases.length > 0
      ? `run release ${releases.at(-1)} or later`
      : 'run the release that migrated it, or a later one';
  throw new SchemaTooNewError(
    `the database schema is at migration ${migrationLabel(newest.version)} ` +
      `(${newest.name}${newest.app_version ? `, applied by release ${newest.app_version}` : ''}), ` +
      `newer than this release (${APP_VERSION}, migrations up to ${ours ? migrationLabel(ours.version) : 'none'}): ` +
      `${need}; nothing was changed`,
  );
}

function migrationLabel(version: number): string {
  return String(version).padStart(4, '0');
}
