import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { DATA_RELATIONS } from '../../src/db/relations.js';
import { describeWithDriver } from '../support/drivers.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT } from '../support/harness.js';

/** psql runs sql/bi_readonly_role.sql (it uses psql variables and \if). */
function missingPsql(): string | undefined {
  try {
    execFileSync('psql', ['--version']);
    return undefined;
  } catch {
    return 'no psql on PATH: apt-get install postgresql-client';
  }
}

describe('a schema analysts can use', () => {
  const fx = useSyncFixture('bi');

  it('has a comment on every table, view and column', async () => {
    const uncommented = await fx.db.rows(
      `SELECT c.relname, a.attname
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'v') AND c.relname <> 'sync_migrations'
         AND (obj_description(c.oid, 'pg_class') IS NULL
              OR (a.attname IS NOT NULL AND col_description(c.oid, a.attnum) IS NULL))`,
      [fx.db.schema],
    );
    expect(uncommented).toEqual([]);
    const relations = await fx.db.rows<{ relname: string }>(
      `SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
      AND relkind IN ('r','v') ORDER BY 1`,
      [fx.db.schema],
    );
    // The list the one description reads (db/relations.ts): every relation the migrations make.
    expect(relations.map((r) => r.relname)).toEqual([...DATA_RELATIONS].sort());
  });

  const EXACT_RELATIONS = [
    'bulk_wine_reconciliation',
    'bulk_wine_reconciliation_closed_versions',
    'bulk_wine_reconciliation_current',
    'bulk_wine_reconciliation_history',
    'sync_last_load',
    'sync_runs',
    'sync_runs_latest',
    'sync_rejects',
    'sync_fields',
    'sync_run_profiles',
    'sync_run_checks',
  ];
  const BI_VIEWS = [
    'reconciliation',
    'reconciliation_history',
    'sync_freshness',
    'run_profiles',
    'run_checks',
    'data_dictionary',
  ];

  /** Runs sql/bi_readonly_role.sql with psql, then `work` connected as the role; drops the role after. */
  async function asRole(
    extraVars: string[],
    work: (bi: pg.Client, role: string, applyScript: (vars: string[]) => void) => Promise<void>,
  ): Promise<void> {
    const role = `bi_${randomBytes(3).toString('hex')}`;
    const password = `pw-${randomBytes(6).toString('hex')}`;
    const applyScript = (vars: string[]) =>
      execFileSync('psql', [
        fx.db.url,
        '-q',
        '-v',
        `schema=${fx.db.schema}`,
        '-v',
        `role=${role}`,
        '-v',
        `password=${password}`,
        ...vars.flatMap((v) => ['-v', v]),
        '-f',
        join(ROOT, 'sql', 'bi_readonly_role.sql'),
      ]);
    applyScript(extraVars);
    const url = new URL(fx.db.url);
    url.username = role;
    url.password = password;
    const bi = new pg.Client({ connectionString: url.toString() });
    await bi.connect();
    try {
      await work(bi, role, applyScript);
    } finally {
      await bi.end();
      await fx.db.pool.query(`DROP OWNED BY "${role}"; DROP ROLE "${role}"`);
    }
  }

  describeWithDriver('sql/bi_readonly_role.sql with psql', missingPsql(), () => {
    const biSchema = () => `${fx.db.schema}_bi`;
    beforeAll(async () => {
      await migrate(fx.db.pool, fx.db.schema, { schema: biSchema(), scale: 10 });
      await fx.db.pool.query(
        "INSERT INTO sync_runs (trigger, status, app_version, finished_at) VALUES ('manual', 'succeeded', 't', now())",
      );
    });

    it('by default grants the BI schema only, read-only', async () => {
      await asRole([], async (bi) => {
        for (const view of BI_VIEWS)
          await expect(bi.query(`SELECT count(*) FROM "${biSchema()}".${view}`)).resolves.toBeDefined();
        const fresh = await bi.query(`SELECT last_success_run_id, last_run_status FROM "${biSchema()}".sync_freshness`);
        expect(fresh.rows).toEqual([{ last_success_run_id: '1', last_run_status: 'succeeded' }]);
        for (const relation of [
          ...EXACT_RELATIONS,
          'sync_payloads',
          'sync_payload_chunks',
          'sync_migrations',
          'sync_bi_views',
        ]) {
          await expect(bi.query(`SELECT count(*) FROM "${fx.db.schema}".${relation}`)).rejects.toThrow(
            /permission denied/,
          );
        }
        await expect(bi.query(`CREATE VIEW "${biSchema()}".mine AS SELECT 1`)).rejects.toThrow(
          /read-only|permission denied/,
        );
      });
    });

    it('with -v exact=on also grants the exact tables and views, still read-only; a re-run without it revokes them', async () => {
      await asRole(['exact=on'], async (bi, _role, applyScript) => {
        for (const relation of EXACT_RELATIONS)
          await expect(bi.query(`SELECT count(*) FROM "${fx.db.schema}".${relation}`)).resolves.toBeDefined();
        const latest = await bi.query(`SELECT status, run_id FROM "${fx.db.schema}".sync_runs_latest`);
        expect(latest.rows).toEqual([{ status: 'succeeded', run_id: '1' }]);
        await expect(bi.query(`SELECT * FROM "${fx.db.schema}".sync_payloads`)).rejects.toThrow(/permission denied/);
        await expect(bi.query(`SELECT * FROM "${fx.db.schema}".sync_payload_chunks`)).rejects.toThrow(
          /permission denied/,
        );
        await expect(bi.query(`SELECT * FROM "${fx.db.schema}".sync_migrations`)).rejects.toThrow(/permission denied/);
        await expect(
          bi.query(
            `INSERT INTO "${fx.db.schema}".sync_runs (trigger, status, app_version) VALUES ('manual','running','x')`,
          ),
        ).rejects.toThrow(/read-only|permission denied/);
        await expect(bi.query(`DELETE FROM "${fx.db.schema}".bulk_wine_reconciliation`)).rejects.toThrow(
          /read-only|permission denied/,
        );
        applyScript([]);
        await expect(bi.query(`SELECT count(*) FROM "${fx.db.schema}".bulk_wine_reconciliation`)).rejects.toThrow(
          /permission denied/,
        );
        await expect(bi.query(`SELECT count(*) FROM "${biSchema()}".reconciliation`)).resolves.toBeDefined();
      });
    });

    it('keeps the grants when the views are re-created for a new SYNC_BI_SCALE', async () => {
      await asRole([], async (bi) => {
        expect(await migrate(fx.db.pool, fx.db.schema, { schema: biSchema(), scale: 3 })).toEqual([
          `bi views (${biSchema()}, numeric(28,3))`,
        ]);
        for (const view of BI_VIEWS)
          await expect(bi.query(`SELECT count(*) FROM "${biSchema()}".${view}`)).resolves.toBeDefined();
      });
    });
  });
});
