/**
 * The stored fingerprints of the unchanged-record shortcut (sql/migrations/0005_source_hash.sql):
 * read at the start of a run, classified against, and brought up to date before commit, all in
 * the run's transaction. Fingerprints are two int32 halves in memory, one bigint in the table.
 */
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { to as copyTo } from 'pg-copy-streams';
import type { PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { ChangeCounts } from './apply.js';
import { analyzeStaging } from './staging.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('source-hash.sql', [
  'mark_run',
  'state',
  'copy_hashes_out',
  'classify_staged_and_missing',
  'remove_positions',
  'upsert_hashes',
  'insert_hashes',
  'delete_hashes',
  'clear_hashes',
  'save_state',
]);
const COUNT = loadStatements('apply.sql', ['count_changes']);

/** Stored fingerprints by id, ascending; ids of 16 digits or more separately, as text. */
export interface SourceHashes {
  ids: Float64Array;
  hi: Int32Array;
  lo: Int32Array;
  bigIds: string[];
}

/** Marks the transaction as a sync run, so writes to the data tables keep the fingerprints valid. */
export async function markRun(client: PoolClient, runId: string): Promise<void> {
  await client.query(SQL.mark_run, [runId]);
}

/** The stored fingerprints, or undefined when there are none this version may trust. */
export async function readSourceHashes(client: PoolClient, rulesVersion: string): Promise<SourceHashes | undefined> {
  const { rows } = await client.query<{ rules_version: string }>(SQL.state);
  if (rows[0]?.rules_version !== rulesVersion) return undefined;
  const reader = new HashReader();
  await pipeline(client.query(copyTo(SQL.copy_hashes_out)), reader);
  const hashes = reader.result();
  return hashes.ids.length + hashes.bigIds.length === 0 ? undefined : hashes;
}

/**
 * What a run with skipped records would change: the staged records against their rows, and the
 * live ids the listing did not have (`missing`) as deletions. Fills staging_changes as
 * classify_changes does, so the apply statements are the same.
 */
export async function classifyWithHashes(client: PoolClient, missing: string[], liveBefore: number, log?: Logger): Promise<ChangeCounts> {
  // Only changed records are staged here: ANALYZE is cheap and keeps the join's plan informed.
  await analyzeStaging(client, log);
  const started = Date.now();
  await client.query(SQL.classify_staged_and_missing, [missing]);
  const c = (await client.query<{ inserted: string; updated: string; restored: string; deleted: string }>(COUNT.count_changes)).rows[0]!;
  log?.debug({ statement: 'classify_staged_and_missing', missing: missing.length, ms: Date.now() - started }, 'statement done');
  return {
    initialLoad: false,
    liveBefore,
    inserted: Number(c.inserted),
    updated: Number(c.updated),
    restored: Number(c.restored),
    deleted: Number(c.deleted),
  };
}

export interface RemovedRow {
  position: string;
  record_id: string;
  raw_offset: string;
  raw_length: number;
}

/** Removes staged records by position (earlier copies of an id whose last copy was skipped). */
export async function removeStagedPositions(client: PoolClient, positions: number[]): Promise<RemovedRow[]> {
  if (positions.length === 0) return [];
  return (await client.query<RemovedRow>(SQL.remove_positions, [positions])).rows;
}

/**
 * Brings the fingerprints up to date after the changes are applied: with trusted fingerprints,
 * the staged records' are written and the deleted ids' removed (nothing at all when nothing
 * changed); otherwise they are rebuilt from every staged record, and trusted from now on.
 */
export async function saveSourceHashes(
  client: PoolClient,
  update: { trusted: boolean; deleted: string[]; rulesVersion: string; runId: string },
  log?: Logger,
): Promise<void> {
  const started = Date.now();
  if (update.trusted) {
    await client.query(SQL.upsert_hashes);
    if (update.deleted.length > 0) await client.query(SQL.delete_hashes, [update.deleted]);
  } else {
    await client.query(SQL.clear_hashes);
    await client.query(SQL.insert_hashes);
    await client.query(SQL.save_state, [update.rulesVersion, update.runId]);
  }
  log?.debug({ statement: update.trusted ? 'upsert_hashes' : 'insert_hashes', ms: Date.now() - started }, 'statement done');
}

/** Parses `COPY (SELECT id, hash ...) TO STDOUT (FORMAT binary)` into typed arrays. */
class HashReader extends Writable {
  private ids = new Float64Array(1 << 16);
  private hi = new Int32Array(1 << 16);
  private lo = new Int32Array(1 << 16);
  private readonly bigIds: string[] = [];
  private n = 0;
  private carry: Buffer = Buffer.alloc(0);
  private headerDone = false;

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
      // id: length 8 + int64; hash: length 8 + int64, or length -1 (null).
      if (b.length - i < 2 + 12 + 4) break;
      const hashLength = b.readInt32BE(i + 14);
      const size = 2 + 12 + 4 + (hashLength < 0 ? 0 : 8);
      if (b.length - i < size) break;
      const idHi = b.readInt32BE(i + 6);
      const idLo = b.readUInt32BE(i + 10);
      const id = idHi * 4294967296 + idLo;
      const small = idHi >= 0 && id < 1e15;
      if (small) {
        if (this.n === this.ids.length) this.grow();
        this.ids[this.n] = id;
        // A null fingerprint never matches: 0/0 is not stored for a real one (see below).
        this.hi[this.n] = hashLength < 0 ? 0 : b.readInt32BE(i + 18);
        this.lo[this.n] = hashLength < 0 ? 0 : b.readInt32BE(i + 22);
        this.n++;
      } else this.bigIds.push(b.readBigInt64BE(i + 6).toString());
      i += size;
    }
    this.carry = i < b.length ? Buffer.from(b.subarray(i)) : Buffer.alloc(0);
  }

  private grow(): void {
    const size = this.ids.length * 2;
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

  result(): SourceHashes {
    const n = this.n;
    return { ids: this.ids.slice(0, n), hi: this.hi.slice(0, n), lo: this.lo.slice(0, n), bigIds: this.bigIds };
  }
}
