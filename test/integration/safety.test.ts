import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, syncEnv, tableText } from '../support/harness.js';
import { listing } from '../support/listing.js';

const rec = (id: number, sales = '1.5', wpi = `WPI-${id}`) =>
  `{"id":${id},"wpi":${JSON.stringify(wpi)},"inventory_bulk_wine":10,"inventory_finished_goods":2.25` +
  `,"inventory_sales":${sales},"vintage_forecast":null` +
  `,"vintage_make":0.5,"first_sale":"2022-01-0${(id % 9) + 1}"}`;
const ids = (from: number, to: number, sales?: string) =>
  Array.from({ length: to - from + 1 }, (_, i) => rec(from + i, sales));

const decompress = (algorithm: string, body: Buffer): Buffer =>
  algorithm === 'zstd'
    ? (zlib as unknown as { zstdDecompressSync(b: Buffer): Buffer }).zstdDecompressSync(body)
    : zlib.gunzipSync(body);

const fx = useSyncFixture('safety', { simulator: { records: 10 }, each: true });
const sync = async (...args: string[]) => {
  const r = await runCli(['run', '--json', ...args], fx.env);
  return { ...r, run: r.stdout ? JSON.parse(r.stdout) : undefined };
};

describe('soft deletes, restores and history', () => {
  it('soft-deletes a missing record, restores it when it returns, and keeps every version', async () => {
    fx.sim.setRecordsJson(ids(1, 10));
    expect((await sync()).run).toMatchObject({ inserted: 10, deleted: 0 });
    fx.sim.setRecordsJson(ids(1, 9));
    expect((await sync()).run).toMatchObject({ status: 'succeeded', deleted: 1, unchanged: 9 });
    expect(await fx.db.rows('SELECT id::int FROM bulk_wine_reconciliation WHERE deleted_at IS NOT NULL')).toEqual([
      { id: 10 },
    ]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_current')).toEqual([{ n: 9 }]);
    fx.sim.setRecordsJson([...ids(1, 9), rec(10, '2.75')]);
    expect((await sync()).run).toMatchObject({ restored: 1, updated: 0, deleted: 0, unchanged: 9 });
    const history = await fx.db.rows<{ inventory_sales: string; open: boolean; run_id: string }>(
      'SELECT inventory_sales::text, valid_to IS NULL AS open, run_id::text FROM bulk_wine_reconciliation_history WHERE id = 10 ORDER BY valid_from',
    );
    expect(history).toEqual([
      { inventory_sales: '1.5', open: false, run_id: '1' },
      { inventory_sales: '2.75', open: true, run_id: '3' },
    ]);
    expect(
      await fx.db.rows(
        'SELECT deleted_at, inventory_sales::text, run_id::int FROM bulk_wine_reconciliation WHERE id = 10',
      ),
    ).toEqual([{ deleted_at: null, inventory_sales: '2.75', run_id: 3 }]);
  });

  it('closes the old version and opens a new one on a change, in the same run', async () => {
    fx.sim.setRecordsJson(ids(1, 3));
    await sync();
    fx.sim.setRecordsJson([rec(1), rec(2, '9.125'), rec(3)]);
    expect((await sync()).run).toMatchObject({ updated: 1, unchanged: 2 });
    const versions = await fx.db.rows(
      'SELECT inventory_sales::text, valid_to IS NULL AS open, run_id::int FROM bulk_wine_reconciliation_history WHERE id = 2 ORDER BY valid_from',
    );
    expect(versions).toEqual([
      { inventory_sales: '1.5', open: false, run_id: 1 },
      { inventory_sales: '9.125', open: true, run_id: 2 },
    ]);
    const [closed] = await fx.db.rows<{ same: boolean }>(
      `SELECT h.valid_to = r.changed_at AS same FROM bulk_wine_reconciliation_history h
      JOIN bulk_wine_reconciliation r USING (id) WHERE id = 2 AND h.valid_to IS NOT NULL`,
    );
    expect(closed?.same).toBe(true);
  });
});

describe('mass-delete guard', () => {
  it('refuses to delete more than SYNC_MAX_DELETE_RATIO of live rows, changes nothing, and says how to override', async () => {
    fx.sim.setRecordsJson(ids(1, 10));
    await sync();
    const before = await tableText(fx.db);
    fx.sim.setRecordsJson([...ids(1, 5), rec(11)]);
    const refused = await sync();
    expect(refused.code).toBe(1);
    expect(refused.run).toMatchObject({ status: 'failed', inserted: 0, deleted: 0 });
    expect(refused.run.error).toContain('refusing to soft-delete 5 of 10 live rows');
    expect(refused.run.error).toContain('--allow-mass-delete');
    expect(await tableText(fx.db)).toEqual(before);
    const allowed = await sync('--allow-mass-delete');
    expect(allowed.code).toBe(0);
    expect(allowed.run).toMatchObject({ status: 'succeeded', deleted: 5, inserted: 1 });
  });

  it('always counts an empty listing over a non-empty table, whatever the ratio', async () => {
    fx.sim.setRecordsJson(ids(1, 4));
    await sync();
    fx.sim.setRecordsJson([]);
    fx.env.SYNC_MAX_DELETE_RATIO = '1';
    const refused = await sync();
    expect(refused.code).toBe(1);
    expect(refused.run.error).toContain('refusing to soft-delete 4 of 4');
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_current')).toEqual([{ n: 4 }]);
  });
});

describe('envelope and reject checks', () => {
  it('fails and loads nothing when count, recordCount and the array length disagree', async () => {
    fx.sim.setRawBody(listing(ids(1, 3), 4));
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.run).toMatchObject({
      status: 'failed',
      received: 3,
      reported_count: 4,
      reported_record_count: 4,
      inserted: 0,
    });
    expect(r.run.error).toContain('count=4, recordCount=4, array length=3');
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
  });

  it('fails when the records array is missing', async () => {
    fx.sim.setRawBody('{"message":"ok","count":0,"recordCount":0}');
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.run.error).toContain('no "bulk_wine_reconciliation" array (found missing');
  });

  it('over SYNC_MAX_REJECT_RATIO: fails, loads nothing, but keeps the rejects for diagnosis', async () => {
    fx.sim.setRecordsJson([...ids(1, 8), rec(9, '"n/a"'), rec(10, 'true')]);
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.run).toMatchObject({ status: 'failed', received: 10, rejected: 2, inserted: 0 });
    expect(r.run.error).toContain('2 of 10 records rejected');
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
    const rejects = await fx.db.rows<{ position: string; record_id: string; errors: unknown; raw: string }>(
      'SELECT position::int, record_id, errors, raw FROM sync_rejects ORDER BY position',
    );
    expect(rejects.map((x) => [x.position, x.record_id])).toEqual([
      [8, '9'],
      [9, '10'],
    ]);
    expect(rejects[0]!.raw).toBe(rec(9, '"n/a"'));
    expect(rejects[0]!.errors).toEqual([{ path: 'inventory_sales', message: expect.stringContaining('n/a') }]);
  });

  it('under the threshold: loads the rest and records each reject with every reason', async () => {
    fx.env.SYNC_MAX_REJECT_RATIO = '0.5';
    const bad = '{"id":-5,"wpi":"","inventory_sales":"12 kg","first_sale":"2021-02-30"}';
    fx.sim.setRecordsJson([...ids(1, 3), bad]);
    const r = await sync();
    expect(r.code).toBe(0);
    expect(r.run).toMatchObject({ received: 4, rejected: 1, inserted: 3 });
    const [reject] = await fx.db.rows<{ errors: Array<{ path: string }>; raw: string; record_id: string }>(
      'SELECT errors, raw, record_id FROM sync_rejects',
    );
    expect(reject!.raw).toBe(bad);
    expect(reject!.errors.map((e) => e.path).sort()).toEqual(['first_sale', 'id', 'inventory_sales', 'wpi']);
  });

  it('duplicate ids: the last one wins, the earlier ones are rejected and counted', async () => {
    fx.sim.setRecordsJson([rec(1, '1'), rec(2), rec(1, '2'), rec(1, '3')]);
    const r = await sync();
    expect(r.code).toBe(0);
    expect(r.run).toMatchObject({ received: 4, duplicates: 2, rejected: 0, inserted: 2 });
    expect(await fx.db.rows('SELECT inventory_sales::text FROM bulk_wine_reconciliation WHERE id = 1')).toEqual([
      { inventory_sales: '3' },
    ]);
    const rejects = await fx.db.rows<{ position: number; raw: string; errors: Array<{ message: string }> }>(
      'SELECT position::int, raw, errors FROM sync_rejects ORDER BY position',
    );
    expect(rejects.map((x) => [x.position, x.raw])).toEqual([
      [0, rec(1, '1')],
      [2, rec(1, '2')],
    ]);
    expect(rejects[0]!.errors[0]!.message).toContain('duplicate id');
  });
});

