/**
 * A first load writes each row once: into a table with no row at all, rows and their
 * fingerprints are COPYed straight into their tables, and only the ids the bitmap saw twice (or
 * could not hold) are settled. The result must be the staging path's, exactly: the same listing
 * is loaded into two schemas, one empty (the first-load path) and one holding a single
 * soft-deleted row of an id the listings never have (not empty, so the staging path, which leaves
 * that row alone). Counts, rows, rejects, history and fingerprints must be identical, and so must
 * the next run, which skips every record.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, syncEnv, type TestDb } from '../support/harness.js';
import { listing } from '../support/listing.js';

/** Beyond the run's id bitmap (2^27): every copy of it is set aside. */
const PAST_BITMAP = 2 ** 27 + 5;
const BIG = '9000000000000000001';
/** The staging schema's one row: soft-deleted, an id no listing has. */
const SEED_ID = '999999999999';

function rec(id: number | string, wpi: string, value = '1.50'): string {
  const idText = typeof id === 'string' ? `"${id}"` : String(id);
  return (
    `{"id":${idText},"wpi":"${wpi}","inventory_bulk_wine":${value}` +
    `,"inventory_sales":"0.50","first_sale":"2021-03-04"}`
  );
}
/** Whitespace between tokens: the zod path, handled after the fast-path records of its chunk. */
function spaced(id: number | string, wpi: string, value = '2'): string {
  const idText = typeof id === 'string' ? `"${id}"` : String(id);
  return `{"id": ${idText}, "wpi": "${wpi}", "inventory_bulk_wine": ${value}}`;
}

const DUPLICATES = [
  rec(1, 'one-a'),
  rec(2, 'two'),
  rec(1, 'one-b', '"1.60"'), // wins over one-a ...
  rec(3, 'three-a'),
  rec(1, 'one-c', 'true'), // ... because this later copy is invalid (a reject, not a duplicate)
  rec(PAST_BITMAP, 'past-a'),
  rec(4, 'four'),
  rec(PAST_BITMAP, 'past-b'),
  rec(PAST_BITMAP, 'past-c', 'null'), // the last of three copies beyond the bitmap wins
  spaced(5, 'five-a'), // zod path: seen after five-b, which the fast path wrote first ...
  rec(5, 'five-b'), // ... yet five-b is later in the listing and wins
  rec(6, 'six-a'),
  spaced(6, 'six-b'), // set-aside copy on the zod path wins over the table's
  spaced(BIG, 'big-a'),
  rec(BIG, 'big-b'),
  rec(3, 'three-b'),
  rec(7, 'seven', '"x"'), // invalid, alone
  rec(3, 'three-c', '"3e2"'), // third copy of 3: wins
];

