/**
 * Upstream schema drift, through the CLI against the simulator and a real PostgreSQL: a renamed
 * field is refused before anything is written, named with its likely rename, and loads only with
 * --accept-schema-change; rejects are explained; new fields are announced once.
 */
import { describe, expect, it } from 'vitest';
import { MAX_STORED_REJECTS } from '../../src/run/pipeline.js';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, runCli } from '../support/harness.js';

const N = 40;
/** A record; `rename` maps a field name to the name the upstream now uses, `drop` leaves fields out. */
const rec = (
  id: number,
  {
    rename = {},
    nulls = [],
    extra = {},
  }: { rename?: Record<string, string>; nulls?: string[]; extra?: Record<string, unknown> } = {},
) => {
  const fields: Record<string, unknown> = {
    id,
    wpi: `WPI-${id}`,
    inventory_bulk_wine: `${id}.5`,
    inventory_finished_goods: '2.25',
    inventory_sales: `${id}.125`,
    vintage_forecast: null,
    vintage_make: '0.5',
    first_sale: '2022-01-02',
    ...extra,
  };
  for (const name of nulls) fields[name] = null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[rename[k] ?? k] = v;
  return JSON.stringify(out);
};
const listing = (make: (id: number) => string, n = N) => Array.from({ length: n }, (_, i) => make(i + 1));

const fx = useSyncFixture('drift', { simulator: { records: 10 }, each: true });
const cli = async (...args: string[]) => {
  const r = await runCli([...args, '--json'], fx.env);
  return { ...r, run: r.stdout ? JSON.parse(r.stdout) : undefined };
};
const sync = (...args: string[]) => cli('run', ...args);
/** Every row of the data tables with its tuple version: equal only if nothing was rewritten. */
const snapshot = async () => ({
  rows: await fx.db.rows('SELECT xmin::text, * FROM bulk_wine_reconciliation ORDER BY id'),
  closed: await fx.db.rows(
    'SELECT xmin::text, * FROM bulk_wine_reconciliation_closed_versions ORDER BY id, valid_from',
  ),
});

