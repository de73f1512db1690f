/**
 * The BI schema's views, read with plain SQL after the hard-value listing went through the real
 * pipeline: declared types, rounding, NULL for what cannot fit, comments, freshness, the run's
 * warning, and re-creation when SYNC_BI_SCALE changes.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import {
  BI,
  BI_CLOSED_V1,
  BI_DECIMALS,
  DECIMALS,
  EXACT,
  OVERFLOW_LIVE,
  ROUNDED_LIVE,
  SCALE,
  hardListingV2,
  syncHardValues,
} from '../drivers/hard-values.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, type CliResult } from '../support/harness.js';

const decimalsText = DECIMALS.map((c) => `${c}::text`).join(', ');
/** The BI views' decimals: the catalogue's and the new upstream field's column. */
const biDecimalsText = BI_DECIMALS.map((c) => `${c}::text`).join(', ');

describe('BI views over the hard values', () => {
  const fx = useSyncFixture('biviews');
  let bi: string;
  let second: CliResult;
  beforeAll(async () => {
    bi = `${fx.db.schema}_bi`;
    second = await syncHardValues(fx.db);
  });

  it('the exact table keeps every digit', async () => {
    const rows = await fx.db.rows<Record<string, string | null>>(
      `SELECT id::text, ${decimalsText} FROM bulk_wine_reconciliation ORDER BY id`,
    );
    expect(Object.fromEntries(rows.map(({ id, ...rest }) => [id, rest]))).toEqual(EXACT);
  });

  it('reconciliation: values rounded half away from zero to S places, NULL and named when they cannot fit', async () => {
    const rows = await fx.db.rows<Record<string, string | null>>(
      `SELECT id::text, ${biDecimalsText}, overflow_columns FROM "${bi}".reconciliation ORDER BY id`,
    );
    expect(Object.fromEntries(rows.map(({ id, ...rest }) => [id, rest]))).toEqual(BI);
  });

  it('reconciliation_history: every version, rounded the same way', async () => {
    const rows = await fx.db.rows<{ id: string; vintage_make: string | null; valid_to: string | null }>(
      `SELECT id::text, vintage_make::text, valid_to::text FROM "${bi}".reconciliation_history ORDER BY id, valid_from`,
    );
    expect(rows).toHaveLength(6);
    const record2 = rows.filter((r) => r.id === '2');
    expect(record2.map((r) => r.vintage_make)).toEqual([BI_CLOSED_V1.vintage_make, BI['2']!.vintage_make]);
    expect(record2[0]!.valid_to).not.toBeNull();
    expect(record2[1]!.valid_to).toBeNull();
    const current = await fx.db.rows(
      `SELECT id::text, ${biDecimalsText}, overflow_columns FROM "${bi}".reconciliation_history WHERE valid_to IS NULL
      ORDER BY id`,
    );
    expect(current).toEqual(
      await fx.db.rows(`SELECT id::text, ${biDecimalsText}, overflow_columns FROM "${bi}".reconciliation ORDER BY id`),
    );
  });

  it('declares every decimal numeric(28, S); no decimal in the BI schema is wider than 28 digits (Npgsql, Power BI)', async () => {
    const columns = await fx.db.rows<{
      table_name: string;
      column_name: string;
      numeric_precision: number | null;
      numeric_scale: number | null;
    }>(
      `SELECT table_name, column_name, numeric_precision, numeric_scale FROM information_schema.columns
       WHERE table_schema = $1 AND data_type = 'numeric' ORDER BY table_name, ordinal_position`,
      [bi],
    );
    expect(columns).toEqual([
      ...['reconciliation', 'reconciliation_history'].flatMap((table_name) =>
        BI_DECIMALS.map((column_name) => ({ table_name, column_name, numeric_precision: 28, numeric_scale: SCALE })),
      ),
      // A run's profile: a numeric field's total, min and max, rounded as the records' values are.
      ...['total', 'min_value', 'max_value'].map((column_name) => ({
        table_name: 'run_profiles',
        column_name,
        numeric_precision: 28,
        numeric_scale: SCALE,
      })),
    ]);
    const tooWide = await fx.db.rows(
      `SELECT table_name, column_name FROM information_schema.columns
       WHERE table_schema = $1 AND data_type = 'numeric' AND (numeric_precision IS NULL OR numeric_precision > 28)`,
      [bi],
    );
    expect(tooWide).toEqual([]);
  });

  it("keeps the exact tables' column names", async () => {
    const names = async (schema: string, table: string) =>
      (
        await fx.db.rows<{ column_name: string }>(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
          ORDER BY ordinal_position`,
          [schema, table],
        )
      ).map((r) => r.column_name);
    // The columns of the new upstream fields come after the catalogue's, before the row's bookkeeping.
    const withNewFields = (exact: string[]) => {
      const at = exact.indexOf('first_sale') + 1;
      return [
        ...exact.slice(0, at),
        'cellar_note',
        'inventory_in_transit',
        ...exact.slice(at).filter((c) => c !== 'extra_fields'),
        'overflow_columns',
        'extra_fields',
      ];
    };
    expect(await names(bi, 'reconciliation')).toEqual(
      withNewFields(await names(fx.db.schema, 'bulk_wine_reconciliation_current')),
    );
    expect(await names(bi, 'reconciliation_history')).toEqual(
      withNewFields(await names(fx.db.schema, 'bulk_wine_reconciliation_history')),
    );
  });

  it('has a comment on every view and column saying how it differs from the exact table', async () => {
    const objects = await fx.db.rows<{ relname: string; attname: string | null; comment: string | null }>(
      `SELECT c.relname, a.attname,
        coalesce(col_description(c.oid, a.attnum), obj_description(c.oid, 'pg_class')) AS comment
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN LATERAL (SELECT NULL::name AS attname, NULL::int2 AS attnum
                          UNION ALL SELECT attname, attnum FROM pg_attribute
                          WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped) a ON true
       WHERE n.nspname = $1 ORDER BY 1, a.attnum NULLS FIRST`,
      [bi],
    );
    expect(new Set(objects.map((o) => o.relname))).toEqual(
      new Set([
        'data_dictionary',
        'reconciliation',
        'reconciliation_history',
        'run_checks',
        'run_profiles',
        'sync_freshness',
      ]),
    );
    expect(objects.filter((o) => !o.comment)).toEqual([]);
    const decimal = objects.find((o) => o.relname === 'reconciliation' && o.attname === 'inventory_sales')!;
    expect(decimal.comment).toContain(`Rounded half away from zero to ${SCALE} decimal places, numeric(28,${SCALE})`);
    expect(decimal.comment).toContain(`${fx.db.schema}.bulk_wine_reconciliation.inventory_sales`);
    // The same descriptions as rows, for drivers that return no REMARKS (psqlODBC).
    const dictionary = await fx.db.rows<{ view_name: string; column_name: string | null; description: string }>(
      `SELECT view_name, column_name, description FROM "${bi}".data_dictionary ORDER BY view_name, position`,
    );
    expect(dictionary.map((d) => [d.view_name, d.column_name, d.description])).toEqual(
      objects.map((o) => [o.relname, o.attname, o.comment]),
    );
    expect(
      await fx.db.rows(
        `SELECT data_type FROM "${bi}".data_dictionary WHERE view_name = 'reconciliation'
        AND column_name = 'vintage_make'`,
      ),
    ).toEqual([{ data_type: `numeric(28,${SCALE})` }]);
  });

  it('the run summary and the log warn with the counts; no row is lost', async () => {
    expect(second.stdout).toContain(
      `warning: BI views: ${ROUNDED_LIVE} live values have more than ${SCALE} decimal places and are rounded` +
        `; ${OVERFLOW_LIVE} live values do not fit numeric(28,${SCALE}) and are NULL` +
        ` (see overflow_columns)`,
    );
    const warning = second.stderr
      .split('\n')
      .map((l) => (l.startsWith('{') ? JSON.parse(l) : {}))
      .find((l) => l.rounded !== undefined);
    // A warning only when the count grew since the first run (a state that stays the same is info).
    const [v1, v2] = await fx.db.rows<{ rounded: number; overflow: number }>(
      'SELECT bi_rounded::int AS rounded, bi_overflow::int AS overflow FROM sync_runs ORDER BY id',
    );
    const grew = v2!.rounded > v1!.rounded || v2!.overflow > v1!.overflow;
    expect(warning).toMatchObject({
      level: grew ? 40 : 30,
      scale: SCALE,
      rounded: ROUNDED_LIVE,
      overflow: OVERFLOW_LIVE,
    });
    expect(await fx.db.rows(`SELECT count(*)::int AS n FROM "${bi}".reconciliation`)).toEqual([{ n: 5 }]);
  });

  it('a re-sync that changed no row carries the last count forward; a write outside a run makes it count again', async () => {
    const file = join(fx.dir, 'v2.json');
    await writeFile(file, hardListingV2());
    const warningOf = (r: CliResult) =>
      r.stderr
        .split('\n')
        .map((l) => (l.startsWith('{') ? JSON.parse(l) : {}))
        .find((l) => l.rounded !== undefined);
    const stored = () =>
      fx.db.rows(
        `SELECT id::int, bi_scale, bi_rounded::int, bi_overflow::int FROM sync_runs WHERE status = 'succeeded'
        ORDER BY id`,
      );

    const unchanged = await runCli(['run', '--from-file', file], fx.env);
    expect(unchanged.code, unchanged.stderr).toBe(0);
    expect(warningOf(unchanged)).toMatchObject({ rounded: ROUNDED_LIVE, overflow: OVERFLOW_LIVE, countedBy: 2 });

    // A no-op UPDATE outside a run still invalidates what the count rests on.
    await fx.db.rows('UPDATE bulk_wine_reconciliation SET wpi = wpi WHERE id = 1');
    const recounted = await runCli(['run', '--from-file', file], fx.env);
    expect(recounted.code, recounted.stderr).toBe(0);
    expect(warningOf(recounted)).toMatchObject({ rounded: ROUNDED_LIVE, overflow: OVERFLOW_LIVE, countedBy: 4 });
    expect((await stored()).slice(-3)).toEqual(
      [2, 3, 4].map((id) => ({ id, bi_scale: SCALE, bi_rounded: ROUNDED_LIVE, bi_overflow: OVERFLOW_LIVE })),
    );
  });

  it("sync_freshness: the last success and its age, the last run's status and error", async () => {
    const [ok] = await fx.db.rows<Record<string, unknown>>(
      `SELECT last_success_run_id::text, last_success_age_seconds, last_run_id::text, last_run_status, last_run_error
      FROM "${bi}".sync_freshness`,
    );
    expect(ok).toMatchObject({
      last_success_run_id: '4',
      last_run_id: '4',
      last_run_status: 'succeeded',
      last_run_error: null,
    });
    expect(Number(ok!.last_success_age_seconds)).toBeGreaterThanOrEqual(0);
    const truncated = join(fx.dir, 'truncated.json');
    await writeFile(truncated, '{"count": 1, "bulk_wine_reconciliation": [{"id": 1');
    const failed = await runCli(['run', '--from-file', truncated], fx.env);
    expect(failed.code).toBe(1);
    const rows = await fx.db.rows(
      `SELECT last_success_run_id::text, last_run_id::text, last_run_status, last_run_error IS NOT NULL AS has_error
      FROM "${bi}".sync_freshness`,
    );
    expect(rows).toEqual([{ last_success_run_id: '4', last_run_id: '5', last_run_status: 'failed', has_error: true }]);
  });
});

describe('BI views follow the settings', () => {
  const fx = useSyncFixture('bisettings');
  beforeAll(async () => {
    await fx.db.pool.query(
      `INSERT INTO bulk_wine_reconciliation
         (id, wpi, inventory_bulk_wine, inventory_sales, first_seen_at, changed_at, run_id)
       VALUES (1, 'A', 0.12345, -2.5, now(), now(), 1),
         (2, 'B', 99999999999999999999999.99995, 99999999999999999999999.99994, now(), now(), 1)`,
    );
  });
  afterAll(async () => {
    await fx.db.pool.query(`DROP SCHEMA IF EXISTS "${fx.db.schema}_other" CASCADE`);
  });

  const typeOf = async (schema: string) =>
    (
      await fx.db.rows<{ t: string }>(
        `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = $1::regclass
        AND attname = 'inventory_sales'`,
        [`"${schema}".reconciliation`],
      )
    )[0]?.t;

  it('re-creates the views when SYNC_BI_SCALE changes, and leaves them alone when nothing changed', async () => {
    const bi = `${fx.db.schema}_bi`;
    expect(await migrate(fx.db.pool, fx.db.schema, { schema: bi, scale: 4 })).toEqual([
      `bi views (${bi}, numeric(28,4))`,
    ]);
    expect(await typeOf(bi)).toBe('numeric(28,4)');
    // 24 integer digits fit numeric(28,4): the row with 23 digits fits unless rounding carries it to 24.
    expect(
      await fx.db.rows(
        `SELECT id::text, inventory_bulk_wine::text, inventory_sales::text, overflow_columns FROM "${bi}".reconciliation
        ORDER BY id`,
      ),
    ).toEqual([
      { id: '1', inventory_bulk_wine: '0.1235', inventory_sales: '-2.5000', overflow_columns: null },
      {
        id: '2',
        inventory_bulk_wine: '100000000000000000000000.0000',
        inventory_sales: '99999999999999999999999.9999',
        overflow_columns: null,
      },
    ]);
    expect(await migrate(fx.db.pool, fx.db.schema, { schema: bi, scale: 4 })).toEqual([]);
    expect(await migrate(fx.db.pool, fx.db.schema, { schema: bi, scale: 0 })).toEqual([
      `bi views (${bi}, numeric(28,0))`,
    ]);
    expect(
      await fx.db.rows(
        `SELECT id::text, inventory_bulk_wine::text, inventory_sales::text, overflow_columns FROM "${bi}".reconciliation
        ORDER BY id`,
      ),
    ).toEqual([
      { id: '1', inventory_bulk_wine: '0', inventory_sales: '-3', overflow_columns: null },
      {
        id: '2',
        inventory_bulk_wine: '100000000000000000000000',
        inventory_sales: '100000000000000000000000',
        overflow_columns: null,
      },
    ]);
    expect(await migrate(fx.db.pool, fx.db.schema, { schema: bi, scale: 20 })).toEqual([
      `bi views (${bi}, numeric(28,20))`,
    ]);
    expect(
      await fx.db.rows(
        `SELECT id::text, inventory_bulk_wine::text, overflow_columns FROM "${bi}".reconciliation ORDER BY id`,
      ),
    ).toEqual([
      { id: '1', inventory_bulk_wine: '0.12345000000000000000', overflow_columns: null },
      { id: '2', inventory_bulk_wine: null, overflow_columns: 'inventory_bulk_wine,inventory_sales' },
    ]);
  });

  it('re-creates views someone dropped', async () => {
    const bi = `${fx.db.schema}_bi`;
    await fx.db.pool.query(`DROP VIEW "${bi}".sync_freshness`);
    expect(await migrate(fx.db.pool, fx.db.schema, { schema: bi, scale: 20 })).toEqual([
      `bi views (${bi}, numeric(28,20))`,
    ]);
    expect(await fx.db.rows(`SELECT count(*)::int AS n FROM "${bi}".sync_freshness`)).toEqual([{ n: 1 }]);
  });

  it('moves the views when SYNC_BI_SCHEMA changes, dropping the old schema once empty', async () => {
    const other = `${fx.db.schema}_other`;
    await migrate(fx.db.pool, fx.db.schema, { schema: other, scale: 2 });
    expect(await typeOf(other)).toBe('numeric(28,2)');
    expect(await fx.db.rows(`SELECT nspname FROM pg_namespace WHERE nspname = $1`, [`${fx.db.schema}_bi`])).toEqual([]);
    await migrate(fx.db.pool, fx.db.schema, { schema: `${fx.db.schema}_bi`, scale: 2 });
  });

  it('concurrent starters: both succeed, the views are installed once', async () => {
    const pools = [0, 1].map(() => createPool({ databaseUrl: fx.db.url, schema: fx.db.schema, max: 1 }));
    try {
      const settings = { schema: `${fx.db.schema}_bi`, scale: 7 };
      const results = await Promise.all(pools.map((p) => migrate(p, fx.db.schema, settings)));
      expect(results.map((r) => r.length).sort()).toEqual([0, 1]);
      expect(await typeOf(settings.schema)).toBe('numeric(28,7)');
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});