describe('dry run, archive, replay and backfill from a file', () => {
  it('dry run computes the counts and commits nothing', async () => {
    fx.sim.setRecordsJson(ids(1, 5));
    const r = await sync('--dry-run');
    expect(r.code).toBe(0);
    expect(r.run).toMatchObject({ status: 'succeeded', dry_run: true, inserted: 5 });
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_history')).toEqual([{ n: 0 }]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM sync_payloads')).toEqual([{ n: 0 }]);
  });

  it('archives the listing exactly as received, keeps the newest SYNC_ARCHIVE_KEEP, and replays one', async () => {
    fx.env.SYNC_ARCHIVE_KEEP = '2';
    fx.env.SYNC_MAX_DELETE_RATIO = '1';
    const bodies = [listing(ids(1, 4)), listing(ids(1, 4, '7.75')), listing(ids(2, 4, '7.75'))];
    for (const body of bodies) {
      fx.sim.setRawBody(body);
      expect((await sync()).code).toBe(0);
    }
    // The compressed body is stored in chunks: it is read back as their concatenation.
    const payloads = await fx.db.rows<{
      run_id: string;
      sha256: string;
      bytes: string;
      algorithm: string;
      body: Buffer;
    }>(
      `SELECT run_id, sha256, bytes, algorithm,
        (SELECT string_agg(data, '' ORDER BY seq) FROM sync_payload_chunks c WHERE c.run_id = p.run_id) AS body
       FROM sync_payloads p ORDER BY run_id`,
    );
    expect(payloads.map((p) => p.run_id)).toEqual(['2', '3']);
    expect(decompress(payloads[0]!.algorithm, payloads[0]!.body).toString()).toBe(bodies[1]);
    expect(payloads[0]!.sha256).toBe(createHash('sha256').update(bodies[1]!).digest('hex'));
    expect(payloads[0]!.bytes).toBe(String(Buffer.byteLength(bodies[1]!)));

    const replay = await runCli(['replay', '--run', '2', '--json'], fx.env);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({
      trigger: 'replay',
      status: 'succeeded',
      restored: 1,
      unchanged: 3,
    });
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_current')).toEqual([{ n: 4 }]);

    const missing = await runCli(['replay', '--run', '1'], fx.env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      "cannot replay run 1: its payload was pruned: only the newest SYNC_ARCHIVE_KEEP payloads are kept, and the oldest still archived is run 3's; no run was recorded",
    );
  });

  it('SYNC_ARCHIVE_KEEP=0 turns the archive off', async () => {
    fx.env.SYNC_ARCHIVE_KEEP = '0';
    fx.sim.setRecordsJson(ids(1, 2));
    expect((await sync()).code).toBe(0);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM sync_payloads')).toEqual([{ n: 0 }]);
  });

  it('run --from-file loads a saved listing through the same checks (trigger file)', async () => {
    const file = join(fx.dir, 'listing.json');
    await writeFile(file, listing(ids(1, 6)));
    const noApiEnv = syncEnv(fx.db);
    const r = await runCli(['run', '--from-file', file, '--json'], noApiEnv);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ trigger: 'file', inserted: 6, source: file });
    await writeFile(file, listing(ids(1, 6), 7));
    const bad = await runCli(['run', '--from-file', file, '--json'], noApiEnv);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).error).toContain('count=7');
  });
});

