/**
 * The unchanged-record shortcut: work in proportion to what changed. Rule: a record is skipped only
 * when its bytes have its id's stored fingerprint AND its row still has the xmin stored with it; a
 * skipped record still counts as present and for duplicates. Phases: docs/internals.md.
 */
import type { Pool, PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import { fingerprint } from './fingerprint.js';
import { LiveRowFile } from './live-file.js';
import { ShapeBook } from './shapes.js';
import {
  readLiveRows,
  saveFingerprints,
  type LiveCounts,
  type LiveRead,
  type LiveRows,
  type ReadOptions,
} from './store.js';
import { programTrustKey, type TrustKey } from './trust-key.js';

/** Ids with more digits than this are kept in a Map (exact as text); they are never skipped. */
const SMALL_ID_DIGITS = 15;
/**
 * The parse waits until the read is this many rows past the last row it found: a push of the
 * parser (8 KiB, about 30 usual records) then finds its rows read.
 */
const READ_AHEAD_ROWS = 4096;

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
  /** Of those, the ones skipped before they were read (`known`). */
  skippedUnread = 0;
  /**
   * The fingerprint of the record `decide` last handed on, [high, low] int32, and the number of
   * its shape once the caller sets it (shapes.ts; 0: none): what its staging line carries.
   */
  readonly fingerprint = new Int32Array(3);
  /** The shapes of the records fingerprints are stored for (shapes.ts). */
  readonly shapes: ShapeBook;
  /** The shape of the record `known` last recognized. */
  knownShape = 0;

  /**
   * Live ids too long for `rows` (whose marks are: 0 not seen; p+1 skipped at position p; -(p+1) staged at position p):
   * id text -> mark.
   */
  private readonly bigSeen = new Map<string, number>();
  private skippedLosers: Array<{ position: number; id: string }> = [];
  private stagedLosers: number[] = [];
  /** What the read found, once it is over. */
  private counts: LiveCounts | undefined;
  /** Staged records whose id the read had not reached: id, position, id, position... (marked at `settle`). */
  private early: number[] = [];
  private earlyBig: Array<[id: string, position: number]> = [];
  /** The highest id `decide` was asked about since the start (or `reset`). */
  private highest = -Infinity;

  /** Resolves when every row is read; rejects when the read fails. */
  readonly read: Promise<void>;

  private constructor(
    private readonly rows: LiveRowFile,
    counts: LiveCounts | Promise<LiveCounts>,
    private readonly key: TrustKey,
    shapes: ShapeBook,
    private readonly stop: () => void = () => undefined,
  ) {
    this.shapes = shapes;
    if (counts instanceof Promise) {
      this.read = counts.then((found) => this.heard(found));
      this.read.catch(() => undefined); // awaited by settle (or the caller); a failure surfaces there
    } else {
      this.heard(counts);
      this.read = Promise.resolve();
    }
  }

  /**
   * Starts reading every live row and the fingerprints that still vouch for them, on a connection
   * of its own, so that the caller can start it while the listing downloads; resolves once the
   * read has begun. The rows can be found as they come.
   */
  static async prepare(
    pool: Pool,
    signal: AbortSignal,
    options: ReadOptions,
    key: TrustKey = programTrustKey(),
  ): Promise<UnchangedShortcut> {
    const stopper = new AbortController();
    const { rows, shapes, done } = await readLiveRows(pool, AbortSignal.any([signal, stopper.signal]), options);
    return new UnchangedShortcut(rows, done, key, new ShapeBook(shapes), () => stopper.abort());
  }

  /**
   * A shortcut over the given live rows, read or being read elsewhere (a test's), and the shapes their fingerprints
   * were stored with.
   */
  static over(
    live: LiveRows | LiveRead,
    key: TrustKey = programTrustKey(),
    shapes = new ShapeBook(),
  ): UnchangedShortcut {
    if ('done' in live) return new UnchangedShortcut(live.rows, live.done, key, shapes);
    const { rows, ...counts } = live;
    return new UnchangedShortcut(rows, counts, key, shapes);
  }

  /** A shortcut over no rows (nothing is skipped, every record fingerprinted): for a run without a database. */
  static empty(key: TrustKey = programTrustKey()): UnchangedShortcut {
    return UnchangedShortcut.over(
      { rows: LiveRowFile.empty(), bigIds: [], vouched: 0, stale: 0, unknown: 0, orphans: 0, storedBy: undefined },
      key,
    );
  }

  /** The read is over. */
  private heard(counts: LiveCounts): void {
    this.counts = counts;
    for (const id of counts.bigIds) this.bigSeen.set(id, 0);
  }

  /** Whether there is no live row at all (a first load); answers once the first rows are read or the read is over. */
  async isEmpty(): Promise<boolean> {
    await Promise.race([this.rows.until(() => this.rows.rows > 0), this.read]);
    if (this.rows.rows > 0) return false;
    await this.read;
    return this.liveBefore === 0;
  }

  /**
   * Undefined when the parse may go on; otherwise a promise that resolves once the read is far
   * enough ahead of it (READ_AHEAD_ROWS past the last row found, and past the highest id asked
   * about), or over. Rejects when the read fails.
   */
  pace(): Promise<void> | undefined {
    // Called before every push: the promise (and its check as a closure) only when the parse must wait.
    return this.readAhead() ? undefined : this.rows.until(() => this.readAhead());
  }

  private readAhead(): boolean {
    const rows = this.rows;
    return rows.complete || (rows.rows >= rows.position + 1 + READ_AHEAD_ROWS && rows.covers(this.highest));
  }

  /** Live rows at the start of the run (once the read is over). */
  get liveBefore(): number {
    return this.rows.rows + this.found().bigIds.length;
  }

  /** What the read found; only once it is over. */
  private found(): LiveCounts {
    if (this.counts === undefined) throw new Error('the live rows are still being read');
    return this.counts;
  }

  /**
   * Why the shortcut was off or trusted only part of the table, in one line; undefined when every
   * live row was vouched for by this build's fingerprints.
   */
  explain(): string | undefined {
    const { key } = this;
    const live = this.found();
    const since = live.storedBy ? ` since run ${live.storedBy.runId}` : '';
    if (this.liveBefore === 0) return 'unchanged-record shortcut off: no live rows yet (a first load)';
    if (live.storedBy === undefined && live.vouched === 0) {
      return 'unchanged-record shortcut off: no fingerprints stored (first run, or the cache was emptied by crash recovery, TRUNCATE or a restore): every record compared';
    }
    if (live.storedBy !== undefined && live.storedBy.trustKey !== key.key) {
      return (
        `unchanged-record shortcut off: the program changed${since}: every record compared, ` +
        `fingerprints stored again`
      );
    }
    const parts: string[] = [];
    if (live.stale > 0)
      parts.push(
        `${live.stale} row${live.stale === 1 ? ' was' : 's were'} changed outside a sync run${since}: compared`,
      );
    if (live.unknown > 0)
      parts.push(`${live.unknown} live row${live.unknown === 1 ? ' has' : 's have'} no fingerprint: compared`);
    if (live.orphans > 0)
      parts.push(
        `${live.orphans} fingerprint${live.orphans === 1 ? '' : 's'} of rows no longer live (deleted ` +
          `outside a sync run): dropped`,
      );
    return parts.length === 0
      ? undefined
      : `unchanged-record shortcut trusts ${live.vouched} of ${this.liveBefore} live rows: ${parts.join('; ')}`;
  }

  /** Logs why it could not trust every live row, when it could not (once they are all read). */
  report(log: Logger): void {
    const why = this.explain();
    if (why) log.info({ liveRows: this.liveBefore }, why);
  }

  /**
   * Every live row is the version this build's fingerprints vouch for, and no fingerprint lost its
   * row: the table is exactly as runs left it (what the BI count carry needs).
   */
  get tableAsRunsLeftIt(): boolean {
    const live = this.found();
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
    if (id > this.highest) this.highest = id;
    const rows = this.rows;
    if (rows.find(id) && rows.matches(h[0]!, h[1]!)) {
      this.see(position, true);
      this.skipped++;
      return true;
    }
    return false;
  }

  /**
   * The record starting at `b[start]` (a '{' at depth 1 of the listing), before it is read: when
   * it starts with its id, the live row of that id has a shape, and the bytes up to the record's
   * first '}' (before `end`) give the row's fingerprint, they are the very bytes that fingerprint
   * was made of, so the record is unchanged and whole there. Answers its length, and leaves its
   * shape in `knownShape` for the caller to count it by (then `knownSeen`); 0 otherwise, and the
   * record is read as usual. A '}' inside a string ends the bytes too early: the fingerprint
   * does not match, and the record is read.
   */
  known(b: Uint8Array, start: number, end: number): number {
    // `{"id":` then 1-15 digits and a ','.
    if (
      b[start + 1] !== 0x22 ||
      b[start + 2] !== 0x69 ||
      b[start + 3] !== 0x64 ||
      b[start + 4] !== 0x22 ||
      b[start + 5] !== 0x3a
    )
      return 0;
    let id = 0;
    let i = start + 6;
    const last = start + 6 + SMALL_ID_DIGITS;
    for (let c = b[i]!; c >= 0x30 && c <= 0x39 && i < last; c = b[++i]!) id = id * 10 + c - 0x30;
    if (i === start + 6 || b[i] !== 0x2c || (b[start + 6] === 0x30 && i > start + 7)) return 0;
    const rows = this.rows;
    if (!rows.covers(id) || !rows.find(id)) return 0;
    const shape = rows.shape;
    if (!this.shapes.has(shape)) return 0;
    const e = (b as Buffer).indexOf(0x7d, i);
    if (e < 0 || e >= end) return 0;
    const h = this.fingerprint;
    fingerprint(b, start, e + 1, h, this.key.seed);
    if (!rows.matches(h[0]!, h[1]!)) return 0;
    if (id > this.highest) this.highest = id;
    this.knownShape = shape;
    return e + 1 - start;
  }

  /** The record `known` recognized is at `position`: skipped, and seen. */
  knownSeen(position: number): void {
    this.see(position, true);
    this.skipped++;
    this.skippedUnread++;
  }

  /** A valid record handed on to staging, with its canonical id: it is present. */
  staged(id: string, position: number): void {
    if (id.length <= SMALL_ID_DIGITS) this.stagedId(Number(id), position);
    else if (this.counts === undefined) this.earlyBig.push([id, position]);
    else if (this.bigSeen.has(id)) this.bigSeen.set(id, -(position + 1));
  }

  /** The same for an id of at most 15 digits, as a number. */
  stagedId(id: number, position: number): void {
    const rows = this.rows;
    if (!rows.covers(id)) this.early.push(id, position);
    else if (rows.find(id)) this.see(position, false);
  }

  /**
   * Forgets every record seen (marks, duplicates, the skipped count), keeping the live rows read
   * once: for a listing parsed again from its start after a download attempt failed part way.
   */
  reset(): void {
    this.rows.clearMarks();
    for (const id of this.bigSeen.keys()) this.bigSeen.set(id, 0);
    this.skippedLosers = [];
    this.stagedLosers = [];
    this.early = [];
    this.earlyBig = [];
    this.highest = -Infinity;
    this.skipped = 0;
    this.skippedUnread = 0;
  }

  /**
   * After the whole listing, once the read is over: the duplicate copies it settled, and the
   * live ids the listing lacked.
   */
  async settle(): Promise<Settled> {
    await this.read;
    const { early, earlyBig } = this;
    for (let k = 0; k < early.length; k += 2) this.stagedId(early[k]!, early[k + 1]!);
    for (const [id, position] of earlyBig) this.staged(id, position);
    this.early = [];
    this.earlyBig = [];
    const missing = this.rows.unmarked().map(String);
    for (const [id, mark] of this.bigSeen) if (mark === 0) missing.push(id);
    return { stagedLosers: this.stagedLosers, skippedLosers: this.skippedLosers, missing };
  }

  /**
   * Before commit: the fingerprints of the rows this run wrote, under this build's trust key
   * (`copied`: a first load COPYed them already, see initial-fingerprints.ts; only the build is recorded).
   */
  async save(
    client: PoolClient,
    run: { runId: string; initialLoad: boolean; copied?: boolean },
    log?: Logger,
  ): Promise<void> {
    await saveFingerprints(
      client,
      {
        ...run,
        trustKey: this.key.key,
        orphans: this.found().orphans,
        shapes: { stored: this.shapes.stored, added: this.shapes.newShapes },
      },
      log,
    );
  }

  /**
   * Stops the read if it is still going, and closes the live-row file once it is over (before the run's temp directory
   * goes).
   */
  async close(): Promise<void> {
    if (this.counts === undefined) this.stop();
    await this.read.catch(() => undefined);
    this.rows.close();
  }

  /**
   * Records a valid copy of the current live row's id. Skipped copies are seen while a chunk is scanned,
   * staged ones after it, so copies arrive out of order: of any two, the later position wins and
   * the other is a duplicate. Every earlier copy of a live id is settled here, so the SQL
   * duplicate pass never sees a partial set of copies of it.
   */
  private see(position: number, skipped: boolean): void {
    const rows = this.rows;
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
