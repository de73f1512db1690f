/**
 * A bad record never hides a good one (README, "Data safety"): a record whose id can be read but
 * which fails validation leaves its live row exactly as the last valid version: not soft-deleted,
 * not updated, not counted by the mass-delete guard, marked with the run in rejected_in_run. The
 * next valid record updates the row as usual. A record whose id cannot be read stays a reject.
 */
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';

const N = 40;
const rec = (id: number, fields: Record<string, string> = {}) => {
  const base: Record<string, string> = {
    id: String(id),
    wpi: JSON.stringify(`W${id}`),
    inventory_sales: `"${id}.25"`,
    first_sale: '"2021-03-04"',
    ...fields,
  };
  return `{${Object.entries(base)
    .map(([k, v]) => `${JSON.stringify(k)}:${v}`)
    .join(',')}}`;
};
const listing = (make: (id: number) => string) => Array.from({ length: N }, (_, i) => make(i + 1));

const fx = useSyncFixture('kept_on_reject', { simulator: { records: 10 }, each: true });
const sync = async (env: Record<string, string> = {}, ...args: string[]) => {
  const r = await runCli(['run', ...args, '--json'], { ...fx.env, SYNC_MAX_REJECT_RATIO: '1', ...env });
  return { ...r, run: r.stdout ? JSON.parse(r.stdout) : undefined };
};
const row = async (id: number) =>
  (
    await fx.db.rows<Record<string, string | null>>(
      `SELECT id::text, wpi, inventory_sales::text, first_sale::text, deleted_at::text, run_id::text, changed_at::text,
        xmin::text, rejected_in_run::text FROM bulk_wine_reconciliation WHERE id = $1`,
      [id],
    )
  )[0];

describe('a record that goes bad', () => {
  it('keeps its row as the last valid version, marked, counted apart; the next valid version updates it', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    const first = await sync();
    expect(first.run).toMatchObject({ status: 'succeeded', inserted: N });
    const before = { 100: await row(10), 101: await row(11) };

    // Record 10's date becomes impossible, record 11's quantity becomes text; record 12 changes validly.
    fx.sim.setRecordsJson(
      listing((id) =>
        id === 10
          ? rec(id, { first_sale: '"2023-02-30"' })
          : id === 11
            ? rec(id, { inventory_sales: '"n/a"' })
            : id === 12
              ? rec(id, { inventory_sales: '"99.5"' })
              : rec(id),
      ),
    );
    const second = await sync();
    expect(second.run).toMatchObject({
      status: 'succeeded',
      rejected: 2,
      deleted: 0,
      updated: 1,
      kept_on_reject: 2,
      unchanged: N - 3,
    });
    expect(second.stdout).not.toContain('"deleted":2');
    const runId = String(second.run.id);
    for (const [id, was] of [
      [10, before[100]],
      [11, before[101]],
    ] as const) {
      const now = await row(id);
      // Exactly the last valid version: values, deletion, run and change time as they were.
      expect({ ...now, xmin: undefined, rejected_in_run: undefined }).toEqual({
        ...was,
        xmin: undefined,
        rejected_in_run: undefined,
      });
      expect(now!.rejected_in_run).toBe(runId);
    }
    // BI users see the rows, with the mark, in the current view and the BI view.
    expect(
      await fx.db.rows(
        `SELECT id::text, rejected_in_run::text FROM bulk_wine_reconciliation_current WHERE id IN (10, 11, 12)
        ORDER BY id`,
      ),
    ).toEqual([
      { id: '10', rejected_in_run: runId },
      { id: '11', rejected_in_run: runId },
      { id: '12', rejected_in_run: null },
    ]);
    expect(
      await fx.db.rows(
        `SELECT id::text, rejected_in_run::text FROM "${fx.db.schema}_bi".reconciliation WHERE id IN (10, 11)
        ORDER BY id`,
      ),
    ).toEqual([
      { id: '10', rejected_in_run: runId },
      { id: '11', rejected_in_run: runId },
    ]);
    expect(await fx.db.rows(`SELECT kept_on_reject::int FROM sync_runs WHERE id = $1`, [runId])).toEqual([
      { kept_on_reject: 2 },
    ]);
    expect(
      await fx.db.rows(`SELECT record_id FROM sync_rejects WHERE run_id = $1 ORDER BY record_id`, [runId]),
    ).toEqual([{ record_id: '10' }, { record_id: '11' }]);

    // Still bad in the next run: still kept, the mark moves to that run.
    const third = await sync();
    expect(third.run).toMatchObject({ status: 'succeeded', kept_on_reject: 2, deleted: 0, updated: 0 });
    expect((await row(10))!.rejected_in_run).toBe(String(third.run.id));

    // Valid again: record 10 as it was (the mark goes, nothing else changes), record 11 with a new value.
    fx.sim.setRecordsJson(
      listing((id) =>
        id === 11
          ? rec(id, { inventory_sales: '"7.75"' })
          : id === 12
            ? rec(id, { inventory_sales: '"99.5"' })
            : rec(id),
      ),
    );
    const fourth = await sync();
    expect(fourth.run).toMatchObject({ status: 'succeeded', rejected: 0, kept_on_reject: 0, updated: 1, deleted: 0 });
    expect(await row(10)).toMatchObject({
      inventory_sales: '10.25',
      rejected_in_run: null,
      run_id: before[100]!.run_id,
      deleted_at: null,
    });
    expect(await row(11)).toMatchObject({
      inventory_sales: '7.75',
      rejected_in_run: null,
      run_id: String(fourth.run.id),
    });
    // The versions: record 11 has its old value closed, record 10 none.
    expect(
      await fx.db.rows(
        `SELECT id::text, inventory_sales::text FROM bulk_wine_reconciliation_closed_versions WHERE id IN (10, 11)
        ORDER BY id`,
      ),
    ).toEqual([{ id: '11', inventory_sales: '11.25' }]);
    // And the run after that has nothing to do.
    expect((await sync()).run).toMatchObject({ status: 'succeeded', updated: 0, kept_on_reject: 0, unchanged: N });
  });

  it('is not counted by the mass-delete guard, while a record without a readable id is a reject with no row', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    expect((await sync()).run).toMatchObject({ status: 'succeeded', inserted: N });
    // Half the records go bad with their ids readable: far over SYNC_MAX_DELETE_RATIO=0.2, yet nothing is deleted.
    // Record 40 loses its id altogether: that row is deleted, as the listing no longer has it.
    fx.sim.setRecordsJson(
      listing((id) =>
        id === N ? rec(id, { id: '"forty"' }) : id % 2 === 0 ? rec(id, { inventory_sales: '"n/a"' }) : rec(id),
      ),
    );
    const r = await sync();
    expect(r.run, r.stderr).toMatchObject({
      status: 'succeeded',
      rejected: N / 2,
      kept_on_reject: N / 2 - 1,
      deleted: 1,
    });
    expect(await fx.db.rows(`SELECT count(*)::int AS n FROM bulk_wine_reconciliation_current`)).toEqual([{ n: N - 1 }]);
    expect(
      await fx.db.rows(`SELECT record_id FROM sync_rejects WHERE run_id = $1 AND errors::text LIKE '%"path": "id"%'`, [
        r.run.id,
      ]),
    ).toEqual([{ record_id: 'forty' }]);
    expect(r.stdout).not.toContain('mass');
  });
});
