/**
 * The BI rounding count is kept up from the rows a run changed, and stays exact: after every run of
 * a sequence (first load, unchanged, updates that add and remove rounded and overflowing values,
 * inserts, deletes, restorations, a dry run, a scale change, a write outside a run), the count the
 * run stored in sync_runs equals a full recount of the live rows, and the log says how the run got
 * it: `written` (a first load, from its rows as it wrote them), `carried`, `incremental` (without the
 * full count's scan of every live row) or `full`.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DECIMALS } from '../../bench/realistic-records.js';
import { loadStatements } from '../../src/db/statements.js';
import { overflowThreshold } from '../../src/load/bi-rounding.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';
import { listing } from '../support/listing.js';

const FULL = loadStatements('load/bi.sql', ['count_bi_rounding']).count_bi_rounding;

/** A decimal value by what the BI views do to it at scale 10 (and 12). */
const VALUES = {
  plain: '1.5',
  /** 12 fractional digits: rounded at scale 10, shown exactly at 12. */
  r12: '1.123456789012',
  /** 16 fractional digits: rounded at both scales. */
  r16: '-7.1234567890123456',
  /** 31 integer digits: NULL in the BI views at any scale. */
  over: '1234567890123456789012345678901',
  null: 'null',
} as const;
type Kind = keyof typeof VALUES;

/** A compact record (so the unchanged-record shortcut fingerprints it), its five decimals by kind. */
const record = (id: number, kinds: readonly Kind[]) => {
  const decimals = DECIMALS.map((d, i) => `"${d}":${VALUES[kinds[i] ?? 'plain']}`).join(',');
  return `{"id":${id},"wpi":"W${id}",${decimals},"first_sale":"2021-03-04"}`;
};

/** Records 1..40 as first loaded: a mix of every kind. */
function base(id: number): Kind[] {
  return [
    id % 3 === 0 ? 'r12' : 'plain',
    id % 4 === 0 ? 'null' : 'plain',
    id % 5 === 0 ? 'r16' : 'plain',
    id % 7 === 0 ? 'over' : 'plain',
    id % 11 === 0 ? 'r12' : 'plain',
  ];
}

