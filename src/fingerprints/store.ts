/**
 * The shortcut's side of PostgreSQL (sql/fingerprints/fingerprints.sql): at the start of a run, every
 * live id with the fingerprint that still vouches for its row, written to a file in the run's temp
 * directory (live-file.ts); before commit, the fingerprints of the rows the run wrote.
 * Fingerprints are two int32 halves in the file, one bigint in the table.
 */
import { join } from 'node:path';
import { CopyOut, type CopyOutSink } from '../db/copy-out.js';
import { cancelStatement } from '../db/lock.js';
import type { Pool, PoolClient } from '../db/pool.js';
import { loadStatements, timedQuery } from '../db/statements.js';
import type { Logger } from '../log.js';
import type { LiveRowFile } from './live-file.js';
import { LiveRowWriter } from './live-writer.js';
import { MAX_SHAPES, type StoredShape } from './shapes.js';

const SQL = loadStatements('fingerprints/fingerprints.sql', [
  'read_plan',
  'state',
  'read_shapes',
  'save_shapes',
  'prune_shapes',
  'copy_live_out',
  'count_stored',
  'save_written',
  'clear',
  'save_initial',
  'drop_deleted',
  'drop_orphans',
  'fingerprint_order',
  'cluster_fingerprints',
  'save_state',
]);
/** Below this correlation of heap order with id order (pg_stats), the fingerprints are rewritten in order. */
const MIN_ORDER = 0.9;

/** What the read of the live rows found once it is over, beside the rows themselves. */
export interface LiveCounts {
  /** Ids of 16 digits or more, as text, by id ascending (not in the row file). */
  bigIds: string[];
  /** Rows whose stored version is still the row (fingerprinted or not). */
  vouched: number;
  /** Rows written since their fingerprint was stored: by something other than a sync run. */
  stale: number;
  /** Live rows with no fingerprint stored at all. */
  unknown: number;
  /** Stored fingerprints whose row is no longer live (deleted outside a sync run). */
  orphans: number;
  /** Which build stored the fingerprints, in which run (explains a full comparison). */
  storedBy: { trustKey: string; runId: string } | undefined;
}

/** The record shapes the fingerprints were stored with (shapes.ts), read before the rows. */
export type LiveShapes = readonly StoredShape[];

/**
 * Every live row at the start of the run, by id ascending: each with the fingerprint that vouches for it, or 0/0 (never
 * a fingerprint) when none does.
 */
export interface LiveRows extends LiveCounts {
  rows: LiveRowFile;
}

/** The live rows as they are read: `rows` fills as they come, `done` when all are in. */
export interface LiveRead {
  rows: LiveRowFile;
  shapes: LiveShapes;
  done: Promise<LiveCounts>;
}

export interface ReadOptions {
  /** The run's temp directory, where the rows are written. */
  dir: string;
  log?: Logger;
  /** Told the reading connection's backend pid, e.g. to watch it for lock waits. */
  onConnection?: (pid: number) => void;
}

/**
 * Every live row and what vouches for it, read on a connection of its own (so that it can run
 * while the listing downloads and is parsed), in one snapshot. Returns once the read has begun;
 * `signal` cancels it.
 */
export async function readLiveRows(pool: Pool, signal: AbortSignal, options: ReadOptions): Promise<LiveRead> {
  const { log } = options;
  const client = await pool.connect();
  const cancel = () => void cancelStatement(pool, client);
  signal.addEventListener('abort', cancel, { once: true });
  const writer = new LiveRowWriter(join(options.dir, 'live-rows'));
  const failed = async (error: unknown) => {
    await client.query('ROLLBACK').catch(() => undefined);
    await writer.discard(error).catch(() => undefined);
  };
  const release = () => {
    signal.removeEventListener('abort', cancel);
    client.release();
  };
  let state: { trust_key: string; run_id: string } | undefined;
  let shapes: StoredShape[];
  try {
    // One snapshot: a row written after it gets another xmin, which the next run sees.
    options.onConnection?.(await pool.begin(client, { mode: 'ISOLATION LEVEL REPEATABLE READ READ ONLY' }));
    await client.query(SQL.read_plan);
    state = (await client.query<{ trust_key: string; run_id: string }>(SQL.state)).rows[0];
    shapes = (await client.query<StoredShape>(SQL.read_shapes)).rows;
  } catch (error) {
    await failed(error);
    release();
    throw error;
  }
  const done = (async (): Promise<LiveCounts> => {
    try {
      const started = Date.now();
      const reader = new LiveRowReader(writer);
      await client.query(new CopyOut(SQL.copy_live_out, reader)).done;
      reader.end();
      const stored = Number((await client.query<{ stored: string }>(SQL.count_stored)).rows[0]!.stored);
      await client.query('COMMIT');
      const rows = await writer.finish();
      const counts = reader.counts();
      log?.debug(
        { statement: 'copy_live_out', rows: rows.rows + reader.bigIds.length, ms: Date.now() - started },
        'statement done',
      );
      return {
        bigIds: reader.bigIds,
        ...counts,
        orphans: stored - counts.vouched - counts.stale,
        storedBy: state && { trustKey: state.trust_key, runId: state.run_id },
      };
    } catch (error) {
      await failed(error);
      throw error;
    } finally {
      release();
    }
  })();
  done.catch(() => undefined); // awaited by the shortcut; a failure surfaces there
  return { rows: writer.file, shapes, done };
}

