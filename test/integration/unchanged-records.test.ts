/**
 * The unchanged-record shortcut gives exactly what a full comparison gives. The same sequence of
 * listings is loaded into two schemas: in one the stored fingerprints are used, in the other they
 * are dropped before every run (so every record is transformed and compared, as before the
 * shortcut). Counts, rejects, rows and history must be identical, run by run.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, syncEnv, type TestDb } from '../support/harness.js';
import { listing } from '../support/listing.js';

function rec(id: number | string, value: string, extra = ''): string {
  const idText = typeof id === 'string' ? `"${id}"` : String(id);
  return (
    `{"id":${idText},"wpi":"W${id}","inventory_bulk_wine":${value}` +
    `,"inventory_finished_goods":null,"inventory_sales":"0.50"` +
    `,"vintage_forecast":1.5e-7,"vintage_make":-0,"first_sale":"2021-03-04T00:00:00Z"${extra}}`
  );
}

const BIG = '1000000000000001';
const BASE = [
  rec(1, '1.10'),
  '{"id": 2, "wpi": "W2", "inventory_bulk_wine": 2.5}', // whitespace: never fingerprinted, always compared
  rec('3', '3'),
  rec(4, '4', ',"bond":"x"'), // an unknown field, reported also when skipped
  rec(5, '5'),
  rec(6, '6'),
  rec(7, '7'),
  rec(8, '8'),
  rec(9, '9'),
  rec(10, '""'), // present without a value, in the field counts too
  rec(11, '"11e2"'),
  rec(12, 'null'),
  rec(13, 'true'), // invalid
  rec(BIG, '1'),
];

/** Earlier copies of ids 5-8 in every combination of skipped (same bytes) and staged (changed). */
const CHANGED = [
  rec(1, '1.2'), // changed
  // 2 is missing: deleted
  rec('3', '3'),
  rec(4, '4', ',"bond":"x"'),
  rec(5, '5'), // skipped, then replaced by a changed copy
  rec(6, '66'), // changed, then replaced by a skipped copy
  rec(7, '7'), // skipped twice
  rec(8, '88'), // staged, staged, then skipped
  rec(8, '888'),
  rec(9, '"nine"'), // invalid, its id readable: its row is kept as it was
  rec(10, '""'),
  rec(11, '"11e2"'),
  rec(12, 'null'),
  rec(13, '13'), // now valid: inserted
  rec(20, '20'), // new
  rec(5, '55'),
  rec(6, '6'),
  rec(7, '7'),
  rec(8, '8'),
  rec(BIG, '1'),
];

interface Loaded {
  run: Record<string, unknown>;
  skipped: number;
  /** Of those, skipped before they were read (counted by their stored shape). */
  unread: number;
}

