import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliCompressSync, deflateRawSync, gunzipSync, gzipSync } from 'node:zlib';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { InvalidListingError } from '../../src/errors.js';
import { startRun } from '../../src/load/audit.js';
import { preferredAlgorithm, type PayloadAlgorithm } from '../../src/load/payload-codec.js';
import { compressListing, restorePayload, storePayload } from '../../src/load/payloads.js';
import { SQL_DIR } from '../../src/io/paths.js';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, runCli, tableText, type InProcess, type TestDb } from '../support/harness.js';
import { listing } from '../support/listing.js';
import { rawListing } from '../support/raw-listing.js';

const rec = (id: number, wpi: string) =>
  `{"id":${id},"wpi":${JSON.stringify(wpi)},"inventory_bulk_wine":10,"inventory_finished_goods":2.25` +
  `,"inventory_sales":0.123456789012345678901,"vintage_forecast":null` +
  `,"vintage_make":0.5,"first_sale":"2022-01-02"}`;
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

const fx = useSyncFixture('payloads');

/** Archives `body` as a new run's payload with the given chunk size; returns the run id and the compressed bytes. */
async function archive(body: string, chunkBytes: number, algorithm: PayloadAlgorithm = preferredAlgorithm()) {
  const source = join(fx.dir, `listing-${randomBytes(4).toString('hex')}.json`);
  await writeFile(source, body);
  const compressed = await compressListing(source, `${source}.archive`, undefined, algorithm);
  const runId = (await startRun(fx.db.pool, { trigger: 'manual', dryRun: false, appVersion: 'test', source: null })).id;
  const client = await fx.db.pool.connect();
  try {
    await fx.db.pool.begin(client);
    await storePayload(client, {
      runId,
      sha256: sha256(body),
      bytes: Buffer.byteLength(body),
      compressed,
      keep: 1000,
      chunkBytes,
    });
    await client.query('COMMIT');
  } finally {
    client.release();
  }
  return { runId, compressed: await readFile(compressed.path), algorithm: compressed.algorithm };
}

async function chunkLengths(runId: string): Promise<number[]> {
  const rows = await fx.db.rows<{ n: number }>(
    'SELECT length(data) AS n FROM sync_payload_chunks WHERE run_id = $1 ORDER BY seq',
    [runId],
  );
  return rows.map((r) => r.n);
}