describe('hostile input', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['a truncated listing', listing(ids(1, 3)).slice(0, 150), /not valid JSON/],
    ['a plain array instead of the envelope', `[${ids(1, 2).join(',')}]`, /JSON array, not the expected envelope/],
    ['a listing that is not JSON at all', 'Service temporarily unavailable', /not valid JSON|not JSON/],
  ];
  it.each(cases)('%s fails cleanly and loads nothing', async (_name, body, message) => {
    fx.sim.setRawBody(body, 'application/json');
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.run.status).toBe('failed');
    expect(r.run.error).toMatch(message);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
  });

  it('rejects a 10,000-digit decimal, a nested value, a non-object record; loads SQL-looking and non-ASCII text verbatim', async () => {
    fx.env.SYNC_MAX_REJECT_RATIO = '0.9';
    const huge = `{"id":20,"wpi":"X","inventory_sales":1${'0'.repeat(10_000)}}`;
    const nested = `{"id":21,"wpi":"Y","inventory_sales":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const sqlish = rec(22, '1', "'); DROP TABLE bulk_wine_reconciliation; --");
    const unicode = rec(23, '1', 'Rosé – 日本 \u{1F377}');
    fx.sim.setRecordsJson([huge, nested, '42', '"text"', sqlish, unicode]);
    const r = await sync();
    expect(r.code, r.stderr).toBe(0);
    expect(r.run).toMatchObject({ received: 6, rejected: 4, inserted: 2 });
    expect(await fx.db.rows('SELECT id::int, wpi FROM bulk_wine_reconciliation ORDER BY id')).toEqual([
      { id: 22, wpi: "'); DROP TABLE bulk_wine_reconciliation; --" },
      { id: 23, wpi: 'Rosé – 日本 \u{1F377}' },
    ]);
    const rejects = await fx.db.rows<{ position: number; errors: Array<{ message: string }> }>(
      'SELECT position::int, errors FROM sync_rejects ORDER BY position',
    );
    expect(rejects.map((x) => x.position)).toEqual([0, 1, 2, 3]);
    expect(JSON.stringify(rejects[0]!.errors)).toContain('1000 digits');
    expect(JSON.stringify(rejects[2]!.errors)).toContain('not a JSON object');
  });
});
