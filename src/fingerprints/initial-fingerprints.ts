/**
 * A first load's fingerprints, set aside in a file and COPYed in binary after the rows. Rule:
 * memory stays flat whatever the table's size (docs/internals.md, A first load).
 */
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import { AppendFile } from '../io/file-write.js';
import type { PoolClient } from '../db/pool.js';
import { loadStatements, timedQuery } from '../db/statements.js';
import type { Logger } from '../log.js';

const SQL = loadStatements('fingerprints/fingerprints.sql', ['clear', 'copy_initial', 'save_settled']);

const RECORD_BYTES = 20;
const INTS = RECORD_BYTES / 4;
const BATCH = 16 * 1024;
/** Binary COPY: signature, flags, header extension length. */
const HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const TRAILER = Buffer.from([0xff, 0xff]);
/** A tuple: field count, id (int8), fingerprint (int8, or null), row_xmin (xid), shape (int4, or null). */
const TUPLE_BYTES = 2 + 12 + 12 + 8 + 8;

/** A copy of an id in the file whose id `replaced` named: to be settled against its later copies. */
export interface FileCopy {
  id: string;
  position: number;
}

export class InitialFingerprints {
  private readonly file: AppendFile;
  private batch = newBatch();
  private n = 0;

  constructor(path: string) {
    this.file = new AppendFile(path);
  }

  /** Fingerprints set aside so far. */
  get count(): number {
    return this.file.bytes / RECORD_BYTES + this.n;
  }

  /** Bytes queued for the file: the caller flushes at its await points. */
  get pending(): number {
    return this.file.pending + this.n * RECORD_BYTES;
  }

  /**
   * A row's fingerprint (0/0: none, stored as null), its record's shape (0: none) and listing position; `id` below
   * 2^31.
   */
  add(id: number, hi: number, lo: number, shape: number, position: number): void {
    if (this.n === BATCH) this.rotate();
    const at = this.n++ * INTS;
    const b = this.batch;
    b[at] = id;
    b[at + 1] = hi;
    b[at + 2] = lo;
    b[at + 3] = shape;
    b[at + 4] = position;
  }

  async flush(): Promise<void> {
    this.rotate();
    await this.file.flush();
  }

  /**
   * Empties the fingerprint table (an empty data table has no row to vouch for) and COPYs the
   * fingerprints into it, each vouching for the row version `xmin` (the run's transaction id: the
   * run uses no savepoint, so every row it inserts carries it). Returns the copies whose id
   * `replaced` names, for the caller to settle; their fingerprint is stored meanwhile and replaced
   * with the winner's (saveSettled) if a later copy wins.
   */
  async store(
    client: PoolClient,
    xmin: number,
    replaced: ((id: number) => boolean) | undefined,
    log?: Logger,
  ): Promise<FileCopy[]> {
    this.rotate();
    await this.file.close();
    await timedQuery(client, 'clear', SQL.clear, undefined, log);
    const started = Date.now();
    const found: FileCopy[] = [];
    const rows = this.count;
    const tuples = rows === 0 ? [HEADER, TRAILER] : encode(this.file.path, xmin, replaced, found);
    await pipeline(tuples, client.query(copyFrom(SQL.copy_initial)));
    log?.debug({ statement: 'copy_initial', rows, ms: Date.now() - started }, 'statement done');
    return found;
  }

  /** Closes the file without writing the rest: the run failed. */
  async discard(): Promise<void> {
    this.n = 0;
    await this.file.discard();
  }

  private rotate(): void {
    if (this.n === 0) return;
    this.file.append(Buffer.from(this.batch.buffer, 0, this.n * RECORD_BYTES));
    this.batch = newBatch();
    this.n = 0;
  }
}

/**
 * After the winners among duplicate copies were settled into staging_records: their fingerprints, replacing the
 * losers'.
 */
export async function saveSettledFingerprints(client: PoolClient, log?: Logger): Promise<void> {
  await timedQuery(client, 'save_settled', SQL.save_settled, undefined, log);
}

function newBatch(): Int32Array {
  return new Int32Array(BATCH * INTS);
}

/** The file's records as binary COPY tuples for (id, hash, row_xmin, shape), read in 1 MiB chunks. */
async function* encode(
  path: string,
  xmin: number,
  replaced: ((id: number) => boolean) | undefined,
  found: FileCopy[],
): AsyncGenerator<Buffer> {
  yield HEADER;
  let carry = Buffer.alloc(0);
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    const b = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    const records = Math.floor(b.length / RECORD_BYTES);
    // Read back in the order they were written (the platform's), from an aligned copy.
    const ints = new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + records * RECORD_BYTES));
    const out = Buffer.allocUnsafe(records * TUPLE_BYTES);
    let o = 0;
    for (let k = 0; k < records; k++) {
      const id = ints[INTS * k]!;
      const hi = ints[INTS * k + 1]!;
      const lo = ints[INTS * k + 2]!;
      const shape = ints[INTS * k + 3]!;
      if (replaced !== undefined && replaced(id)) found.push({ id: String(id), position: ints[INTS * k + 4]! });
      o = out.writeInt16BE(4, o);
      o = out.writeInt32BE(8, o);
      o = out.writeInt32BE(0, o);
      o = out.writeInt32BE(id, o);
      if (hi === 0 && lo === 0) o = out.writeInt32BE(-1, o);
      else {
        o = out.writeInt32BE(8, o);
        o = out.writeInt32BE(hi, o);
        o = out.writeInt32BE(lo, o);
      }
      o = out.writeInt32BE(4, o);
      o = out.writeUInt32BE(xmin, o);
      if (shape === 0) o = out.writeInt32BE(-1, o);
      else {
        o = out.writeInt32BE(4, o);
        o = out.writeInt32BE(shape, o);
      }
    }
    carry = Buffer.from(b.subarray(records * RECORD_BYTES));
    yield out.subarray(0, o);
  }
  yield TRAILER;
}