describe('payload archive in chunks', () => {
  it('splits the compressed body at every chunk size and restores it byte for byte', async () => {
    const body = listing(Array.from({ length: 40 }, (_, i) => rec(i + 1, `WPI-${i}`)));
    const probe = await archive(body, 1 << 20);
    const size = probe.compressed.length;
    for (const chunkBytes of [1, 7, Math.floor(size / 2), size - 1, size, size + 1]) {
      const { runId, compressed } = await archive(body, chunkBytes);
      const lengths = await chunkLengths(runId);
      expect(lengths.length, `chunk size ${chunkBytes}`).toBe(Math.ceil(size / chunkBytes));
      expect(lengths.slice(0, -1).every((n) => n === chunkBytes)).toBe(true);
      expect(lengths.reduce((a, b) => a + b, 0)).toBe(compressed.length);
      const stored = await fx.db.rows<{ body: Buffer; stored_bytes: string }>(
        `SELECT (SELECT string_agg(data, '' ORDER BY seq) FROM sync_payload_chunks WHERE run_id = $1) AS body,
          stored_bytes FROM sync_payloads WHERE run_id = $1`,
        [runId],
      );
      expect(stored[0]!.body.equals(compressed)).toBe(true);
      expect(stored[0]!.stored_bytes).toBe(String(size));

      const out = join(fx.dir, `restored-${runId}.json`);
      expect(await restorePayload(fx.db.pool, runId, out)).toBe(sha256(body));
      expect(await readFile(out, 'utf8')).toBe(body);
    }
  });

  it('restores a body larger than a read buffer whose chunks do not align with it', async () => {
    // Random wpi text barely compresses: a few MB of compressed body, chunks of 1.5 MB.
    const body = listing(Array.from({ length: 30_000 }, (_, i) => rec(i + 1, randomBytes(96).toString('base64'))));
    const { runId, compressed } = await archive(body, 1.5 * 1024 * 1024);
    expect(compressed.length).toBeGreaterThan(2.5 * 1024 * 1024);
    expect((await chunkLengths(runId)).length).toBe(Math.ceil(compressed.length / (1.5 * 1024 * 1024)));
    const out = join(fx.dir, 'restored-large.json');
    expect(await restorePayload(fx.db.pool, runId, out)).toBe(sha256(body));
    expect(sha256(await readFile(out))).toBe(sha256(body));
  });

  it('records the algorithm of each payload and restores gzip ones whatever the default', async () => {
    const body = listing([rec(1, 'A'), rec(2, 'B')]);
    const { runId } = await archive(body, 16, 'gzip');
    expect(await fx.db.rows('SELECT algorithm FROM sync_payloads WHERE run_id = $1', [runId])).toEqual([
      { algorithm: 'gzip' },
    ]);
    expect(await restorePayload(fx.db.pool, runId, join(fx.dir, 'gzip.json'))).toBe(sha256(body));
    const latest = await archive(body, 16);
    expect(await fx.db.rows('SELECT algorithm FROM sync_payloads WHERE run_id = $1', [latest.runId])).toEqual([
      { algorithm: preferredAlgorithm() },
    ]);
    if (preferredAlgorithm() === 'gzip')
      console.warn(
        `Node ${process.version} has no zstd in node:zlib: payloads are gzip; the zstd path is not exercised here`,
      );
  });

  it('refuses a payload whose restored bytes do not match the recorded SHA-256', async () => {
    const { runId } = await archive(listing([rec(1, 'A')]), 64);
    await fx.db.pool.query(`UPDATE sync_payloads SET sha256 = repeat('0', 64) WHERE run_id = $1`, [runId]);
    await expect(restorePayload(fx.db.pool, runId, join(fx.dir, 'damaged.json'))).rejects.toBeInstanceOf(
      InvalidListingError,
    );
  });
});

describe('payloads archived before chunks (one gzip bytea)', () => {
  let pool: Pool;
  let schema: string;
  let runs: { small: string; large: string };
  const small = listing([rec(1, 'OLD-1'), rec(2, 'OLD-2'), rec(3, 'OLD-3')]);
  // Incompressible: its gzip is over 8 MiB, so the migration splits it into two chunks.
  const large = randomBytes(9 * 1024 * 1024).toString('latin1');

  beforeAll(async () => {
    schema = `t_oldpayloads_${randomBytes(3).toString('hex')}`;
    pool = createPool({ databaseUrl: inject('databaseUrl'), schema, max: 2 });
    await pool.query(`CREATE SCHEMA "${schema}"`);
    await pool.query(
      'CREATE TABLE sync_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    await pool.query(readFileSync(join(SQL_DIR, 'migrations', '0001_init.sql'), 'utf8'));
    await pool.query(`INSERT INTO sync_migrations (version, name) VALUES (1, '0001_init')`);
    const archiveOld = async (body: string) => {
      const { rows } = await pool.query<{ id: string }>(
        `INSERT INTO sync_runs (trigger, status, app_version) VALUES ('manual', 'succeeded', 'old') RETURNING id`,
      );
      const raw = Buffer.from(body, 'latin1');
      await pool.query('INSERT INTO sync_payloads (run_id, sha256, bytes, body) VALUES ($1, $2, $3, $4)', [
        rows[0]!.id,
        sha256(raw),
        raw.length,
        gzipSync(raw),
      ]);
      return rows[0]!.id;
    };
    runs = { small: await archiveOld(small), large: await archiveOld(large) };
    await migrate(pool, schema);
  });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_bi" CASCADE`);
    await pool.end();
  });

  it('the migration moves each body into 8 MiB chunks, marked gzip', async () => {
    const { rows } = await pool.query<{
      run_id: string;
      algorithm: string;
      chunks: number;
      total: string;
      stored_bytes: string;
    }>(
      `SELECT p.run_id, p.algorithm, count(c.seq)::int AS chunks, sum(length(c.data))::text AS total,
        p.stored_bytes::text
       FROM sync_payloads p JOIN sync_payload_chunks c USING (run_id) GROUP BY p.run_id ORDER BY p.run_id`,
    );
    expect(rows.map((r) => [r.run_id, r.algorithm, r.chunks])).toEqual([
      [runs.small, 'gzip', 1],
      [runs.large, 'gzip', 2],
    ]);
    for (const r of rows) expect(r.total).toBe(r.stored_bytes);
    const out = join(fx.dir, 'old-large.bin');
    expect(await restorePayload(pool, runs.large, out)).toBe(sha256(Buffer.from(large, 'latin1')));
  });

  it('replay --run loads an old payload', async () => {
    const env = { DATABASE_URL: inject('databaseUrl'), SYNC_DB_SCHEMA: schema, LOG_LEVEL: 'info' };
    const replay = await runCli(['replay', '--run', runs.small, '--json'], env);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({
      trigger: 'replay',
      status: 'succeeded',
      inserted: 3,
      bytes: Buffer.byteLength(small),
    });
    const { rows } = await pool.query('SELECT wpi, inventory_sales::text FROM bulk_wine_reconciliation ORDER BY id');
    expect(rows).toEqual([1, 2, 3].map((i) => ({ wpi: `OLD-${i}`, inventory_sales: '0.123456789012345678901' })));
  });
});

