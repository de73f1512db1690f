/**
 * psqlODBC (Debian's odbc-postgresql, through unixODBC and python3-pyodbc): the ODBC path of Excel,
 * Power BI and Tableau. The description of each decimal column and the Decimal values; and what
 * ODBC shows of the comments (psqlODBC returns empty REMARKS: the data_dictionary view carries them).
 * One python process for the whole file.
 */
import { beforeAll, expect, it } from 'vitest';
import { BI, BI_CLOSED_V1, BI_DECIMALS, SCALE, syncHardValues } from '../drivers/hard-values.js';
import { describeWithDriver, findPython } from '../support/drivers.js';
import { useSyncFixture } from '../support/fixture.js';
import { type DriverOutput, decimalsById, readViews } from '../drivers/read-views.js';

const probe = findPython(
  'pyodbc',
  "assert 'PostgreSQL Unicode' in pyodbc.drivers(), 'psqlODBC not registered'",
  'python3-pyodbc odbc-postgresql unixodbc',
);

describeWithDriver('psqlODBC reads the BI views', 'missing' in probe ? probe.missing : undefined, () => {
  const fx = useSyncFixture('biodbc');
  let out: DriverOutput;
  beforeAll(async () => {
    await syncHardValues(fx.db);
    out = await readViews((probe as { python: string }).python, 'odbc', fx.db);
  }, 240_000);

  it("describes every decimal column as DECIMAL(28, S), the new upstream field's too, read as Decimal", () => {
    for (const view of ['reconciliation', 'reconciliation_history'] as const) {
      const decimals = out.views[view].columns.filter((c) => (BI_DECIMALS as readonly string[]).includes(c.name));
      expect(decimals.map((c) => [c.name, c.type, c.precision, c.scale])).toEqual(
        BI_DECIMALS.map((c) => [c, 'Decimal', 28, SCALE]),
      );
    }
  });

  it('reads the rounded values, NULL where they cannot fit, and which columns', () => {
    expect(decimalsById(out.views.reconciliation)).toEqual(BI);
    const history = decimalsById(out.views.reconciliation_history, true);
    expect(Object.keys(history)).toHaveLength(6);
    expect(Object.values(history).map((r) => r.vintage_make)).toContain(BI_CLOSED_V1.vintage_make);
  });

  it('the freshness view answers without an error', () => {
    const { columns, rows } = out.views.sync_freshness;
    const row = Object.fromEntries(columns.map((c, i) => [c.name, rows[0]![i]]));
    expect(row).toMatchObject({ last_success_run_id: '2', last_run_status: 'succeeded', last_run_error: null });
  });

  it('comments: SQLColumns/SQLTables REMARKS are empty with psqlODBC; data_dictionary serves them as rows', () => {
    // Recorded, not wished for: if a psqlODBC version starts returning comments, this tells us.
    expect(
      Object.entries(out.remarks.reconciliation!).filter(
        ([, r]) => r !== '' && r !== null && !(Array.isArray(r) && r.every((x) => !x)),
      ),
    ).toEqual([]);
    const described = out.dictionary.rows.filter((r) => r[0] === 'reconciliation');
    expect(described.map((r) => r[1])).toEqual([null, ...out.views.reconciliation.columns.map((c) => c.name)]);
    expect(described.every((r) => typeof r[2] === 'string' && r[2].length > 20)).toBe(true);
  });
});