/**
 * Stores the fingerprints of what the run wrote, drops those of rows it deleted (and of rows
 * deleted outside a run), and records the build. The rows it compared and found unchanged were
 * vouched for by the statement that compared them (classify_changes).
 */
export async function saveFingerprints(
  client: PoolClient,
  run: {
    runId: string;
    trustKey: string;
    initialLoad: boolean;
    orphans: number;
    copied?: boolean;
    shapes: { stored: number; added: readonly StoredShape[] };
  },
  log?: Logger,
): Promise<void> {
  const timed = (name: keyof typeof SQL, params?: unknown[]) => timedQuery(client, name, SQL[name], params, log);
  if (run.initialLoad) {
    // A first load COPYs its fingerprints beside its rows (initial-fingerprints.ts); else from staging.
    if (!run.copied) {
      await timed('clear');
      await timed('save_initial');
    }
  } else {
    await timed('save_written');
    await timed('drop_deleted');
    if (run.orphans > 0) await timed('drop_orphans');
    // A first load writes them in listing order, usually id order; re-syncs scatter them.
    const order = (await timed('fingerprint_order')).rows[0] as { correlation: number | null } | undefined;
    if (order?.correlation != null && order.correlation < MIN_ORDER) {
      await timed('cluster_fingerprints');
      log?.info(
        { correlation: Number(order.correlation.toFixed(3)) },
        "fingerprints rewritten in id order, for the next runs' read of the live rows",
      );
    }
  }
  const { added, stored } = run.shapes;
  // Shapes no fingerprint refers to are dropped once they are many (a listing's shapes change slowly).
  if (stored + added.length > MAX_SHAPES / 2) await timed('prune_shapes');
  if (added.length > 0) await timed('save_shapes', [added.map((s) => s.shape), added.map((s) => s.description)]);
  await timed('save_state', [run.trustKey, run.runId]);
}

/**
 * Parses `COPY (SELECT id, hash, trust, shape ...) TO STDOUT (FORMAT binary)` into the live-row file
 * (which holds the COPY back only while a MiB waits behind a write in flight), and counts the rows
 * by trust. Rows are read where they lie in the socket's chunks (a CopyData message is a row);
 * only one split across chunks, or the header, is copied.
 */
class LiveRowReader implements CopyOutSink {
  readonly bigIds: string[] = [];
  private readonly trust = [0, 0, 0];
  private carry: Buffer = Buffer.alloc(0);
  private headerDone = false;
  private ended = false;

  constructor(private readonly rows: LiveRowWriter) {}

  data(b: Buffer, start: number, end: number): void {
    if (this.carry.length === 0) {
      const i = this.take(b, start, end);
      if (i < end) this.carry = Buffer.from(b.subarray(i, end));
      return;
    }
    const joined = Buffer.concat([this.carry, b.subarray(start, end)]);
    const i = this.take(joined, 0, joined.length);
    this.carry = i < joined.length ? joined.subarray(i) : Buffer.alloc(0);
  }

  drain(): Promise<void> | undefined {
    return this.rows.drain();
  }

  /** After the COPY: it ended with its trailer, nothing after. */
  end(): void {
    if (!this.ended || this.carry.length > 0) throw new Error("the live rows' COPY ended before its trailer");
  }

  /** Takes the whole rows of b[i, end); returns where the first incomplete one starts. */
  private take(b: Buffer, i: number, end: number): number {
    if (!this.headerDone) {
      // Signature (11 bytes), flags (4), header extension length (4) and the extension.
      if (end - i < 19) return i;
      const header = 19 + b.readInt32BE(i + 15);
      if (end - i < header) return i;
      i += header;
      this.headerDone = true;
    }
    while (end - i >= 2) {
      const fields = b.readInt16BE(i);
      if (fields === -1) {
        this.ended = true;
        return end;
      }
      // id: length 8 + int64; hash: length 8 + int64, or length -1 (null); trust: length 2 + int16;
      // shape: length 4 + int32, or length -1 (null).
      if (end - i < 2 + 12 + 4) break;
      const hashLength = b.readInt32BE(i + 14);
      const trustAt = i + 18 + (hashLength < 0 ? 0 : 8);
      const shapeAt = trustAt + 6;
      if (end - i < shapeAt + 4 - i) break;
      const shapeLength = b.readInt32BE(shapeAt);
      const size = shapeAt - i + 4 + (shapeLength < 0 ? 0 : 4);
      if (end - i < size) break;
      const idHi = b.readInt32BE(i + 6);
      const idLo = b.readUInt32BE(i + 10);
      const id = idHi * 4294967296 + idLo;
      this.trust[b.readInt16BE(trustAt + 4)]!++;
      // 0/0 never matches: the fingerprint function never gives it (see fingerprint.ts).
      if (idHi >= 0 && id < 1e15) {
        this.rows.add(
          id,
          hashLength < 0 ? 0 : b.readInt32BE(i + 18),
          hashLength < 0 ? 0 : b.readInt32BE(i + 22),
          shapeLength < 0 ? 0 : b.readInt32BE(shapeAt + 4),
        );
      } else this.bigIds.push(b.readBigInt64BE(i + 6).toString());
      i += size;
    }
    return i;
  }

  counts(): Pick<LiveCounts, 'vouched' | 'stale' | 'unknown'> {
    const [unknown, vouched, stale] = this.trust as [number, number, number];
    return { vouched, stale, unknown };
  }
}