describe('the archive of a downloaded listing', () => {
  const dl = useSyncFixture('payload-downloads', { simulator: { records: 300 }, each: true });

  /** The run's archived body as stored, its algorithm and sizes. */
  async function stored(db: TestDb, runId: number) {
    const rows = await db.rows<{
      body: Buffer;
      algorithm: string;
      bytes: string;
      stored_bytes: string;
      sha256: string;
    }>(
      `SELECT (SELECT string_agg(data, '' ORDER BY seq) FROM sync_payload_chunks WHERE run_id = $1) AS body, algorithm,
        bytes::text, stored_bytes::text, sha256
       FROM sync_payloads WHERE run_id = $1`,
      [runId],
    );
    return rows[0];
  }

  /** How the run's archive was made, from its store_payload log line. */
  const madeBy = (ctx: InProcess, runId: number) =>
    ctx.logs
      .map((line) => JSON.parse(line) as { runId?: number; statement?: string; archive?: string })
      .find((l) => l.runId === runId && l.statement === 'store_payload')?.archive;

  const payloadCount = async () =>
    (await dl.db.rows<{ n: number }>('SELECT count(*)::int AS n FROM sync_payloads'))[0]!.n;

  it("stores the upstream's gzip body byte for byte, and replays it to the same SHA-256 and rows", async () => {
    dl.sim.setContentCoding('gzip');
    const sent = await rawListing(dl.sim, 'gzip, deflate, br');
    expect(sent.headers['content-encoding']).toBe('gzip');
    const json = gunzipSync(sent.body);
    const ctx = inProcess(dl.env);
    const { run } = await ctx.run();
    expect(run).toMatchObject({ status: 'succeeded', received: 300, inserted: 300, bytes: json.length });

    const payload = (await stored(dl.db, run.id))!;
    expect(payload.body.equals(sent.body)).toBe(true);
    expect(payload).toMatchObject({
      algorithm: 'gzip',
      bytes: String(json.length),
      stored_bytes: String(sent.body.length),
      sha256: sha256(json),
    });
    expect(madeBy(ctx, run.id)).toBe('upstream gzip');

    const rows = await tableText(dl.db);
    const replay = await ctx.run({ source: { kind: 'replay', runId: String(run.id) }, trigger: 'replay' });
    expect(replay.run).toMatchObject({
      status: 'succeeded',
      received: 300,
      inserted: 0,
      updated: 0,
      deleted: 0,
      bytes: json.length,
    });
    expect(ctx.logs.join('\n')).toContain(`"sha256":"${sha256(json)}"`);
    expect(await tableText(dl.db)).toEqual(rows);

    // The same listing again, as gzip: identical to the newest archived one, not stored twice.
    const again = await ctx.run();
    expect(again.run.status).toBe('succeeded');
    expect(ctx.logs.some((l) => l.includes(`"runId":${again.run.id}`) && l.includes('not archived again'))).toBe(true);
    expect(await payloadCount()).toBe(1);
  });

  it('stores a multi-member gzip body as sent and replays it whole', async () => {
    const json = Buffer.from(listing(Array.from({ length: 40 }, (_, i) => rec(i + 1, `MM-${i}`))));
    const members = Buffer.concat([
      gzipSync(json.subarray(0, 1000)),
      gzipSync(json.subarray(1000, 1001)),
      gzipSync(json.subarray(1001)),
    ]);
    dl.sim.setRawBody(members, 'application/json', 'gzip');
    const ctx = inProcess(dl.env);
    const { run } = await ctx.run();
    expect(run).toMatchObject({ status: 'succeeded', inserted: 40, bytes: json.length });
    expect((await stored(dl.db, run.id))!.body.equals(members)).toBe(true);
    expect(madeBy(ctx, run.id)).toBe('upstream gzip');

    const out = join(dl.dir, 'members.json');
    expect(await restorePayload(dl.db.pool, String(run.id), out)).toBe(sha256(json));
    expect((await readFile(out)).equals(json)).toBe(true);
    const rows = await tableText(dl.db);
    await dl.db.pool.query("UPDATE bulk_wine_reconciliation SET wpi = wpi || '-edited' WHERE id = 7");
    const replay = await ctx.run({ source: { kind: 'replay', runId: String(run.id) }, trigger: 'replay' });
    expect(replay.run).toMatchObject({ status: 'succeeded', received: 40, updated: 1 });
    expect(await tableText(dl.db)).toEqual(rows);
  });

  it('compresses the listing itself when the upstream sent it plain, deflate or br', async () => {
    const json = Buffer.from(listing(Array.from({ length: 30 }, (_, i) => rec(i + 1, `PL-${i}`))));
    const ctx = inProcess(dl.env);
    const bodies: Array<[string, Buffer, string | undefined]> = [
      ['identity', json, undefined],
      ['deflate (raw, no zlib header)', deflateRawSync(json), 'deflate'],
      ['br', brotliCompressSync(json), 'br'],
    ];
    for (const [label, body, coding] of bodies) {
      await dl.db.pool.query('TRUNCATE sync_payloads CASCADE');
      dl.sim.setRawBody(body, 'application/json', coding);
      const { run } = await ctx.run();
      expect(run, label).toMatchObject({ status: 'succeeded', received: 30, bytes: json.length });
      const payload = (await stored(dl.db, run.id))!;
      expect(payload.algorithm, label).toBe(preferredAlgorithm());
      expect(payload.body.equals(body), label).toBe(false);
      expect(madeBy(ctx, run.id), label).toBe('compressed');
      const out = join(dl.dir, `plain-${run.id}.json`);
      expect(await restorePayload(dl.db.pool, String(run.id), out), label).toBe(sha256(json));
    }
  });

  it('is committed just before its run: a run that fails after that (its prune of the older payload times out on a lock) removes it', async () => {
    const ctx = inProcess({ ...dl.env, SYNC_ARCHIVE_KEEP: '1', SYNC_LOCK_TIMEOUT_MS: '300' });
    const first = (await ctx.run()).run;
    expect(first.status).toBe('succeeded');
    const rows = await tableText(dl.db);
    dl.sim.mutate({ change: 10 });
    const holder = await dl.db.pool.connect();
    try {
      await dl.db.pool.begin(holder);
      await holder.query('SELECT 1 FROM sync_payloads WHERE run_id = $1 FOR UPDATE', [first.id]);
      const { run } = await ctx.run();
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(/lock/);
      // The new payload was written and committed (its store_payload line), then removed.
      expect(madeBy(ctx, run.id)).toBe('compressed');
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect(await dl.db.rows('SELECT run_id::int FROM sync_payloads')).toEqual([{ run_id: first.id }]);
    expect(await dl.db.rows('SELECT DISTINCT run_id::int FROM sync_payload_chunks')).toEqual([{ run_id: first.id }]);
    expect(await tableText(dl.db)).toEqual(rows);
  });

  it('a payload left by a run that did not succeed (the process died between the two commits) is not the newest archive, and is pruned', async () => {
    const ctx = inProcess({ ...dl.env, SYNC_ARCHIVE_KEEP: '2' });
    const first = (await ctx.run()).run;
    dl.sim.mutate({ change: 5 });
    const second = (await ctx.run()).run;
    expect([first.status, second.status]).toEqual(['succeeded', 'succeeded']);
    await dl.db.pool.query("UPDATE sync_runs SET status = 'abandoned' WHERE id = $1", [second.id]);
    // The same listing as the abandoned run's: archived again, not taken as already archived.
    const third = (await ctx.run()).run;
    expect(third.status).toBe('succeeded');
    expect(madeBy(ctx, third.id)).toBe('compressed');
    expect(await dl.db.rows('SELECT run_id::int FROM sync_payloads ORDER BY run_id')).toEqual([
      { run_id: first.id },
      { run_id: third.id },
    ]);
  });

  it('a gzip body cut short fails retryably after the retries, and leaves the tables and archive as they were', async () => {
    const ctx = inProcess({ ...dl.env, WINE_API_RETRIES: '2' });
    expect((await ctx.run()).run.status).toBe('succeeded');
    const before = { rows: await tableText(dl.db), payloads: await payloadCount() };
    dl.sim.mutate({ change: 10 });
    dl.sim.setContentCoding('gzip');
    dl.sim.setFault('truncate');
    const listingsBefore = dl.sim.stats.listings;
    const { run } = await ctx.run();
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(
      /^listing body \(gzip\) ends early or is damaged after \d+ bytes: unexpected end of file \(gave up after 2 attempts\)$/,
    );
    expect(dl.sim.stats.listings - listingsBefore).toBe(2);
    expect(await tableText(dl.db)).toEqual(before.rows);
    expect(await payloadCount()).toBe(before.payloads);
  });

  it.each([
    ['a gzip stream that ends early (chunked)', 'stream'],
    ['a gzip body whose connection drops before its Content-Length', 'raw'],
  ])('a retry after %s archives the whole body of the attempt that succeeded', async (_label, how) => {
    dl.sim.setContentCoding('gzip');
    let sent = await rawListing(dl.sim, 'gzip');
    if (how === 'raw') {
      // A large body, so the first half leaves a full file behind for the retry to start over.
      sent = {
        ...sent,
        body: gzipSync(listing(Array.from({ length: 20_000 }, (_, i) => rec(i + 1, randomBytes(24).toString('hex'))))),
      };
      dl.sim.setRawBody(sent.body, 'application/json', 'gzip');
    }
    dl.sim.setFault('truncate', { times: 1 });
    const ctx = inProcess(dl.env);
    const listingsBefore = dl.sim.stats.listings;
    const { run } = await ctx.run();
    expect(run.status, run.error ?? '').toBe('succeeded');
    expect(dl.sim.stats.listings - listingsBefore).toBe(2);
    expect(ctx.logs.some((l) => l.includes('upstream request failed; retrying'))).toBe(true);
    const payload = (await stored(dl.db, run.id))!;
    expect(payload.body.equals(sent.body)).toBe(true);
    expect(payload.sha256).toBe(sha256(gunzipSync(sent.body)));
    expect(madeBy(ctx, run.id)).toBe('upstream gzip');
  });
});
