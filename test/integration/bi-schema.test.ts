import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, ROOT, type TestDb } from '../support/harness.js';

const hasPsql = (() => {
  try {
    execFileSync('psql', ['--version']);
    return true;
  } catch {
    return false;
  }
})();

describe('a schema analysts can use', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb('bi');
  });
  afterAll(async () => db.close());

  it('has a comment on every table, view and column', async () => {
    const uncommented = await db.rows(
      `SELECT c.relname, a.attname
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'v') AND c.relname <> 'sync_migrations'
         AND (obj_description(c.oid, 'pg_class') IS NULL OR (a.attname IS NOT NULL AND col_description(c.oid, a.attnum) IS NULL))`,
      [db.schema],
    );
    expect(uncommented).toEqual([]);
    const relations = await db.rows<{ relname: string }>(
      `SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND relkind IN ('r','v') ORDER BY 1`,
      [db.schema],
    );
    expect(relations.map((r) => r.relname)).toEqual([
      'bulk_wine_reconciliation',
      'bulk_wine_reconciliation_closed_versions',
      'bulk_wine_reconciliation_current',
      'bulk_wine_reconciliation_history',
      'sync_migrations',
      'sync_payload_chunks',
      'sync_payloads',
      'sync_rejects',
      'sync_runs',
      'sync_runs_latest',
    ]);
  });

  it.skipIf(!hasPsql)('the BI role reads the data and views, and cannot write or read anything else', async () => {
    const role = `bi_${randomBytes(3).toString('hex')}`;
    const password = `pw-${randomBytes(6).toString('hex')}`;
    execFileSync('psql', [db.url, '-q', '-v', `schema=${db.schema}`, '-v', `role=${role}`, '-v', `password=${password}`, '-f', join(ROOT, 'sql', 'bi_readonly_role.sql')]);
    await db.pool.query("INSERT INTO sync_runs (trigger, status, app_version) VALUES ('manual', 'succeeded', 't')");
    const url = new URL(db.url);
    url.username = role;
    url.password = password;
    const bi = new pg.Client({ connectionString: url.toString() });
    await bi.connect();
    try {
      for (const relation of ['bulk_wine_reconciliation', 'bulk_wine_reconciliation_closed_versions', 'bulk_wine_reconciliation_current', 'bulk_wine_reconciliation_history', 'sync_runs', 'sync_runs_latest', 'sync_rejects']) {
        await expect(bi.query(`SELECT count(*) FROM "${db.schema}".${relation}`)).resolves.toBeDefined();
      }
      const latest = await bi.query(`SELECT status, run_id FROM "${db.schema}".sync_runs_latest`);
      expect(latest.rows).toEqual([{ status: 'succeeded', run_id: '1' }]);
      await expect(bi.query(`SELECT * FROM "${db.schema}".sync_payloads`)).rejects.toThrow(/permission denied/);
      await expect(bi.query(`SELECT * FROM "${db.schema}".sync_payload_chunks`)).rejects.toThrow(/permission denied/);
      await expect(bi.query(`SELECT * FROM "${db.schema}".sync_migrations`)).rejects.toThrow(/permission denied/);
      await expect(bi.query(`INSERT INTO "${db.schema}".sync_runs (trigger, status, app_version) VALUES ('manual','running','x')`)).rejects.toThrow(/read-only|permission denied/);
      await expect(bi.query(`DELETE FROM "${db.schema}".bulk_wine_reconciliation`)).rejects.toThrow(/read-only|permission denied/);
    } finally {
      await bi.end();
      await db.pool.query(`DROP OWNED BY "${role}"; DROP ROLE "${role}"`);
    }
  });
});
