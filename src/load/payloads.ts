/**
 * sync_payloads: the listing exactly as received, gzipped to a temporary file, then streamed into
 * the table with a binary COPY, so the body is never held in memory.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { Pool, PoolClient } from '../db/pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('audit.sql', ['copy_payload', 'prune_payloads', 'payload_info', 'latest_payload', 'copy_payload_out']);

/**
 * Compresses the spooled listing to `dest`; returns the compressed size. Started when staging is
 * done, it runs on libuv's thread pool while PostgreSQL applies the changes: the second core is
 * otherwise idle then.
 */
export async function compressListing(source: string, dest: string): Promise<number> {
  // Level 1: about 3x smaller than the JSON at a fraction of level 6's CPU.
  await pipeline(createReadStream(source, { highWaterMark: 1024 * 1024 }), createGzip({ level: 1, chunkSize: 256 * 1024 }), createWriteStream(dest));
  return (await stat(dest)).size;
}

/** Stores the spooled gzip as the run's payload, then keeps only the newest `keep`. */
export async function storePayload(
  client: PoolClient,
  payload: { runId: string; sha256: string; bytes: number; gzipPath: string; gzipSize: number; keep: number },
): Promise<void> {
  const copy = client.query(copyFrom(SQL.copy_payload));
  async function* binaryCopy(): AsyncGenerator<Buffer> {
    // PGCOPY binary format: header, one tuple of 4 fields, trailer.
    yield Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), int32(0), int32(0), int16(4)]);
    yield Buffer.concat([int32(8), int64(BigInt(payload.runId))]);
    const sha = Buffer.from(payload.sha256, 'utf8');
    yield Buffer.concat([int32(sha.length), sha]);
    yield Buffer.concat([int32(8), int64(BigInt(payload.bytes))]);
    yield int32(payload.gzipSize);
    yield* createReadStream(payload.gzipPath, { highWaterMark: 1024 * 1024 });
    yield int16(-1);
  }
  await pipeline(binaryCopy(), copy);
  await client.query(SQL.prune_payloads, [payload.keep]);
}

export interface ArchivedPayload {
  runId: string;
  sha256: string;
  bytes: number;
}

/** The newest archived payload, to skip archiving an identical listing again. */
export async function latestPayload(pool: Pool): Promise<ArchivedPayload | undefined> {
  return payloadInfo(await pool.query(SQL.latest_payload));
}

export async function findPayload(pool: Pool, runId: string): Promise<ArchivedPayload | undefined> {
  return payloadInfo(await pool.query(SQL.payload_info, [runId]));
}

function payloadInfo({ rows }: { rows: Array<{ run_id: string; sha256: string; bytes: string }> }): ArchivedPayload | undefined {
  const row = rows[0];
  return row === undefined ? undefined : { runId: String(row.run_id), sha256: row.sha256, bytes: Number(row.bytes) };
}

/** Writes the archived listing of `runId`, decompressed, to `path`; streamed, never whole in memory. */
export async function restorePayload(pool: Pool, runId: string, path: string): Promise<void> {
  const client = await pool.connect();
  try {
    const copy = client.query(copyTo(SQL.copy_payload_out.replace('$1', String(BigInt(runId)))));
    await pipeline(copy, binaryField(), createGunzip(), createWriteStream(path));
  } finally {
    client.release();
  }
}

/** Extracts the single bytea field from a one-row, one-column binary COPY stream. */
function binaryField(): Transform {
  const HEADER = 19 + 2 + 4; // signature, flags, extension length; field count; field length
  let header = Buffer.alloc(0);
  let remaining = -1;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      let data = chunk;
      if (remaining < 0) {
        header = Buffer.concat([header, data]);
        if (header.length < HEADER) return callback();
        remaining = header.readInt32BE(21);
        data = header.subarray(HEADER);
      }
      const take = Math.min(remaining, data.length);
      remaining -= take;
      callback(null, take > 0 ? data.subarray(0, take) : undefined);
    },
  });
}

function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}
function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}
function int64(n: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
}

