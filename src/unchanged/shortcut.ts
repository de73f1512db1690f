/**
 * The unchanged-record shortcut: work in proportion to what changed. A record is skipped (not
 * transformed, staged or compared) only when two things hold:
 *   - its exact bytes have the fingerprint stored for its id (seeded with the program's trust key,
 *     so only this build's fingerprints can match), and
 *   - the row is still the version that fingerprint vouches for: its xmin is the one stored with
 *     it. PostgreSQL gives every new row version a new xmin, whoever writes it (replica role,
 *     disabled triggers, pg_restore, a concurrent transaction), so no write can go unnoticed.
 * A skipped record still counts: it is present (not deleted), and a later copy of its id still
 * makes it a duplicate.
 *
 * Run calls it once per phase: `prepare` (read the live rows and what vouches for them), `decide`
 * per compact record (skip, or hand on with its fingerprint), `staged` per record handed on,
 * `settle` (duplicates and deletions), `save` (fingerprints of what the run wrote); `reset` when
 * the listing is parsed again from its start (a download retried part way).
 *
 * Live rows sit in a file in id order, read through a cache of bounded size (live-file.ts), each
 * with a mark of where the listing had it. Deletions come from this side: a live id the listing
 * never had is one whose row was not marked.
 */
import type { Pool, PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import { fingerprint } from './fingerprint.js';
import { LiveRowFile } from './live-file.js';
import { readLiveRows, saveFingerprints, type LiveRows, type ReadOptions } from './store.js';
import { programTrustKey, type TrustKey } from './trust-key.js';

/** Ids with more digits than this are kept in a Map (exact as text); they are never skipped. */
const SMALL_ID_DIGITS = 15;

export interface Settled {
  /** Positions of staged records that a later copy of their id replaced (to remove from staging). */
  stagedLosers: number[];
  /** Skipped records that a later copy of their id replaced: duplicate rejects. */
  skippedLosers: Array<{ position: number; id: string }>;
  /** Live ids the listing had no valid copy of: the rows to soft-delete. */
  missing: string[];
}

export class UnchangedShortcut {
  /** Records skipped as unchanged. */
  skipped = 0;
  /** The fingerprint of the record `decide` last handed on: [high, low] int32. */
  readonly fingerprint = new Int32Array(2);

  /** Live ids too long for `live.rows` (whose marks are: 0 not seen; p+1 skipped at position p; -(p+1) staged at position p): id text -> mark. */
  private readonly bigSeen = new Map<string, number>();
  private skippedLosers: Array<{ position: number; id: string }> = [];
  private stagedLosers: number[] = [];

  private constructor(
    private readonly live: LiveRows,
    private readonly key: TrustKey,
  ) {
    for (const id of live.bigIds) this.bigSeen.set(id, 0);
  }

  /**
   * Reads every live row and the fingerprints that still vouch for them, on a connection of its
   * own, so that the caller can start it while the listing downloads.
   */
  static async prepare(pool: Pool, signal: AbortSignal, options: ReadOptions, key: TrustKey = programTrustKey()): Promise<UnchangedShortcut> {
    return new UnchangedShortcut(await readLiveRows(pool, signal, options), key);
  }

  /** A shortcut over the given live rows (read elsewhere: a test's). */
  static over(live: LiveRows, key: TrustKey = programTrustKey()): UnchangedShortcut {
    return new UnchangedShortcut(live, key);
  }

  /** A shortcut over no rows (nothing is skipped, every record fingerprinted): for a run without a database. */
  static empty(key: TrustKey = programTrustKey()): UnchangedShortcut {
    return new UnchangedShortcut({ rows: LiveRowFile.empty(), bigIds: [], vouched: 0, stale: 0, unknown: 0, orphans: 0, storedBy: undefined }, key);
  }

  /** Live rows at the start of the run. */
  get liveBefore(): number {
    return this.live.rows.rows + this.live.bigIds.length;
  }

  /**
   * Why the shortcut was off or trusted only part of the table, in one line; undefined when every
   * live row was vouched for by this build's fingerprints.
   */
  explain(): string | undefined {
    const { live, key } = this;
    const since = live.storedBy ? ` since run ${live.storedBy.runId}` : '';
    if (this.liveBefore === 0) return 'unchanged-record shortcut off: no live rows yet (a first load)';
    if (live.storedBy === undefined && live.vouched === 0) {
      return 'unchanged-record shortcut off: no fingerprints stored (first run, or the cache was emptied by crash recovery, TRUNCATE or a restore): every record compared';
    }
    if (live.storedBy !== undefined && live.storedBy.trustKey !== key.key) {
      return `unchanged-record shortcut off: the program changed${since}: every record compared, fingerprints stored again`;
    }
    const parts: string[] = [];
    if (live.stale > 0) parts.push(`${live.stale} row${live.stale === 1 ? ' was' : 's were'} changed outside a sync run${since}: compared`);
    if (live.unknown > 0) parts.push(`${live.unknown} live row${live.unknown === 1 ? ' has' : 's have'} no fingerprint: compared`);
    if (live.orphans > 0) parts.push(`${live.orphans} fingerprint${live.orphans === 1 ? '' : 's'} of rows no longer live (deleted outside a sync run): dropped`);
    return parts.length === 0 ? undefined : `unchanged-record shortcut trusts ${live.vouched} of ${this.liveBefore} live rows: ${parts.join('; ')}`;
  }

  /**
   * Every live row is the version this build's fingerprints vouch for, and no fingerprint lost its
   * row: the table is exactly as runs left it (what the BI count carry needs).
   */
  get tableAsRunsLeftIt(): boolean {
    const { live } = this;
    return live.storedBy?.trustKey === this.key.key && live.stale === 0 && live.unknown === 0 && live.orphans === 0;
  }

  /**
   * A compact record with an id of at most 15 digits (`id`, as a number), whose exact bytes are
   * `bytes[start, end)`: true when it is unchanged (skipped, and counted as seen); otherwise its
   * fingerprint is left in `this.fingerprint` for the record's staging line.
   */
  decide(id: number, bytes: Uint8Array, start: number, end: number, position: number): boolean {
    const h = this.fingerprint;
    fingerprint(bytes, start, end, h, this.key.seed);
    const rows = this.live.rows;
    if (rows.find(id) && rows.matches(h[0]!, h[1]!)) {
      this.see(position, true);
      this.skipped++;
      return true;
    }
    return false;
  }

  /** A valid record handed on to staging, with its canonical id: it is present. */
  staged(id: string, position: number): void {
    if (id.length <= SMALL_ID_DIGITS) this.stagedId(Number(id), position);
    else if (this.bigSeen.has(id)) this.bigSeen.set(id, -(position + 1));
  }

  /** The same for an id of at most 15 digits, as a number. */
  stagedId(id: number, position: number): void {
    if (this.live.rows.find(id)) this.see(position, false);
  }

  /**
   * Forgets every record seen (marks, duplicates, the skipped count), keeping the live rows read
   * once: for a listing parsed again from its start after a download attempt failed part way.
   */
  reset(): void {
    this.live.rows.clearMarks();
    for (const id of this.bigSeen.keys()) this.bigSeen.set(id, 0);
    this.skippedLosers = [];
    this.stagedLosers = [];
    this.skipped = 0;
  }

  /** After the whole listing: the duplicate copies it settled, and the live ids the listing lacked. */
  settle(): Settled {
    const missing = this.live.rows.unmarked().map(String);
    for (const [id, mark] of this.bigSeen) if (mark === 0) missing.push(id);
    return { stagedLosers: this.stagedLosers, skippedLosers: this.skippedLosers, missing };
  }

  /**
   * Before commit: the fingerprints of the rows this run wrote, under this build's trust key
   * (`copied`: a first load COPYed them already, see initial-fingerprints.ts; only the build is recorded).
   */
  async save(client: PoolClient, run: { runId: string; initialLoad: boolean; copied?: boolean }, log?: Logger): Promise<void> {
    await saveFingerprints(client, { ...run, trustKey: this.key.key, orphans: this.live.orphans }, log);
  }

  /** Closes the live-row file (before the run's temp directory goes). */
  close(): void {
    this.live.rows.close();
  }

  /**
   * Records a valid copy of the current live row's id. Skipped copies are seen while a chunk is scanned,
   * staged ones after it, so copies arrive out of order: of any two, the later position wins and
   * the other is a duplicate. Every earlier copy of a live id is settled here, so the SQL
   * duplicate pass never sees a partial set of copies of it.
   */
  private see(position: number, skipped: boolean): void {
    const rows = this.live.rows;
    const mark = skipped ? position + 1 : -(position + 1);
    const prev = rows.mark;
    if (prev === 0) {
      rows.mark = mark;
      return;
    }
    const prevPosition = Math.abs(prev) - 1;
    const loser = position > prevPosition ? prev : mark;
    if (position > prevPosition) rows.mark = mark;
    if (loser > 0) this.skippedLosers.push({ position: loser - 1, id: String(rows.id) });
    else this.stagedLosers.push(-loser - 1);
  }
}