describe('unchanged-record shortcut', () => {
  const fx = useSyncFixture('skip', { db: false });
  let fast: TestDb;
  let full: TestDb;
  /** The schemas where every record is compared. */
  const compareAll = new Set<TestDb>();

  beforeAll(async () => {
    fast = await fx.createDb('skip_fast');
    full = await fx.createDb('skip_full');
    compareAll.add(full);
  });

  async function load(db: TestDb, name: string, records: string[], args: string[] = []): Promise<Loaded> {
    if (compareAll.has(db)) await db.rows('TRUNCATE bulk_wine_reconciliation_source_hash');
    const path = join(fx.dir, `${name}.json`);
    await writeFile(path, listing(records));
    const env = syncEnv(db, undefined, { SYNC_MAX_DELETE_RATIO: '1', SYNC_MAX_REJECT_RATIO: '0.5' });
    const result = await runCli(['run', '--from-file', path, '--json', ...args], env);
    expect(result.code, result.stderr).toBe(0);
    const staged = result.stderr
      .split('\n')
      .filter((line) => line.includes('listing parsed and staged'))
      .map((line) => JSON.parse(line) as { unchangedSkipped: number; unread: number });
    return { run: JSON.parse(result.stdout), skipped: staged[0]!.unchangedSkipped, unread: staged[0]!.unread };
  }

  /** Everything a run leaves, with run ids as their ordinal in the schema. */
  async function state(db: TestDb) {
    const ordinal = `(SELECT count(*) FROM sync_runs r WHERE r.id <= x.run_id)`;
    return {
      runs: await db.rows(
        `SELECT dry_run, status, received::int, rejected::int, duplicates::int, inserted::int, updated::int,
          unchanged::int,
                deleted::int, restored::int, kept_on_reject::int, unknown_fields, field_counts
         FROM sync_runs ORDER BY id`,
      ),
      rejects: await db.rows(
        `SELECT ${ordinal} AS run, position, record_id, errors, raw FROM sync_rejects x ORDER BY run_id, position`,
      ),
      rows: await db.rows(
        `SELECT id, wpi, inventory_bulk_wine::text, inventory_finished_goods::text, inventory_sales::text,
          vintage_forecast::text,
                vintage_make::text, first_sale::text, deleted_at IS NULL AS live, ${ordinal} AS run,
                changed_at = first_seen_at AS never_changed
         FROM bulk_wine_reconciliation x ORDER BY id`,
      ),
      history: await db.rows(
        `SELECT id, wpi, inventory_bulk_wine::text, valid_to IS NULL AS current, ${ordinal} AS run
         FROM bulk_wine_reconciliation_history x ORDER BY id, valid_from, valid_to NULLS LAST`,
      ),
    };
  }

  it('gives the same counts, rejects, rows and history as comparing every record', async () => {
    const steps: Array<{ name: string; records: string[]; args?: string[]; outside?: string }> = [
      { name: 'first', records: BASE },
      { name: 'unchanged', records: BASE },
      { name: 'dry', records: CHANGED, args: ['--dry-run'] },
      { name: 'after-dry', records: BASE },
      { name: 'changed', records: CHANGED },
      { name: 'restored', records: BASE },
      // A row changed behind the program's back must be compared (and put right) again.
      {
        name: 'outside',
        records: BASE,
        outside: `UPDATE bulk_wine_reconciliation SET wpi = 'hand-edited' WHERE id = 3`,
      },
      { name: 'again', records: BASE },
    ];
    const skipped: number[] = [];
    const unread: number[] = [];
    for (const step of steps) {
      for (const db of [fast, full]) {
        if (step.outside) await db.rows(step.outside);
        const loaded = await load(db, `${db.schema}-${step.name}`, step.records, step.args);
        if (db === fast) {
          skipped.push(loaded.skipped);
          unread.push(loaded.unread);
        } else expect(loaded.skipped, step.name).toBe(0);
      }
      expect(await state(fast), step.name).toEqual(await state(full));
    }
    // The shortcut was really taken: every record stored with a fingerprint whose bytes came
    // again (in BASE, all but the one with whitespace, the invalid one and the 16-digit id), all
    // but the edited row after the outside edit; the dry run changed no fingerprint.
    expect(skipped).toEqual([0, 11, 10, 11, 10, 8, 10, 11]);
    // Most without being read, counted by the shape stored with their fingerprint: all but the
    // quoted id "3" (only `{"id":` and digits is recognized before reading), edited in 'outside'.
    expect(unread).toEqual([0, 10, 9, 10, 9, 7, 10, 10]);
    const runs = (await state(fast)).runs;
    expect(runs[1]).toMatchObject({
      received: 14,
      rejected: 1,
      unchanged: 13,
      inserted: 0,
      updated: 0,
      unknown_fields: ['bond'],
    });
    expect(runs[4]).toMatchObject({
      received: 19,
      duplicates: 5,
      inserted: 2,
      updated: 2,
      deleted: 1,
      kept_on_reject: 1,
    });
    // 13 is invalid again (kept as it was), 20 is gone (deleted).
    expect(runs[5]).toMatchObject({ restored: 1, deleted: 1, kept_on_reject: 1 });
    expect(runs[6]).toMatchObject({ updated: 1 });
  });

  /**
   * `n` rows, then the same with every `changed`th changed, every `gone`th gone, every `twice`th
   * sent again (`again` makes the second copy) and 30 new ids at the end.
   */
  function spread(
    n: number,
    { changed, gone, twice, again }: { changed: number; gone: number; twice: number; again: (k: number) => string },
  ) {
    const first = Array.from({ length: n }, (_, k) => rec(k + 1, `${k}.25`));
    const second: string[] = [];
    for (let k = 0; k < n; k++) {
      if ((k + 1) % gone === 0) continue;
      second.push((k + 1) % changed === 0 ? rec(k + 1, `${k}.5`) : first[k]!);
      if ((k + 1) % twice === 0) second.push(again(k));
    }
    for (let k = 0; k < 30; k++) second.push(rec(n + 1 + k, '1'));
    return { first, second };
  }

  /**
   * Two new schemas, one with every record compared, loaded with each listing in turn and alike after each; the runs
   * and what the shortcut skipped, per listing.
   */
  async function alike(name: string, listings: Array<[string, string[]]>) {
    const fastDb = await fx.createDb(`skip_fast_${name}`);
    const fullDb = await fx.createDb(`skip_full_${name}`);
    compareAll.add(fullDb);
    const skipped: number[] = [];
    const unread: number[] = [];
    for (const [step, records] of listings) {
      for (const db of [fastDb, fullDb]) {
        const loaded = await load(db, `${db.schema}-${step}`, records);
        if (db === fastDb) {
          skipped.push(loaded.skipped);
          unread.push(loaded.unread);
        }
      }
      expect(await state(fastDb), step).toEqual(await state(fullDb));
    }
    return { runs: (await state(fastDb)).runs, skipped, unread };
  }

  it('gives the same on a table of several thousand rows, with the listing in another order than the ids', async () => {
    // The live rows are read back by id from a file of 1,024-row blocks (src/fingerprints/live-file.ts):
    // a shuffled listing jumps between blocks, and copies of an id sit far apart.
    const n = 5000;
    // Every 50th row changed, every 97th gone, every 101st sent twice (the second copy changed
    // when odd), 30 new ids; then shuffled with a fixed permutation.
    const { first, second } = spread(n, {
      changed: 50,
      gone: 97,
      twice: 101,
      again: (k) => (k % 2 === 1 ? rec(k + 1, '7') : rec(k + 1, `${k}.25`)),
    });
    let lcg = 7;
    for (let i = second.length - 1; i > 0; i--) {
      lcg = (lcg * 1103515245 + 12345) % 2147483648;
      const j = lcg % (i + 1);
      [second[i], second[j]] = [second[j]!, second[i]!];
    }
    const { runs, skipped, unread } = await alike('big', [
      ['first', first],
      ['shuffled', second],
      ['again', second],
    ]);
    // The last copy of an id wins: updated are the old ids whose last copy differs from the first load.
    const last = new Map(second.map((r) => [Number(/"id":(\d+)/.exec(r)![1]), r]));
    const updated = [...last].filter(([id, r]) => id <= n && r !== first[id - 1]).length;
    expect(updated).toBeGreaterThan(99);
    expect(runs[1]).toMatchObject({ inserted: 30, updated, deleted: 51, duplicates: 49 });
    expect(runs[2]).toMatchObject({ inserted: 0, updated: 0, deleted: 0, duplicates: 49 });
    expect(skipped[1]).toBeGreaterThan(4500);
    // Unread but for those a push of the parser cut in two (read as they come).
    expect(unread[2]).toBeGreaterThan(0.9 * skipped[2]!);
  });

  it('gives the same when the parse follows the read of the live rows: 20,000 rows, the listing in id order', async () => {
    // Past 4,096 rows the parse no longer waits for the whole read (fingerprints/shortcut.ts pace):
    // it decides each record once the read has passed its id, and hands on (to be compared) any
    // whose row it has not reached yet, such as the new ids at the end.
    const { first, second } = spread(20_000, { changed: 100, gone: 997, twice: 1001, again: (k) => rec(k + 1, '7') });
    const { runs, skipped, unread } = await alike('order', [
      ['first', first],
      ['changed', second],
      ['again', second],
    ]);
    expect(runs[1]).toMatchObject({ inserted: 30, updated: 219, deleted: 20, duplicates: 19 });
    expect(runs[2]).toMatchObject({ inserted: 0, updated: 0, deleted: 0, duplicates: 19 });
    expect(skipped[2]).toBeGreaterThan(19_000);
    expect(unread[2]).toBeGreaterThan(0.9 * skipped[2]!);
  });
});
