/**
 * A first load counts what the BI views round from its rows as it writes them (`written`), not by
 * a scan of the table afterwards, and the count is exact: it equals a full recount
 * (count_bi_rounding, run afterwards) with awkward decimals on both paths (the byte-level writer
 * and the zod path, which handles the records the writer declines), rejects that carry rounded
 * values, and duplicate ids whose copies differ in what the views do to them: settled within the
 * id bitmap, beyond it, and across the two paths, the table's copy winning or losing.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadStatements } from '../../src/db/statements.js';
import { DECIMAL_FIELDS } from '../../src/fields.js';
import { overflowThreshold } from '../../src/load/bi-rounding.js';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, syncEnv, type TestDb } from '../support/harness.js';
import { listing } from '../support/listing.js';

const FULL = loadStatements('load/bi.sql', ['count_bi_rounding']).count_bi_rounding;
/** Beyond the run's id bitmap (2^27): every copy of it is set aside. */
const PAST_BITMAP = 2 ** 27 + 5;
const BIG = '9000000000000000001';

/** Decimals by what the BI views do to them at scales 0, 10 and 20 (JSON texts). */
const D = {
  plain: '1.5',
  /** 25 fraction digits: rounded at every scale. */
  rounded: '0.1234567890123456789012345',
  /** 31 integer digits: NULL in the views at every scale. */
  over: '1000000000000000000000000000000',
  /** 1e-30 once normalized: rounded. */
  tiny: '1e-30',
  /** The overflow threshold at scale 10 exactly; rounded at 0, NULL at 20. */
  edge10: '999999999999999999.99999999995',
  /** Just below it. */
  below10: '999999999999999999.99999999994999',
  /** Trailing zeros and a negative zero: stored canonical, so shown as they are. */
  zeros: '"1.500000000000000000000000"',
  negZero: '-0.000000000000000000000000',
  exponentOver: '"9.99999999999999999999999999995E27"',
  null: 'null',
  /** Not a decimal: the record is rejected. */
  bad: '"abc"',
} as const;
type Kind = keyof typeof D;

/** A compact record: the byte-level writer takes it. Its decimals by kind, in catalogue order. */
function compact(id: number | string, kinds: readonly Kind[], firstSale = '"2021-03-04"'): string {
  const idText = typeof id === 'string' ? `"${id}"` : String(id);
  const decimals = DECIMAL_FIELDS.map((f, i) => `"${f.name}":${D[kinds[i] ?? 'null']}`).join(',');
  return `{"id":${idText},"wpi":"W${id}",${decimals},"first_sale":${firstSale}}`;
}
/** Whitespace between tokens: the writer declines it, the zod path takes it (after the chunk's compact records). */
function spaced(id: number | string, kinds: readonly Kind[]): string {
  const idText = typeof id === 'string' ? `"${id}"` : String(id);
  const decimals = DECIMAL_FIELDS.map((f, i) => `"${f.name}": ${D[kinds[i] ?? 'null']}`).join(', ');
  return `{ "id": ${idText}, "wpi": "S${id}", ${decimals} }`;
}

const LISTING = [
  // Awkward values on both paths.
  compact(1, ['rounded', 'over', 'tiny', 'edge10', 'below10']),
  compact(2, ['zeros', 'negZero', 'exponentOver', 'plain', 'null']),
  spaced(3, ['rounded', 'rounded', 'over', 'edge10', 'tiny']),
  spaced(4, ['below10', 'zeros', 'negZero', 'exponentOver', 'plain']),
  // Rejects carrying rounded and overflowing values: never counted.
  compact(5, ['rounded', 'over', 'tiny', 'edge10', 'rounded'], '"2021-02-30"'),
  spaced(6, ['over', 'over', 'rounded', 'rounded', 'bad']),
  // Duplicate ids within the bitmap. 10: the table's copy (rounded, overflowing) loses to a plain one.
  compact(10, ['rounded', 'over', 'over', 'tiny', 'edge10']),
  compact(11, ['plain', 'plain', 'null', 'plain', 'plain']),
  compact(10, ['plain', 'plain', 'plain', 'null', 'plain']),
  // 11: a plain table copy loses to a rounded and overflowing one on the zod path.
  spaced(11, ['over', 'rounded', 'tiny', 'over', 'exponentOver']),
  // 12: the zod-path copy comes first in the listing but is handled after the compact one, which wins.
  spaced(12, ['over', 'over', 'over', 'over', 'over']),
  compact(12, ['rounded', 'plain', 'plain', 'plain', 'plain']),
  // 13: the later copy is a reject, so the table's rounded copy stays.
  compact(13, ['rounded', 'rounded', 'over', 'plain', 'plain']),
  compact(13, ['plain', 'plain', 'plain', 'plain', 'plain'], '"not a date"'),
  // Beyond the bitmap and beyond a JS number: every copy set aside, the last wins.
  compact(PAST_BITMAP, ['rounded', 'rounded', 'rounded', 'rounded', 'rounded']),
  compact(PAST_BITMAP, ['over', 'plain', 'plain', 'plain', 'plain']),
  spaced(PAST_BITMAP, ['tiny', 'over', 'edge10', 'null', 'null']),
  compact(BIG, ['over', 'over', 'plain', 'plain', 'plain']),
  spaced(BIG, ['rounded', 'plain', 'plain', 'plain', 'plain']),
  // 10 once more, now the overflowing copy last: it wins after all.
  compact(10, ['edge10', 'over', 'rounded', 'plain', 'null']),
];

