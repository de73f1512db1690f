import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, tableText } from '../support/harness.js';

const EXACT = [
  '{"id": 1, "wpi": "WPI-A", "inventory_bulk_wine": 12500, "inventory_finished_goods": 3780.50, "inventory_sales": 0.1234567890123456789012345678901, "vintage_forecast": 1.5e-7, "vintage_make": -0.0, "first_sale": "2021-03-04"}',
  '{"id": "2", "wpi": 12345, "inventory_bulk_wine": "007.250", "inventory_finished_goods": null, "inventory_sales": "", "vintage_forecast": 1E+3, "vintage_make": 99999999999999999999.99999999999999999999, "first_sale": "2021-03-04T00:00:00.000000Z"}',
  '{"id": 3, "wpi": "  Château Müller 日本  ", "inventory_bulk_wine": 0, "inventory_finished_goods": -12.5, "inventory_sales": 1, "vintage_forecast": 2, "first_sale": "0000-00-00", "new_field": true}',
];

describe('core sync: run against the simulator', () => {
  const fx = useSyncFixture('core', { simulator: { records: 400, seed: 7 } });

  it('loads every decimal digit exactly and normalizes dates', async () => {
    fx.sim.setRecordsJson(EXACT);
    const result = await runCli(['run', '--json'], fx.env);
    expect(result.stderr).not.toContain(fx.sim.password);
    expect(result.code).toBe(0);
    const run = JSON.parse(result.stdout);
    expect(run).toMatchObject({
      status: 'succeeded',
      trigger: 'manual',
      dry_run: false,
      received: 3,
      rejected: 0,
      duplicates: 0,
      inserted: 3,
      updated: 0,
      unchanged: 0,
      reported_count: 3,
      reported_record_count: 3,
      unknown_fields: ['new_field'],
    });
    expect(await tableText(fx.db)).toEqual([
      {
        id: '1',
        wpi: 'WPI-A',
        inventory_bulk_wine: '12500',
        inventory_finished_goods: '3780.5',
        inventory_sales: '0.1234567890123456789012345678901',
        vintage_forecast: '0.00000015',
        vintage_make: '0',
        first_sale: '2021-03-04',
        deleted: false,
      },
      {
        id: '2',
        wpi: '12345',
        inventory_bulk_wine: '7.25',
        inventory_finished_goods: null,
        inventory_sales: null,
        vintage_forecast: '1000',
        vintage_make: '99999999999999999999.99999999999999999999',
        first_sale: '2021-03-04',
        deleted: false,
      },
      {
        id: '3',
        wpi: 'Château Müller 日本',
        inventory_bulk_wine: '0',
        inventory_finished_goods: '-12.5',
        inventory_sales: '1',
        vintage_forecast: '2',
        vintage_make: null,
        first_sale: null,
        deleted: false,
      },
    ]);
  });

  it('loads a generated listing, then re-runs without touching a row, then counts a changed listing', async () => {
    fx.sim.setRecordsJson(null);
    const env = fx.envWith({ SYNC_MAX_DELETE_RATIO: '1' });
    const first = await runCli(['run', '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      status: 'succeeded',
      received: 400,
      inserted: 397,
      updated: 3,
      rejected: 0,
    });

    const before = await fx.db.rows<{ id: string; xmin: string; changed_at: Date }>(
      'SELECT id, xmin::text, changed_at FROM bulk_wine_reconciliation ORDER BY id',
    );
    const historyBefore = await fx.db.rows<{ n: string }>('SELECT count(*) AS n FROM bulk_wine_reconciliation_history');
    const again = await runCli(['run', '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      inserted: 0,
      updated: 0,
      unchanged: 400,
      deleted: 0,
      restored: 0,
    });
    // No row rewritten: the same tuple versions (xmin) and timestamps as before.
    expect(await fx.db.rows('SELECT id, xmin::text, changed_at FROM bulk_wine_reconciliation ORDER BY id')).toEqual(
      before,
    );
    expect(await fx.db.rows('SELECT count(*) AS n FROM bulk_wine_reconciliation_history')).toEqual(historyBefore);

    fx.sim.mutate({ change: 10, add: 5 });
    const changed = await runCli(['run', '--json'], env);
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({ received: 405, inserted: 5, updated: 10, unchanged: 390 });
    const runs = await fx.db.rows<{ status: string }>('SELECT status FROM sync_runs ORDER BY id');
    expect(runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
  });
});
