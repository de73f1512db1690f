/**
 * The shortcut's side of PostgreSQL (sql/unchanged/fingerprints.sql): at the start of a run, every
 * live id with the fingerprint that still vouches for its row; before commit, the fingerprints of
 * the rows the run wrote. Fingerprints are two int32 halves in memory, one bigint in the table.
 */
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { to as copyTo } from 'pg-copy-streams';
import { backendPid, cancelStatement } from '../db/lock.js';
import type { Pool, PoolClient } from '../db/pool.js';
import { loadStatements, timedQuery } from '../db/statements.js';
import type { Logger } from '../log.js';

const SQL = loadStatements('unchanged/fingerprints.sql', [
  'begin_read',
  'read_plan',
  'state',
  'live_estimate',
  'copy_live_out',
  'count_stored',
  'save_written',
  'clear',
  'save_initial',
  'drop_deleted',
  'drop_orphans',
  'save_state',
]);

/** Every live row at the start of the run, by id ascending; ids of 16 digits or more separately, as text. */
export interface LiveRows {
  ids: Float64Array;
  /** The fingerprint that vouches for the row, or 0/0 (never a fingerprint) when none does. */
  hi: Int32Array;
  lo: Int32Array;
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

/**
 * Every live row and what vouches for it, read on a connection of its own (so that it can run
 * while the listing downloads), in one snapshot. `signal` cancels the read.
 */
export interface ReadOptions {
  log?: Logger;
  /** Told the reading connection's backend pid, e.g. to watch it for lock waits. */
  onConnection?: (pid: number) => void;
}

export async function readLiveRows(pool: Pool, signal: AbortSignal, options: ReadOptions = {}): Promise<LiveRows> {
  const { log } = options;
  const client = await pool.connect();
  options.onConnection?.(backendPid(client));
  const cancel = () => void cancelStatement(pool, client);
  signal.addEventListener('abort', cancel, { once: true });
  try {
    await client.query(SQL.begin_read);
    await client.query(SQL.read_plan);
    const state = (await client.query<{ trust_key: string; run_id: string }>(SQL.state)).rows[0];
    const started = Date.now();
    const estimate = Number((await client.query<{ estimate: string }>(SQL.live_estimate)).rows[0]?.estimate ?? 0);
    const reader = new LiveRowReader(estimate);
    await pipeline(client.query(copyTo(SQL.copy_live_out)), reader);
    const stored = Number((await client.query<{ stored: string }>(SQL.count_stored)).rows[0]!.stored);
    await client.query('COMMIT');
    const rows = reader.result();
    log?.debug({ statement: 'copy_live_out', rows: rows.ids.length + rows.bigIds.length, ms: Date.now() - started }, 'statement done');
    return { ...rows, orphans: stored - rows.vouched - rows.stale, storedBy: state && { trustKey: state.trust_key, runId: state.run_id } };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    signal.removeEventListener('abort', cancel);
    client.release();
  }
}

/**
 * Stores the fingerprints of what the run wrote, drops those of rows it deleted (and of rows
 * deleted outside a run), and records the build. The rows it compared and found unchanged were
 * vouched for by the statement that compared them (classify_changes).
 */
export async function saveFingerprints(
  client: PoolClient,
  run: { runId: string; trustKey: string; initialLoad: boolean; orphans: number; copied?: boolean },
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
  }
  await timed('save_state', [run.trustKey, run.runId]);
}

/**
 * Parses `COPY (SELECT id, hash, trust ...) TO STDOUT (FORMAT binary)` into typed arrays, sized
 * from the table's estimated row count: growing by doubling, and copying the result to its exact
 * length, held up to three times the rows' 16 bytes at once (470 MB peak for 10M rows).
 */
class LiveRowReader extends Writable {
  private ids: Float64Array;
  private hi: Int32Array;
  private lo: Int32Array;
  private readonly bigIds: string[] = [];
  private n = 0;
  private readonly trust = [0, 0, 0];
  private carry: Buffer = Buffer.alloc(0);
  private headerDone = false;

  constructor(estimate: number) {
    super();
    const size = Math.max(1 << 16, Math.ceil(estimate * 1.02));
    this.ids = new Float64Array(size);
    this.hi = new Int32Array(size);
    this.lo = new Int32Array(size);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    try {
      this.take(this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  private take(b: Buffer): void {
    let i = 0;
    if (!this.headerDone) {
      // Signature (11 bytes), flags (4), header extension length (4) and the extension.
      if (b.length < 19) return void (this.carry = b);
      i = 19 + b.readInt32BE(15);
      this.headerDone = true;
    }
    for (;;) {
      if (b.length - i < 2) break;
      const fields = b.readInt16BE(i);
      if (fields === -1) {
        i = b.length;
        break;
      }
      // id: length 8 + int64; hash: length 8 + int64, or length -1 (null); trust: length 2 + int16.
      if (b.length - i < 2 + 12 + 4) break;
      const hashLength = b.readInt32BE(i + 14);
      const trustAt = i + 18 + (hashLength < 0 ? 0 : 8);
      const size = trustAt - i + 4 + 2;
      if (b.length - i < size) break;
      const idHi = b.readInt32BE(i + 6);
      const idLo = b.readUInt32BE(i + 10);
      const id = idHi * 4294967296 + idLo;
      this.trust[b.readInt16BE(trustAt + 4)]!++;
      if (idHi >= 0 && id < 1e15) {
        if (this.n === this.ids.length) this.grow();
        this.ids[this.n] = id;
        // 0/0 never matches: the fingerprint function never gives it (see fingerprint.ts).
        this.hi[this.n] = hashLength < 0 ? 0 : b.readInt32BE(i + 18);
        this.lo[this.n] = hashLength < 0 ? 0 : b.readInt32BE(i + 22);
        this.n++;
      } else this.bigIds.push(b.readBigInt64BE(i + 6).toString());
      i += size;
    }
    this.carry = i < b.length ? Buffer.from(b.subarray(i)) : Buffer.alloc(0);
  }

  private grow(): void {
    // A quarter more: the estimate was short (rows added since it was made).
    const size = Math.ceil(this.ids.length * 1.25);
    const ids = new Float64Array(size);
    ids.set(this.ids);
    const hi = new Int32Array(size);
    hi.set(this.hi);
    const lo = new Int32Array(size);
    lo.set(this.lo);
    this.ids = ids;
    this.hi = hi;
    this.lo = lo;
  }

  result(): Omit<LiveRows, 'orphans' | 'storedBy'> {
    const n = this.n;
    const [unknown, vouched, stale] = this.trust as [number, number, number];
    // Views, not copies, when the arrays are about the rows' length; copies when the estimate was
    // well over (it counts soft-deleted rows too), so that the spare room is not held all run.
    const fit = n >= 0.9 * this.ids.length ? 'subarray' : 'slice';
    return { ids: this.ids[fit](0, n), hi: this.hi[fit](0, n), lo: this.lo[fit](0, n), bigIds: this.bigIds, vouched, stale, unknown };
  }
}