describe('a first load writes each row once', () => {
  const fx = useSyncFixture('firstload', { db: false, each: true });
  let direct: TestDb;
  let staged: TestDb;

  beforeEach(async () => {
    direct = await fx.createDb('fl_direct');
    staged = await fx.createDb('fl_staged');
    // Written by a (failed) run row of its own, which the comparison leaves out.
    await staged.rows(
      `WITH seed AS (INSERT INTO sync_runs (trigger, status, app_version, source)
                     VALUES ('manual', 'failed', 'seed', 'seed') RETURNING id)
       INSERT INTO bulk_wine_reconciliation (id, wpi, first_seen_at, changed_at, deleted_at, run_id)
       SELECT $1, 'seed', now(), now(), now(), id FROM seed`,
      [SEED_ID],
    );
  });

  /** `records`, or a whole listing document as text. */
  async function load(
    db: TestDb,
    name: string,
    records: string[] | string,
    env: Record<string, string> = {},
    dryRun = false,
  ) {
    const path = join(fx.dir, `${db.schema}-${name}.json`);
    await writeFile(path, typeof records === 'string' ? records : listing(records));
    const ctx = inProcess(syncEnv(db, undefined, { SYNC_MAX_REJECT_RATIO: '0.5', ...env }));
    const outcome = await ctx.run({ source: { kind: 'file', path }, trigger: 'file', dryRun });
    const statements = ctx.logs
      .map((l) => JSON.parse(l) as { statement?: string })
      .flatMap((l) => (l.statement ? [l.statement] : []));
    return { run: outcome.run as unknown as Record<string, unknown>, statements };
  }

  /**
   * Everything a run leaves, but the staging schema's seed row, with run ids as their ordinal.
   * Not `skipped_unchanged`: in a listing out of id order, a re-sync's parse may meet a record
   * before the read of the live rows reaches its row, and then compares it rather than skip it
   * (fingerprints/shortcut.ts): how many depends on timing, the result does not.
   */
  async function state(db: TestDb) {
    const ordinal = `(SELECT count(*) FROM sync_runs r WHERE r.id <= x.run_id AND r.source IS DISTINCT FROM 'seed')`;
    return {
      runs: await db.rows(
        `SELECT dry_run, status, received::int, rejected::int, duplicates::int, inserted::int, updated::int,
          unchanged::int,
                deleted::int, restored::int, unknown_fields, field_counts
         FROM sync_runs WHERE source IS DISTINCT FROM 'seed' ORDER BY id`,
      ),
      rejects: await db.rows(
        `SELECT ${ordinal} AS run, position, record_id, errors, raw FROM sync_rejects x ORDER BY run_id, position`,
      ),
      rows: await db.rows(
        `SELECT id, wpi, inventory_bulk_wine::text, inventory_finished_goods::text, inventory_sales::text,
          vintage_forecast::text,
                vintage_make::text, first_sale::text, deleted_at IS NULL AS live, ${ordinal} AS run,
                changed_at = first_seen_at AS never_changed,
                changed_at = min(changed_at) OVER (PARTITION BY run_id) AS run_timestamp
         FROM bulk_wine_reconciliation x WHERE id <> $1 ORDER BY id`,
        [SEED_ID],
      ),
      history: await db.rows(
        `SELECT id, wpi, inventory_bulk_wine::text, valid_to IS NULL AS current, ${ordinal} AS run
         FROM bulk_wine_reconciliation_history x WHERE id <> $1 ORDER BY id, valid_from, valid_to NULLS LAST`,
        [SEED_ID],
      ),
      // Each fingerprint vouches for its row as it is (the run's own xmin).
      fingerprints: await db.rows(
        `SELECT s.id, s.hash::text, s.row_xmin::text = t.xmin::text AS vouches
         FROM bulk_wine_reconciliation_source_hash s LEFT JOIN bulk_wine_reconciliation t ON t.id = s.id ORDER BY s.id`,
      ),
      bi: await db.rows(
        `SELECT bi_scale, bi_rounded::int, bi_overflow::int FROM sync_runs WHERE source IS DISTINCT FROM 'seed'
        ORDER BY id`,
      ),
    };
  }

  const STAGING_ONLY = [
    'remove_duplicates',
    'insert_all',
    'save_initial',
    'analyze_staging',
    'classify_changes',
    'insert_new',
  ];

  it('gives the staging path’s rows, rejects, counts and fingerprints, duplicate ids included; the next run skips every record', async () => {
    const first = await load(direct, 'dups', DUPLICATES);
    const viaStaging = await load(staged, 'dups', DUPLICATES);
    expect(viaStaging.statements).toContain('classify_changes'); // the other schema did take the staging path
    // No pass over every row, no staging-to-table copy, no fingerprint INSERT ... SELECT.
    expect(first.statements.filter((s) => STAGING_ONLY.includes(s))).toEqual([]);
    expect(first.statements).toEqual(
      expect.arrayContaining(['is_empty', 'copy_initial', 'settle_copies', 'write_winners']),
    );
    expect(first.run).toMatchObject({
      status: 'succeeded',
      received: 18,
      rejected: 2,
      duplicates: 8,
      inserted: 8,
      unchanged: 0,
    });
    expect(await state(direct)).toEqual(await state(staged));

    const rows = await direct.rows<{ id: string; wpi: string }>(
      'SELECT id::text, wpi FROM bulk_wine_reconciliation t ORDER BY t.id',
    );
    expect(rows.map((r) => r.wpi)).toEqual(['one-b', 'two', 'three-c', 'four', 'five-b', 'six-b', 'past-c', 'big-b']);
    const rejects = await direct.rows<{ position: number; record_id: string }>(
      'SELECT position::int, record_id FROM sync_rejects ORDER BY position',
    );
    expect(rejects.map((r) => [r.position, r.record_id])).toEqual([
      [0, '1'],
      [3, '3'],
      [4, '1'],
      [5, String(PAST_BITMAP)],
      [7, String(PAST_BITMAP)],
      [9, '5'],
      [11, '6'],
      [13, BIG],
      [15, '3'],
      [16, '7'],
    ]);

    // The next run: the same listing; every record whose bytes were fingerprinted is skipped.
    const again = await load(direct, 'again', DUPLICATES);
    await load(staged, 'again', DUPLICATES);
    expect(await state(direct)).toEqual(await state(staged));
    expect(again.run).toMatchObject({ inserted: 0, updated: 0, unchanged: 8, duplicates: 8 });
  });

  it('gives the staging path’s result on a listing of thousands of records with many duplicate ids, and the next run skips them all', async () => {
    const records: string[] = [];
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let k = 0; k < 12_000; k++) {
      const id = random() < 0.02 ? PAST_BITMAP + Math.floor(random() * 50) : 1 + Math.floor(random() * 24_000);
      const value = `"${(random() * 1000).toFixed(4)}"`;
      records.push(random() < 0.05 ? spaced(id, `w${k}`, value) : rec(id, `w${k}`, value));
    }
    const first = await load(direct, 'many', records);
    await load(staged, 'many', records);
    expect(first.statements.filter((s) => STAGING_ONLY.includes(s))).toEqual([]);
    expect(Number(first.run.duplicates)).toBeGreaterThan(1500);
    expect(await state(direct)).toEqual(await state(staged));

    const compact = records.filter((r) => !r.includes('": '));
    const next = await load(direct, 'compact', compact);
    await load(staged, 'compact', compact);
    expect(await state(direct)).toEqual(await state(staged));
    // Every record of the first load's was fingerprinted and vouched for: a re-sync of its
    // compact copies skips each one that is the last of its id and came again as it was.
    expect(Number(next.run.skipped_unchanged)).toBeGreaterThan(0);
    const third = await load(direct, 'compact-again', compact);
    expect(third.run).toMatchObject({ inserted: 0, updated: 0, deleted: 0 });
    // All but the records of the parser's first 8 KiB push that the read of the live rows had not
    // reached yet (this listing is out of id order): those are compared instead.
    expect(Number(third.run.skipped_unchanged)).toBeGreaterThan(Number(third.run.unchanged) - 200);
    expect(Number(third.run.skipped_unchanged)).toBeLessThanOrEqual(Number(third.run.unchanged));
    expect(third.run.unchanged).toBe(Number(next.run.inserted) + Number(next.run.unchanged) + Number(next.run.updated));
  });

  it('without duplicates settles nothing, and the next run skips every record', async () => {
    const records = Array.from({ length: 500 }, (_, k) => rec(k + 1, `w${k}`));
    const first = await load(direct, 'plain', records);
    expect(first.run).toMatchObject({ status: 'succeeded', inserted: 500, duplicates: 0 });
    expect(first.statements).not.toContain('settle_copies');
    expect(first.statements.filter((s) => STAGING_ONLY.includes(s))).toEqual([]);
    const next = await load(direct, 'plain-again', records);
    expect(next.run).toMatchObject({ unchanged: 500, skipped_unchanged: 500, inserted: 0 });
  });

  it('leaves the tables empty when a guard refuses the listing, or on a dry run', async () => {
    const empty = async () => ({
      rows: Number((await direct.rows<{ n: string }>('SELECT count(*) AS n FROM bulk_wine_reconciliation'))[0]!.n),
      fingerprints: Number(
        (await direct.rows<{ n: string }>('SELECT count(*) AS n FROM bulk_wine_reconciliation_source_hash'))[0]!.n,
      ),
    });
    const refused = await load(direct, 'ratio', DUPLICATES, { SYNC_MAX_REJECT_RATIO: '0.05' });
    expect(refused.run).toMatchObject({ status: 'failed', inserted: 0 });
    expect(refused.run.error).toMatch(/SYNC_MAX_REJECT_RATIO/);
    expect(await empty()).toEqual({ rows: 0, fingerprints: 0 });

    // The envelope claims one record more than the array has.
    const envelope = await load(direct, 'envelope', listing(DUPLICATES, DUPLICATES.length + 1));
    expect(envelope.run).toMatchObject({ status: 'failed', inserted: 0 });
    expect(envelope.statements).toContain('is_empty'); // the rows were being written when the guard refused
    expect(await empty()).toEqual({ rows: 0, fingerprints: 0 });

    const dry = await load(direct, 'dry', DUPLICATES, {}, true);
    expect(dry.run).toMatchObject({ status: 'succeeded', dry_run: true, inserted: 8, duplicates: 8 });
    expect(await empty()).toEqual({ rows: 0, fingerprints: 0 });
    // The next real load is still a first load.
    const real = await load(direct, 'real', DUPLICATES);
    expect(real.statements).toContain('copy_initial');
    expect(real.run).toMatchObject({ status: 'succeeded', inserted: 8, duplicates: 8 });
  });
});
