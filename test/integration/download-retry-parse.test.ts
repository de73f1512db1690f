/**
 * The listing is parsed (and staged) while it downloads; a download attempt cut off part way is
 * retried, and the parse starts over with it. Nothing of the cut attempt may remain: each run
 * here is compared with a clean run of the same listing in a schema of its own.
 */
import { describe, expect, it } from 'vitest';
import { RECORD_KINDS } from '../../src/load/audit.js';
import { Invalid, recordText } from '../../src/simulator/dataset.js';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, syncEnv, tableText, type TestDb } from '../support/harness.js';

/** Enough records that the parse is well into the first attempt when the simulator cuts it, at half the body. */
const RECORDS = 40_000;
/**
 * The simulator holds the cut connection open this long before dropping it: the parse of the first
 * attempt is under way (on a re-sync it starts once the live rows are read) before the attempt fails.
 */
const CUT_DELAY_MS = 1000;
const fx = useSyncFixture('retry_parse', { simulator: { records: RECORDS }, each: true });

const COUNTS = ['status', 'error', ...RECORD_KINDS, 'skipped_unchanged', 'bytes', 'reported_count'] as const;

/** What a run left: its counts, the table, its rejects. */
async function outcome(db: TestDb, runId: string) {
  const [run] = await db.rows<Record<string, unknown>>(`SELECT * FROM sync_runs WHERE id = $1`, [runId]);
  // bigint columns come as text
  const counts = Object.fromEntries(
    COUNTS.map((k) => [k, typeof run![k] === 'string' && /^\d+$/.test(run![k]) ? Number(run![k]) : run![k]]),
  );
  const rejects = await db.rows(
    `SELECT position::text, record_id, errors, raw FROM sync_rejects WHERE run_id = $1 ORDER BY position`,
    [runId],
  );
  return { counts, rows: await tableText(db), rejects };
}

/** Runs once in a schema of its own without any fault: what the faulted run must equal. */
async function cleanRun(label: string) {
  const db = await fx.createDb(label);
  const ctx = inProcess(syncEnv(db, fx.sim));
  const { run } = await ctx.run();
  return { db, ctx, result: await outcome(db, run.id) };
}

/** How far the parse got in the attempt it gave up: proof that the cut attempt was parsed at all. */
function forgotten(logs: string[]): Array<{ attempt: number; received: number }> {
  return logs
    .filter((l) => l.includes('download attempt failed part way'))
    .map((l) => JSON.parse(l) as { attempt: number; received: number });
}

/**
 * Every 8th of the first 9,600 records: 1,200 rejects (3%, under the 5% ratio), all in the half
 * before the cut, more than one batch of stored rejects (written as the parse goes).
 */
const INVALID_AT = Array.from({ length: 1_200 }, (_, k) => 8 * k + 3);

/** Raw record texts: the generated dataset, with these positions made invalid (and one id repeated early). */
function rawRecords(invalidAt: number[]): string[] {
  const kinds = [Invalid.Sales, Invalid.Date, Invalid.Wpi, Invalid.NegativeId];
  const invalid = new Set(invalidAt);
  const texts = Array.from({ length: RECORDS }, (_, i) =>
    recordText(7, i + 1, 1, invalid.has(i) ? kinds[i % kinds.length]! : Invalid.None),
  );
  texts.splice(500, 0, recordText(7, 101, 2)); // id 101 (valid) again, with other values: the later copy wins
  return texts;
}

describe('a download cut off part way, then whole on the retry', () => {
  it('loads exactly what a clean run loads: counts, rows, no rejects, nothing staged twice', async () => {
    const clean = await cleanRun('retry_parse_clean');
    fx.sim.setFault('truncate', { times: 1, delayMs: CUT_DELAY_MS });
    const listingsBefore = fx.sim.stats.listings;
    const ctx = inProcess(fx.env);
    const { run } = await ctx.run();
    expect(run.status, run.error ?? '').toBe('succeeded');
    expect(fx.sim.stats.listings - listingsBefore).toBe(2);
    const cut = forgotten(ctx.logs);
    expect(cut).toHaveLength(1);
    expect(cut[0]!.received).toBeGreaterThan(0);
    const faulted = await outcome(fx.db, run.id);
    expect(faulted.counts).toEqual(clean.result.counts);
    expect(faulted.counts).toMatchObject({ received: RECORDS, inserted: RECORDS, rejected: 0, duplicates: 0 });
    expect(faulted.rows).toEqual(clean.result.rows);
    expect(faulted.rejects).toEqual([]);
  });

  it('with invalid records and a duplicate id before the cut: each reject stored once, as in a clean run', async () => {
    const invalidAt = INVALID_AT;
    fx.sim.setRecordsJson(rawRecords(invalidAt));
    const clean = await cleanRun('retry_parse_clean_invalid');
    expect(clean.result.counts).toMatchObject({ received: RECORDS + 1, rejected: invalidAt.length, duplicates: 1 });
    fx.sim.setFault('truncate', { times: 1, delayMs: CUT_DELAY_MS });
    const ctx = inProcess(fx.env);
    const { run } = await ctx.run();
    expect(run.status, run.error ?? '').toBe('succeeded');
    const cut = forgotten(ctx.logs);
    expect(cut).toHaveLength(1);
    expect(cut[0]!.received).toBeGreaterThan(0);
    const faulted = await outcome(fx.db, run.id);
    expect(faulted.counts).toEqual(clean.result.counts);
    expect(faulted.rows).toEqual(clean.result.rows);
    expect(faulted.rejects).toEqual(clean.result.rejects);
    expect(faulted.rejects).toHaveLength(invalidAt.length + 1);
  });

  it('on a re-sync: every record still unchanged, none taken for a duplicate of its own first parse', async () => {
    const clean = await cleanRun('retry_parse_clean_resync');
    const second = await clean.ctx.run();
    const cleanResync = await outcome(clean.db, second.run.id);
    expect(cleanResync.counts).toMatchObject({ unchanged: RECORDS, skipped_unchanged: RECORDS, duplicates: 0 });

    const ctx = inProcess(fx.env);
    expect((await ctx.run()).run.status).toBe('succeeded');
    fx.sim.setFault('truncate', { times: 1, delayMs: CUT_DELAY_MS });
    const { run } = await ctx.run();
    expect(run.status, run.error ?? '').toBe('succeeded');
    expect(forgotten(ctx.logs)[0]?.received).toBeGreaterThan(0);
    const faulted = await outcome(fx.db, run.id);
    expect(faulted.counts).toEqual(cleanResync.counts);
    expect(faulted.rows).toEqual(cleanResync.rows);
  });

  it('cut off on every attempt: the run fails with the download error, counting and storing nothing of the attempts', async () => {
    fx.sim.setRecordsJson(rawRecords(INVALID_AT));
    fx.sim.setFault('truncate', { delayMs: CUT_DELAY_MS });
    const ctx = inProcess(fx.envWith({ WINE_API_RETRIES: '2' }));
    const { run } = await ctx.run();
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/cut off|gave up after 2 attempts/);
    expect(forgotten(ctx.logs).length).toBeGreaterThanOrEqual(1);
    const faulted = await outcome(fx.db, run.id);
    expect(faulted.counts).toMatchObject({ received: 0, rejected: 0, duplicates: 0, inserted: 0 });
    expect(faulted.rows).toEqual([]);
    expect(faulted.rejects).toEqual([]);
  });
});