describe('the BI rounding count of a first load', () => {
  const fx = useSyncFixture('bi_first_load', { db: false });

  /**
   * A first load of `records` into a schema of its own, at `scale`: the log line, the count statements, the stored
   * count and a full recount.
   */
  async function firstLoad(records: string[], scale: number) {
    const db: TestDb = await fx.createDb(`bi_first_${scale}`);
    const path = join(fx.dir, `${db.schema}.json`);
    await writeFile(path, listing(records));
    const ctx = inProcess(syncEnv(db, undefined, { SYNC_MAX_REJECT_RATIO: '0.5', SYNC_BI_SCALE: String(scale) }));
    const outcome = await ctx.run({ source: { kind: 'file', path }, trigger: 'file' });
    expect(outcome.run.status, String(outcome.run.error)).toBe('succeeded');
    const lines = ctx.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const counted = lines.filter((l) => l.biCount !== undefined);
    expect(counted).toHaveLength(1);
    const statements = lines
      .map((l) => l.statement)
      .filter((s) => typeof s === 'string' && s.startsWith('count_bi_rounding'));
    const [stored] = await db.rows<{ id: number; bi_scale: number; rounded: number; overflow: number }>(
      'SELECT id::int, bi_scale, bi_rounded::int AS rounded, bi_overflow::int AS overflow FROM sync_runs ORDER BY id DESC LIMIT 1',
    );
    const [full] = await db.rows<{ rounded: number; overflow: number }>(
      `SELECT rounded::int, overflow::int FROM (${FULL}) c`,
      [scale, overflowThreshold(scale)],
    );
    return { run: outcome.run, line: counted[0]!, statements, stored: stored!, full: full! };
  }

  for (const scale of [10, 0, 20]) {
    it(`is counted as written, without a scan, and equals a full recount (scale ${scale})`, async () => {
      const load = await firstLoad(LISTING, scale);
      expect(load.run).toMatchObject({ received: 20, rejected: 3, duplicates: 7, inserted: 10 });
      expect(load.line).toMatchObject({ biCount: 'written', countedBy: load.stored.id });
      expect(load.line.countedFrom).toBeUndefined();
      // No count over every live row: only the settled ids, before and after their winners are written.
      expect(load.statements).toEqual(['count_bi_rounding_settled', 'count_bi_rounding_settled']);
      expect({ scale: load.stored.bi_scale, rounded: load.stored.rounded, overflow: load.stored.overflow }).toEqual({
        scale,
        ...load.full,
      });
      expect({ rounded: load.line.rounded, overflow: load.line.overflow }).toEqual(load.full);
      expect(load.full.rounded).toBeGreaterThan(3);
      expect(load.full.overflow).toBeGreaterThan(3);
    });
  }

  it('without duplicate ids reads nothing back to count', async () => {
    const records = LISTING.filter((_, k) => k < 6);
    const load = await firstLoad(records, 10);
    expect(load.run).toMatchObject({ received: 6, rejected: 2, duplicates: 0, inserted: 4 });
    expect(load.line.biCount).toBe('written');
    expect(load.statements).toEqual([]);
    expect({ rounded: load.stored.rounded, overflow: load.stored.overflow }).toEqual(load.full);
    expect(load.full).toEqual({ rounded: 7, overflow: 6 });
  });
});