describe('disappearing-field guard', () => {
  it('refuses a renamed optional field, changes nothing, names both fields; --accept-schema-change loads it', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    expect((await sync()).run).toMatchObject({ status: 'succeeded', inserted: N });
    const before = await snapshot();

    fx.sim.setRecordsJson(listing((id) => rec(id, { rename: { inventory_sales: 'inventorySales' } })));
    const refused = await sync();
    expect(refused.code).toBe(1);
    expect(refused.run).toMatchObject({ status: 'failed', received: N, rejected: 0, inserted: 0, updated: 0 });
    const expected =
      `inventory_sales is missing from all ${N} records (present in 100% of run 1's)` +
      `; a new field inventorySales appeared in ${N} records — the upstream may have renamed it` +
      `. Nothing was loaded.` +
      ` If the change is intended, run again with --accept-schema-change` +
      `: inventory_sales then loads as NULL` +
      `, and the values of inventorySales are kept in extra_fields.`;
    expect(refused.run.error).toBe(expected);
    expect(refused.stderr).toContain(expected);
    expect(await snapshot()).toEqual(before);
    const [counts] = await fx.db.rows<{
      field_counts: { records: number; fields: Record<string, unknown>; unknown: Record<string, number> };
    }>('SELECT field_counts FROM sync_runs WHERE id = 2');
    expect(counts!.field_counts).toMatchObject({
      records: N,
      fields: { inventory_sales: { present: 0, non_null: 0 }, id: { present: N, non_null: N } },
      unknown: { inventorySales: N },
    });

    // A failed run is no baseline: refused again.
    expect((await sync()).run.error).toBe(expected);

    const accepted = await sync('--accept-schema-change');
    expect(accepted.code).toBe(0);
    expect(accepted.run).toMatchObject({ status: 'succeeded', updated: N, unchanged: 0, inserted: 0 });
    expect(
      await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation WHERE inventory_sales IS NOT NULL'),
    ).toEqual([{ n: 0 }]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_closed_versions')).toEqual([
      { n: N },
    ]);
    // Every value of the renamed field is kept, exactly as sent, under its new name.
    const kept = await fx.db.rows<{ id: string; v: string }>(
      `SELECT id::text, extra_fields->>'inventorySales' AS v FROM bulk_wine_reconciliation b ORDER BY b.id`,
    );
    expect(kept).toEqual(Array.from({ length: N }, (_, i) => ({ id: String(i + 1), v: `${i + 1}.125` })));

    // The accepted run is the new baseline: the same listing passes without the flag.
    expect((await sync()).run).toMatchObject({ status: 'succeeded', unchanged: N });
  });

  it('refuses a field whose values all became null, and replay honours --accept-schema-change', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    await sync();
    fx.sim.setRecordsJson(listing((id) => rec(id, { nulls: ['vintage_make'] })));
    const accepted = await sync('--accept-schema-change');
    expect(accepted.run).toMatchObject({ status: 'succeeded', updated: N });
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    expect((await sync()).run).toMatchObject({ status: 'succeeded', updated: N });
    const before = await snapshot();

    // Replaying run 2's listing (vintage_make null everywhere) after run 3 (values back) is a drift.
    const refused = await cli('replay', '--run', '2');
    expect(refused.code).toBe(1);
    expect(refused.run.error).toContain(
      `vintage_make has no value in any of the ${N} records` +
        ` (present in 100%, but null or empty; it had a value in 100% of run 3's)`,
    );
    expect(await snapshot()).toEqual(before);
    const replayed = await cli('replay', '--run', '2', '--accept-schema-change');
    expect(replayed.code).toBe(0);
    expect(replayed.run).toMatchObject({ status: 'succeeded', trigger: 'replay', updated: N });
  });

  it('does not trip when a field is null on a few records, or on a first run', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id, { rename: { inventory_sales: 'inventorySales' } })));
    expect((await sync()).run).toMatchObject({ status: 'succeeded', inserted: N, error: null });
    fx.sim.setRecordsJson(
      listing((id) =>
        rec(id, { nulls: id <= 3 ? ['inventory_bulk_wine'] : [], rename: { inventory_sales: 'inventorySales' } }),
      ),
    );
    expect((await sync()).run).toMatchObject({ status: 'succeeded', updated: 3, error: null });
  });

  it('--help lists --accept-schema-change for run and replay', async () => {
    for (const command of ['run', 'replay']) {
      const help = await runCli([command, '--help'], {});
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^usage: wine-recon-sync ${command} [^\\n]*\\[--accept-schema-change\\]`));
      expect(help.stdout).toMatch(/^ {2}--accept-schema-change +\S/m);
    }
  });

  it('a dry run is checked but is no baseline', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    await sync();
    fx.sim.setRecordsJson(listing((id) => rec(id, { rename: { first_sale: 'firstSale' } })));
    expect((await sync('--dry-run')).run).toMatchObject({ status: 'failed', dry_run: true });
    expect((await sync('--dry-run', '--accept-schema-change')).run).toMatchObject({
      status: 'succeeded',
      dry_run: true,
      updated: N,
    });
    expect((await sync()).run.error).toContain(
      "first_sale is missing from all 40 records (present in 100% of run 1's); a new field firstSale",
    );
  });
});

describe('rejects explained', () => {
  it('a renamed id: every record rejected, the error names the reason and record_id', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    await sync();
    const before = await snapshot();
    fx.sim.setRecordsJson(listing((id) => rec(id, { rename: { id: 'record_id' } })));
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.run).toMatchObject({ status: 'failed', received: N, rejected: N, inserted: 0 });
    expect(r.run.error).toBe(
      `${N} of ${N} records rejected (100.0%): id: required (${N})` +
        `; new fields in this listing: record_id (${N})` +
        `. Above SYNC_MAX_REJECT_RATIO=0.05, so nothing was loaded (see sync_rejects for run 2)`,
    );
    expect(await snapshot()).toEqual(before);
  });

  it('an all-rejected listing larger than the stored cap: all counted, the first MAX_STORED_REJECTS stored, reasons named', async () => {
    const total = MAX_STORED_REJECTS + 123;
    fx.sim.setRawBody(
      `{"message":"ok","count":${total}` +
        `,"bulk_wine_reconciliation":[${Array(total).fill('{}').join(',')}]` +
        `,"recordCount":${total}}`,
    );
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.run).toMatchObject({ status: 'failed', received: total, rejected: total, inserted: 0 });
    expect(r.run.error).toBe(
      `${total} of ${total} records rejected (100.0%): id: required (${total}); wpi: required (${total})` +
        `. Above SYNC_MAX_REJECT_RATIO=0.05, so nothing was loaded (see sync_rejects for run 1)`,
    );
    const [stored] = await fx.db.rows<{ n: number; first: number; last: number }>(
      'SELECT count(*)::int AS n, min(position)::int AS first, max(position)::int AS last FROM sync_rejects',
    );
    expect(stored).toEqual({ n: MAX_STORED_REJECTS, first: 0, last: MAX_STORED_REJECTS - 1 });
    const [one] = await fx.db.rows<{ raw: string; errors: unknown }>(
      'SELECT raw, errors FROM sync_rejects WHERE position = 0',
    );
    expect(one).toEqual({
      raw: '{}',
      errors: [
        { path: 'id', message: 'required' },
        { path: 'wpi', message: 'required' },
      ],
    });
  });
});

describe('new fields announced', () => {
  it('warns about a field the last successful run did not see, once, and shows it in the summary', async () => {
    const ctx = inProcess(fx.env);
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    expect((await ctx.run()).newFields).toEqual([]);
    fx.sim.setRecordsJson(listing((id) => rec(id, { extra: { colour: 'red' } })));
    const first = await ctx.run();
    expect(first.run.status).toBe('succeeded');
    expect(first.newFields).toEqual([
      { name: 'colour', count: N, kept: { shownAs: `${fx.db.schema}_bi.reconciliation.colour`, note: null } },
    ]);
    const second = await ctx.run();
    expect(second.newFields).toEqual([]);
    const warnings = ctx.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.level === 40 && String(l.msg).startsWith('new field'));
    expect(warnings.map((w) => [w.runId, w.msg])).toEqual([
      [2, `new field colour in ${N} records: kept in extra_fields, shown as ${fx.db.schema}_bi.reconciliation.colour`],
    ]);

    fx.sim.setRecordsJson(listing((id) => rec(id, { extra: { colour: 'red', grape: 'x' } })));
    const summary = await runCli(['run'], fx.env);
    expect(summary.code).toBe(0);
    expect(summary.stdout).toContain(
      `new field grape in ${N} records: kept in extra_fields, shown as ${fx.db.schema}_bi.reconciliation.grape`,
    );
    const dropped = await runCli(['run'], { ...fx.env, SYNC_EXTRA_FIELDS: 'drop' });
    fx.sim.setRecordsJson(listing((id) => rec(id, { extra: { colour: 'red', grape: 'x', body: 'full' } })));
    const droppedNew = await runCli(['run'], { ...fx.env, SYNC_EXTRA_FIELDS: 'drop' });
    expect([dropped.code, droppedNew.code]).toEqual([0, 0]);
    expect(droppedNew.stdout).toContain(`new field body in ${N} records: not loaded`);
  });
});