describe('the incremental BI rounding count', () => {
  const fx = useSyncFixture('bi_incremental');
  let listingNo = 0;

  /** One CLI run of `records`: how it counted (from its log line), what it stored, and a full recount. */
  async function sync(records: Map<number, Kind[]>, options: { scale?: number; dryRun?: boolean } = {}) {
    const scale = options.scale ?? 10;
    const path = join(fx.dir, `listing-${++listingNo}.json`);
    await writeFile(path, listing([...records].map(([id, kinds]) => record(id, kinds))));
    const args = ['run', '--from-file', path, ...(options.dryRun ? ['--dry-run'] : [])];
    const r = await runCli(args, fx.envWith({ LOG_LEVEL: 'debug', SYNC_BI_SCALE: String(scale) }));
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const counted = lines.filter((l) => l.biCount !== undefined);
    expect(counted).toHaveLength(1);
    const statements = lines
      .map((l) => l.statement)
      .filter((s) => typeof s === 'string' && s.startsWith('count_bi_rounding'));
    const [stored] = await fx.db.rows<{ id: number; bi_scale: number; rounded: number; overflow: number }>(
      'SELECT id::int, bi_scale, bi_rounded::int AS rounded, bi_overflow::int AS overflow FROM sync_runs ORDER BY id DESC LIMIT 1',
    );
    const [full] = await fx.db.rows<{ rounded: number; overflow: number }>(
      `SELECT rounded::int, overflow::int FROM (${FULL}) c`,
      [scale, overflowThreshold(scale)],
    );
    return { line: counted[0]!, statements, stored: stored!, full: full! };
  }

  /** A run that commits: its stored count is a full recount's, and it got it `how`. */
  async function expectExact(
    records: Map<number, Kind[]>,
    how: 'written' | 'carried' | 'incremental' | 'full',
    scale = 10,
  ) {
    const run = await sync(records, { scale });
    expect(run.line.biCount, JSON.stringify(run.line)).toBe(how);
    expect({ scale: run.stored.bi_scale, rounded: run.stored.rounded, overflow: run.stored.overflow }).toEqual({
      scale,
      ...run.full,
    });
    expect({ rounded: run.line.rounded, overflow: run.line.overflow }).toEqual(run.full);
    // Only a full count scans every live row; the incremental one reads the changed rows, and a
    // first load without duplicate ids reads none.
    expect(run.statements).toEqual(
      { written: [], carried: [], incremental: ['count_bi_rounding_changes'], full: ['count_bi_rounding'] }[how],
    );
    return run;
  }

  it('equals a full recount after every run, counting in full only when the last count cannot be trusted', async () => {
    const rows = new Map<number, Kind[]>(Array.from({ length: 40 }, (_, i) => [i + 1, base(i + 1)]));
    const seen: Array<{ rounded: number; overflow: number }> = [];
    const keep = (run: { full: { rounded: number; overflow: number } }) => seen.push(run.full);

    // A first load is all inserts: counted as its rows were written.
    const first = await expectExact(rows, 'written');
    expect(first.line.countedBy).toBe(1);
    keep(first);
    // Nothing changed: the last count carried forward.
    const carried = await expectExact(rows, 'carried');
    expect(carried.line.countedBy).toBe(1);

    // Updates that add rounded and overflowing values and take others away; inserts; deletes.
    rows.set(1, ['r16', 'over', 'r12', 'plain', 'plain']);
    rows.set(3, ['plain', 'plain', 'plain', 'plain', 'plain']); // loses its r12
    rows.set(7, ['plain', 'plain', 'plain', 'plain', 'plain']); // loses its overflow
    rows.set(10, ['over', 'over', 'r16', 'null', 'r12']);
    rows.set(15, ['null', 'null', 'null', 'null', 'null']);
    for (const id of [36, 39, 40]) rows.delete(id); // each rounded something
    for (let id = 41; id <= 44; id++) rows.set(id, ['r12', id % 2 === 0 ? 'over' : 'plain', 'r16', 'plain', 'plain']);
    const changed = await expectExact(rows, 'incremental');
    expect(changed.line.countedFrom).toBe(2);
    keep(changed);

    // Restorations with other values than they had, and one more update.
    rows.set(36, ['over', 'plain', 'plain', 'plain', 'plain']);
    rows.set(39, ['plain', 'plain', 'plain', 'plain', 'plain']);
    rows.set(40, ['r16', 'r16', 'r16', 'r16', 'r16']);
    rows.set(2, ['r12', 'r12', 'plain', 'plain', 'plain']);
    keep(await expectExact(rows, 'incremental'));

    // A dry run commits nothing; the next run goes on from the last committed count.
    const dry = new Map(rows);
    dry.set(5, ['over', 'over', 'over', 'over', 'over']);
    dry.delete(6);
    const dryRun = await sync(dry, { dryRun: true });
    expect(dryRun.line.biCount).toBe('incremental');
    rows.set(8, ['r16', 'plain', 'plain', 'plain', 'over']);
    rows.delete(9);
    keep(await expectExact(rows, 'incremental'));

    // Another scale: the last count is of another rule, so every live row is counted.
    rows.set(11, ['plain', 'plain', 'plain', 'plain', 'plain']);
    keep(await expectExact(rows, 'full', 12));
    rows.set(12, ['r12', 'r16', 'over', 'plain', 'plain']);
    rows.delete(13);
    keep(await expectExact(rows, 'incremental', 12));

    // A write outside a run: the last count no longer describes the table.
    await fx.db.rows(
      `UPDATE bulk_wine_reconciliation SET inventory_sales = ${VALUES.r16}, vintage_make = ${VALUES.over}
      WHERE id IN (14, 16, 17)`,
    );
    rows.set(18, ['r16', 'plain', 'plain', 'plain', 'plain']);
    keep(await expectExact(rows, 'full', 12));
    rows.set(19, ['over', 'plain', 'plain', 'plain', 'plain']);
    rows.set(45, ['r16', 'r16', 'plain', 'plain', 'plain']);
    keep(await expectExact(rows, 'incremental', 12));
    // Only a re-sync of the same listing after that: carried.
    keep(await expectExact(rows, 'carried', 12));

    // The sequence moved both counts both ways, so that a wrong sign or a missed side shows.
    expect(new Set(seen.map((s) => s.rounded)).size).toBeGreaterThan(3);
    expect(new Set(seen.map((s) => s.overflow)).size).toBeGreaterThan(3);
  });
});
