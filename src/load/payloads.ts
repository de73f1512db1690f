/**
 * sync_payloads: the listing exactly as received, compressed to a temporary file (or the
 * upstream's own gzip body, as it arrived), then streamed into sync_payload_chunks with a binary
 * COPY in chunks of a few MB, so the body is never held in memory and no stored value nears
 * PostgreSQL's 1 GB field limit, whatever the listing's size.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { Pool, PoolClient } from '../db/pool.js';
import { InvalidListingError, SyncError } from '../errors.js';
import type { Logger } from '../log.js';
import {
  binaryColumnBytes,
  chunkTupleStart,
  compressor,
  copyHeader,
  copyTrailer,
  decompressor,
  preferredAlgorithm,
  type PayloadAlgorithm,
} from './payload-codec.js';
import { loadStatements } from '../db/statements.js';

const SQL = loadStatements('load/audit.sql', [
  'insert_payload',
  'copy_payload_chunks',
  'prune_payloads',
  'drop_payload',
  'payload_info',
  'latest_payload',
  'copy_payload_out',
]);

/** 8 MiB: large enough that a 10M-record listing is a few hundred rows, small enough to detoast cheaply. */
export const PAYLOAD_CHUNK_BYTES = 8 * 1024 * 1024;
const READ_BYTES = 1024 * 1024;

export interface CompressedListing {
  path: string;
  size: number;
  algorithm: PayloadAlgorithm;
  /** How the archive was made, for the log. */
  made: 'compressed' | 'upstream gzip';
}

/** Compresses the spooled listing to `dest`, on libuv's thread pool (off the JavaScript thread). */
export async function compressListing(
  source: string,
  dest: string,
  signal?: AbortSignal,
  algorithm = preferredAlgorithm(),
): Promise<CompressedListing> {
  await pipeline(
    createReadStream(source, { highWaterMark: READ_BYTES }),
    compressor(algorithm),
    createWriteStream(dest),
    signal ? { signal } : {},
  );
  return { path: dest, size: (await stat(dest)).size, algorithm, made: 'compressed' };
}

/**
 * The upstream's gzip body, as it arrived, is the archive as it is: no recompression, and nothing
 * to check, since the listing is what our own gunzip made of these very bytes (restorePayload
 * uses the same gunzip, which reads every member of a multi-member body).
 */
export function upstreamGzip(body: { path: string; size: number }): CompressedListing {
  return { ...body, algorithm: 'gzip', made: 'upstream gzip' };
}

/** Stores the compressed listing as the run's payload, then keeps only the newest `keep`. */
export async function storePayload(
  client: PoolClient,
  payload: {
    runId: string;
    sha256: string;
    bytes: number;
    compressed: CompressedListing | Promise<CompressedListing>;
    keep: number;
    chunkBytes?: number;
  },
  log?: Logger,
): Promise<void> {
  await writePayload(client, payload, log);
  await prunePayloads(client, payload.keep);
}

/** Writes the compressed listing as the run's payload (its row and its chunks), once it is compressed. */
export async function writePayload(
  client: PoolClient,
  payload: {
    runId: string;
    sha256: string;
    bytes: number;
    compressed: CompressedListing | Promise<CompressedListing>;
    chunkBytes?: number;
  },
  log?: Logger,
): Promise<void> {
  const { runId } = payload;
  let started = Date.now();
  // Time the archive's writer waited for the compression (beside the run; `archive_wait` is the run's own wait).
  const compressed = await payload.compressed;
  log?.debug({ statement: 'archive_compression_wait', ms: Date.now() - started }, 'statement done');
  started = Date.now();
  await client.query(SQL.insert_payload, [runId, payload.sha256, payload.bytes, compressed.algorithm, compressed.size]);
  await pipeline(
    chunkRows(BigInt(runId), compressed, payload.chunkBytes ?? PAYLOAD_CHUNK_BYTES),
    client.query(copyFrom(SQL.copy_payload_chunks)),
  );
  log?.debug(
    {
      statement: 'store_payload',
      archive: compressed.made,
      algorithm: compressed.algorithm,
      storedBytes: compressed.size,
      ms: Date.now() - started,
    },
    'statement done',
  );
}

/**
 * Keeps the newest `keep` payloads of successful runs, and none of a run that failed after its payload was committed.
 */
export async function prunePayloads(client: PoolClient, keep: number): Promise<void> {
  await client.query(SQL.prune_payloads, [keep]);
}

/** Removes the payload of a run that failed after it was committed (best effort: the next prune removes it too). */
export async function dropPayload(pool: Pool, runId: string): Promise<void> {
  await pool.query(SQL.drop_payload, [runId]);
}

/** The compressed file as binary COPY rows (run_id, seq, data), read a MB at a time. */
async function* chunkRows(runId: bigint, compressed: CompressedListing, chunkBytes: number): AsyncGenerator<Buffer> {
  const file = await open(compressed.path, 'r');
  try {
    yield copyHeader();
    let position = 0;
    for (let seq = 0; position < compressed.size; seq++) {
      const length = Math.min(chunkBytes, compressed.size - position);
      yield chunkTupleStart(runId, seq, length);
      for (let left = length; left > 0;) {
        const buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, left));
        const { bytesRead } = await file.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0)
          throw new SyncError(
            'INVALID_LISTING',
            `compressed payload ${compressed.path} is shorter than ${compressed.size} bytes`,
          );
        position += bytesRead;
        left -= bytesRead;
        yield buffer.subarray(0, bytesRead);
      }
    }
    yield copyTrailer();
  } finally {
    await file.close();
  }
}

export interface ArchivedPayload {
  runId: string;
  sha256: string;
  bytes: number;
  algorithm: PayloadAlgorithm;
}

/** The newest archived payload, to skip archiving an identical listing again. */
export async function latestPayload(pool: Pool): Promise<ArchivedPayload | undefined> {
  return payloadInfo(await pool.query(SQL.latest_payload));
}

export async function findPayload(pool: Pool, runId: string): Promise<ArchivedPayload | undefined> {
  return payloadInfo(await pool.query(SQL.payload_info, [runId]));
}

function payloadInfo({
  rows,
}: {
  rows: Array<{ run_id: string; sha256: string; bytes: string; algorithm: PayloadAlgorithm }>;
}): ArchivedPayload | undefined {
  const row = rows[0];
  return row === undefined
    ? undefined
    : { runId: String(row.run_id), sha256: row.sha256, bytes: Number(row.bytes), algorithm: row.algorithm };
}

/**
 * Writes the archived listing of `runId`, decompressed, to `path`: streamed chunk by chunk, never
 * whole in memory. Returns its SHA-256, checked against the one recorded when it was archived.
 */
export async function restorePayload(pool: Pool, runId: string, path: string): Promise<string> {
  const info = await findPayload(pool, runId);
  if (!info) throw new SyncError('NOT_FOUND', `run ${runId} has no archived payload`, { exitCode: 2 });
  const hash = createHash('sha256');
  await pool.transaction(async (client) => {
    const copy = client.query(copyTo(SQL.copy_payload_out.replace('$1', String(BigInt(runId)))));
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    await pipeline(copy, binaryColumnBytes(), decompressor(info.algorithm), hashing, createWriteStream(path));
  });
  const sha256 = hash.digest('hex');
  if (sha256 !== info.sha256) {
    throw new InvalidListingError(
      `archived payload of run ${runId} is damaged: its SHA-256 is ${sha256}, ${info.sha256} was recorded; ` +
        `nothing was loaded`,
    );
  }
  return sha256;
}
