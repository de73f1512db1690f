/**
 * The COPY TO reader that takes rows where they lie in the socket's chunks (src/db/copy-out.ts),
 * against the test database: every byte in order across chunk boundaries, its back-pressure, and
 * a COPY that fails part way (the server's error, or the sink's) leaving the connection usable.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CopyOut, type CopyOutSink } from '../../src/db/copy-out.js';
import type { PoolClient } from '../../src/db/pool.js';
import { createTestDb, type TestDb } from '../support/harness.js';

/** Rows of lengths from 1 to about 200 bytes, so that messages split across chunks at every place. */
const ROWS = 60_000;
const ROWS_SQL =
  `SELECT i, repeat(chr(97 + i % 26), (i * 7919) % 197)` + ` FROM generate_series(1, ${ROWS}) AS i ORDER BY i`;

/** Collects what it is given, as a hash and a count of bytes; `slow` makes every 8th chunk wait. */
class Collector implements CopyOutSink {
  readonly hash = createHash('sha256');
  bytes = 0;
  calls = 0;
  waits = 0;
  constructor(private readonly slow = false) {}
  data(b: Buffer, start: number, end: number): void {
    this.hash.update(b.subarray(start, end));
    this.bytes += end - start;
  }
  drain(): Promise<void> | undefined {
    if (!this.slow || ++this.calls % 8 !== 0) return undefined;
    this.waits++;
    return sleep(2);
  }
}

let db: TestDb;
let client: PoolClient;
/** The COPY's text as psql would get it: through a plain query of the same rows. */
let expected: { sha256: string; bytes: number };

beforeAll(async () => {
  db = await createTestDb('copy_out');
  client = await db.pool.connect();
  const { rows } = await client.query<{ line: string }>(
    `SELECT concat_ws(E'\\t', i, repeat) || E'\\n' AS line FROM (${ROWS_SQL}) AS r(i, repeat)`,
  );
  const text = rows.map((r) => r.line).join('');
  expected = { sha256: createHash('sha256').update(text).digest('hex'), bytes: Buffer.byteLength(text) };
});

afterAll(async () => {
  client?.release();
  await db?.close();
});

async function stillUsable(): Promise<void> {
  expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
}

describe('COPY TO, read off the connection', () => {
  it('hands on every byte of every row in order, and the row count', async () => {
    const sink = new Collector();
    const copy = client.query(new CopyOut(`COPY (${ROWS_SQL}) TO STDOUT`, sink));
    expect(await copy.done).toBe(ROWS);
    expect({ sha256: sink.hash.digest('hex'), bytes: sink.bytes }).toEqual(expected);
    await stillUsable();
  });

  it('waits for a sink that is writing, and loses nothing', async () => {
    const sink = new Collector(true);
    expect(await client.query(new CopyOut(`COPY (${ROWS_SQL}) TO STDOUT`, sink)).done).toBe(ROWS);
    expect(sink.waits).toBeGreaterThan(0);
    expect({ sha256: sink.hash.digest('hex'), bytes: sink.bytes }).toEqual(expected);
    await stillUsable();
  });

  it('skips notices sent in its course', async () => {
    await client.query(
      `CREATE FUNCTION pg_temp.noisy(i int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN IF i % 1000 = 0 THEN RAISE NOTICE 'row %', i; END IF; RETURN i; END $$`,
    );
    const sink = new Collector();
    expect(
      await client.query(
        new CopyOut(`COPY (SELECT pg_temp.noisy(i) FROM generate_series(1, 5000) AS i) TO STDOUT`, sink),
      ).done,
    ).toBe(5000);
    const text = Array.from({ length: 5000 }, (_, k) => `${k + 1}\n`).join('');
    expect(sink.hash.digest('hex')).toBe(createHash('sha256').update(text).digest('hex'));
    await stillUsable();
  });

  it("rejects with the server's error part way, and the connection goes on", async () => {
    const sink = new Collector();
    const copy = client.query(
      new CopyOut(`COPY (SELECT 1 / (${ROWS} / 2 - i) FROM generate_series(1, ${ROWS}) AS i) TO STDOUT`, sink),
    );
    await expect(copy.done).rejects.toThrow(/division by zero/);
    expect(sink.bytes).toBeGreaterThan(0);
    await stillUsable();
  });

  it("rejects with the sink's error once the server is done, and the connection goes on", async () => {
    let given = 0;
    const sink: CopyOutSink = {
      data: () => {
        if (++given === 100) throw new Error('the sink broke');
      },
      drain: () => undefined,
    };
    await expect(client.query(new CopyOut(`COPY (${ROWS_SQL}) TO STDOUT`, sink)).done).rejects.toThrow(
      'the sink broke',
    );
    expect(given).toBe(100);
    await stillUsable();
  });

  it('rejects when the statement is cancelled, and the connection goes on', async () => {
    const sink = new Collector(true);
    const copy = client.query(
      new CopyOut(`COPY (SELECT i, pg_sleep(0.0005) FROM generate_series(1, ${ROWS}) AS i) TO STDOUT`, sink),
    );
    await sleep(200);
    await db.pool.query('SELECT pg_cancel_backend($1)', [(client as unknown as { processID: number }).processID]);
    await expect(copy.done).rejects.toThrow(/cancel/);
    await stillUsable();
  });
});
