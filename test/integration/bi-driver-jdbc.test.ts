/**
 * pgjdbc (Debian's libpostgresql-jdbc-java, run by a real JVM), the driver of Metabase, DBeaver and
 * Tableau's PostgreSQL connector: declared precision and scale, BigDecimal values, REMARKS.
 * One JVM for the whole file (it is slow to start).
 */
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { BI, BI_CLOSED_V1, BI_DECIMALS, SCALE, connectionParts, syncHardValues } from '../drivers/hard-values.js';
import { describeWithDriver, missingJdbc, PGJDBC_JAR, runProgram } from '../support/drivers.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT } from '../support/harness.js';

/** A run's exact total, with more decimals than SCALE. */
const PROFILE_TOTAL = '12345678901234567.00000000015';

describeWithDriver('pgjdbc reads the BI views', missingJdbc(), () => {
  const fx = useSyncFixture('bijdbc');
  let lines: string[][];
  beforeAll(async () => {
    await syncHardValues(fx.db);
    // The run checks' rows of the last run, as it writes them: a total with more digits than S.
    // The runs stored their own profiles and checks: replaced by this one hard row of each.
    await fx.db.rows('DELETE FROM sync_run_profiles; DELETE FROM sync_run_checks');
    await fx.db.rows(
      `INSERT INTO sync_run_profiles (run_id, field, row_count, null_count, total, min_value, max_value)
       VALUES (2, 'inventory_sales', 5, 1, $1, '-0.00000000005', '99.5')`,
      [PROFILE_TOTAL],
    );
    await fx.db.rows(
      `INSERT INTO sync_run_checks (run_id, check_name, field, severity, passed, observed, expected, message)
       VALUES (2, 'total:inventory_sales', 'inventory_sales', 'warn', false, $1, 'within 50% of 1', 'total')`,
      [PROFILE_TOTAL],
    );
    const c = connectionParts(fx.db.url);
    const stdout = await runProgram(
      'java',
      [
        '-cp',
        PGJDBC_JAR,
        join(ROOT, 'test', 'drivers', 'BiJdbc.java'),
        `jdbc:postgresql://${c.host}:${c.port}/${c.database}`,
        c.user,
        `${fx.db.schema}_bi`,
      ],
      { PGPASSWORD: c.password },
    );
    lines = stdout
      .trim()
      .split('\n')
      .map((l) => l.split('\t'));
  }, 240_000);

  const facts = (kind: string, view: string) => lines.filter((l) => l[0] === kind && l[1] === view);

  it("ResultSetMetaData: every decimal column is (28, S), the new upstream field's too", () => {
    for (const view of ['reconciliation', 'reconciliation_history']) {
      const decimals = facts('COLUMN', view).filter((l) => l[3] === 'numeric');
      expect(decimals.map((l) => [l[2], l[4], l[5]])).toEqual(BI_DECIMALS.map((c) => [c, '28', String(SCALE)]));
    }
  });

  it('getBigDecimal: the value rounded half away from zero, NULL where it cannot fit, and which columns', () => {
    const rows: Record<string, Record<string, string | null>> = {};
    for (const [, , row, column, value] of facts('VALUE', 'reconciliation')) {
      (rows[row!] ??= {})[column!] = value === '\\N' ? null : value!;
    }
    const byId = Object.fromEntries(
      Object.values(rows).map((r) => [
        r.id!,
        Object.fromEntries([...BI_DECIMALS, 'overflow_columns'].map((c) => [c, r[c]])),
      ]),
    );
    expect(byId).toEqual(BI);
    const history = facts('VALUE', 'reconciliation_history')
      .filter((l) => l[3] === 'vintage_make')
      .map((l) => l[4]);
    expect(history).toContain(BI_CLOSED_V1.vintage_make);
    expect(history).toHaveLength(6);
  });

  it('DatabaseMetaData: REMARKS on every view and every column', () => {
    for (const view of ['reconciliation', 'reconciliation_history', 'sync_freshness', 'run_profiles', 'run_checks']) {
      const remarks = facts('REMARKS', view);
      expect(remarks.length).toBe(facts('COLUMN', view).length + 1);
      expect(remarks.filter((l) => !l[3] || l[3] === 'null')).toEqual([]);
    }
    expect(facts('REMARKS', 'reconciliation').find((l) => l[2] === 'inventory_sales')![3]).toContain(
      `numeric(28,${SCALE})`,
    );
  });

  it("run_profiles: a run's total, min and max as (28, S) BigDecimals, rounded half away from zero", () => {
    const decimals = facts('COLUMN', 'run_profiles').filter((l) => l[3] === 'numeric');
    expect(decimals.map((l) => [l[2], l[4], l[5]])).toEqual(
      ['total', 'min_value', 'max_value'].map((c) => [c, '28', String(SCALE)]),
    );
    const values = Object.fromEntries(facts('VALUE', 'run_profiles').map((l) => [l[3], l[4]]));
    expect(values).toMatchObject({
      field: 'inventory_sales',
      total: '12345678901234567.0000000002',
      min_value: '-0.0000000001',
      max_value: '99.5000000000',
    });
    const check = Object.fromEntries(facts('VALUE', 'run_checks').map((l) => [l[3], l[4]]));
    expect(check).toMatchObject({ check_name: 'total:inventory_sales', passed: 'f', observed: PROFILE_TOTAL });
  });

  it('the freshness view answers through the driver', () => {
    const values = Object.fromEntries(facts('VALUE', 'sync_freshness').map((l) => [l[3], l[4]]));
    expect(values).toMatchObject({ last_success_run_id: '2', last_run_status: 'succeeded', last_run_error: '\\N' });
  });
});
