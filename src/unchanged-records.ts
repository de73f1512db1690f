/**
 * Work in proportion to what changed: a record whose exact bytes have the fingerprint stored for
 * its id at the last successful load is unchanged (same bytes, same rules, same row), so it is
 * neither transformed nor staged nor compared. It still counts: it is present (not deleted), it
 * has its fields and unknown fields, and a later copy of its id still makes it a duplicate.
 *
 * The stored fingerprints sit in typed arrays sorted by id (20 bytes per live row, no objects).
 * Deletions then come from this side: a live id the listing never had is one whose slot was not
 * seen. The duplicate rules match the staged path: the last valid copy of an id wins; an earlier
 * skipped copy is found again through a sparse table of record offsets (one per 64 records).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RecordBytesHook } from './extract/listing-parser.js';
import { RECORD_HASH_NAME, hashRecord } from './extract/record-hash.js';
import { locateRecord } from './extract/record-locate.js';
import { MemberReader } from './extract/record-members.js';
import { duplicateIdReject, MAX_DUPLICATE_RAW_BYTES, type Reject } from './load/audit.js';
import type { SourceHashes } from './load/source-hash.js';
import { NO_HASH } from './load/staging.js';
import { APP_VERSION } from './version.js';

/** Ids with more digits than this are kept in a Map (exact as text); they are never skipped. */
const SMALL_ID_DIGITS = 15;
const CHECKPOINT_SHIFT = 6;

export class UnchangedRecords implements RecordBytesHook {
  /** Records skipped as unchanged. */
  skipped = 0;
  /** Positions of skipped records that a later copy of their id replaced (duplicate rejects), and their ids. */
  readonly skippedLosers: number[] = [];
  readonly skippedLoserIds: string[] = [];
  /** Positions of staged records that a later, skipped copy of their id replaced. */
  readonly stagedLosers: number[] = [];

  private readonly ids: Float64Array;
  private readonly hashHi: Int32Array;
  private readonly hashLo: Int32Array;
  /** Per slot: 0 not seen; p+1 skipped at position p; -(p+1) staged at position p. */
  private readonly seen: Int32Array;
  /** Live ids too long for `ids`: id text -> seen mark as above. */
  private readonly bigSeen = new Map<string, number>();
  private cursor = 0;
  private readonly h = new Int32Array(2);
  readonly members: MemberReader;
  private checkpoints = new Float64Array(1024);
  /** Fingerprints of records handed on to the transform, in position order (a queue). */
  private qPos = new Float64Array(1024);
  private qHi = new Int32Array(1024);
  private qLo = new Int32Array(1024);
  private qHead = 0;
  private qTail = 0;

  /**
   * `hashes`: the stored fingerprints, or undefined when they cannot be trusted (every record is
   * then handed on, and fingerprinted for next time).
   */
  constructor(
    hashes: SourceHashes | undefined,
    knownKeys: readonly string[],
    private readonly on: {
      /** Counts a skipped record's fields from `members`, whose unknown key positions refer to `bytes`. */
      skipped(members: MemberReader, bytes: Buffer): void;
      /** May take a changed compact record over (answering true), given its fingerprint. */
      changed?(members: MemberReader, bytes: Buffer, start: number, end: number, position: number, byteOffset: number, hash: Int32Array): boolean;
    },
  ) {
    this.ids = hashes?.ids ?? new Float64Array(0);
    this.hashHi = hashes?.hi ?? new Int32Array(0);
    this.hashLo = hashes?.lo ?? new Int32Array(0);
    this.seen = new Int32Array(this.ids.length);
    for (const id of hashes?.bigIds ?? []) this.bigSeen.set(id, 0);
    this.members = new MemberReader(knownKeys);
  }

  /** Live rows before this run, as the fingerprints know them. */
  get liveBefore(): number {
    return this.ids.length + this.bigSeen.size;
  }

  record(bytes: Buffer | undefined, start: number, end: number, ends: Float64Array, count: number, position: number, byteOffset: number): boolean {
    if ((position & ((1 << CHECKPOINT_SHIFT) - 1)) === 0) this.checkpoint(position >> CHECKPOINT_SHIFT, byteOffset);
    if (bytes === undefined || !this.members.read(bytes, start, end, ends, count)) return false;
    const h = this.h;
    hashRecord(bytes, start, end, h);
    const slot = this.find(this.members.id);
    if (slot >= 0 && this.hashHi[slot] === h[0] && this.hashLo[slot] === h[1]) {
      this.see(slot, position, true);
      this.skipped++;
      this.on.skipped(this.members, bytes);
      return true;
    }
    if (this.on.changed?.(this.members, bytes, start, end, position, byteOffset, h)) return true;
    this.enqueue(position, h[0]!, h[1]!);
    return false;
  }

  /** The fingerprint of the record at `position` as its two COPY fields. Called in position order. */
  hashFields(position: number): string {
    while (this.qHead < this.qTail && this.qPos[this.qHead]! < position) this.qHead++;
    if (this.qHead < this.qTail && this.qPos[this.qHead] === position) {
      const k = this.qHead++;
      return `${this.qHi[k]}\t${this.qLo[k]}`;
    }
    return NO_HASH;
  }

  /**
   * A record at `position` was rejected: its fingerprint will never be asked for. Dropped here, or a
   * listing of rejected records with readable ids would grow the queue by 16 bytes per record.
   */
  rejected(position: number): void {
    while (this.qHead < this.qTail && this.qPos[this.qHead]! <= position) this.qHead++;
  }

  /** Fingerprints waiting for their record's COPY line. */
  get pendingFingerprints(): number {
    return this.qTail - this.qHead;
  }

  /** A valid record handed on to staging, with its canonical id: it is present. */
  staged(id: string, position: number): void {
    if (id.length <= SMALL_ID_DIGITS) this.stagedId(Number(id), position);
    else if (this.bigSeen.has(id)) this.bigSeen.set(id, -(position + 1));
  }

  /** The same for an id of at most 15 digits, as a number. */
  stagedId(id: number, position: number): void {
    const slot = this.find(id);
    if (slot >= 0) this.see(slot, position, false);
  }

  /** Live ids the listing had no valid copy of: the rows to soft-delete. */
  missingIds(): string[] {
    const out: string[] = [];
    const seen = this.seen;
    for (let k = 0; k < seen.length; k++) if (seen[k] === 0) out.push(String(this.ids[k]));
    for (const [id, mark] of this.bigSeen) if (mark === 0) out.push(id);
    return out;
  }

  /** Where to look for the record at `position`: a record start at or before it, and how many records to skip from there. */
  locate(position: number): { offset: number; skip: number } {
    const mask = (1 << CHECKPOINT_SHIFT) - 1;
    return { offset: this.checkpoints[position >> CHECKPOINT_SHIFT]!, skip: position & mask };
  }

  /**
   * Records a valid copy of the id in `slot`. Skipped copies are seen while a chunk is scanned,
   * staged ones after it, so copies arrive out of order: of any two, the later position wins and
   * the other is a duplicate. Every earlier copy of a fingerprinted id is settled here, so the SQL
   * duplicate pass never sees a partial set of copies of it.
   */
  private see(slot: number, position: number, skipped: boolean): void {
    const mark = skipped ? position + 1 : -(position + 1);
    const prev = this.seen[slot]!;
    if (prev === 0) {
      this.seen[slot] = mark;
      return;
    }
    const prevPosition = Math.abs(prev) - 1;
    const loser = position > prevPosition ? prev : mark;
    if (position > prevPosition) this.seen[slot] = mark;
    if (loser > 0) {
      this.skippedLosers.push(loser - 1);
      this.skippedLoserIds.push(String(this.ids[slot]));
    } else this.stagedLosers.push(-loser - 1);
  }

  /** The slot of `id`, or -1; listings usually come in id order, so the next slot is tried first. */
  private find(id: number): number {
    const ids = this.ids;
    const n = ids.length;
    if (n === 0) return -1;
    const next = this.cursor + 1;
    if (next < n && ids[next] === id) return (this.cursor = next);
    let lo = 0;
    let hi = n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = ids[mid]!;
      if (v < id) lo = mid + 1;
      else if (v > id) hi = mid - 1;
      else return (this.cursor = mid);
    }
    return -1;
  }

  private checkpoint(k: number, offset: number): void {
    if (k >= this.checkpoints.length) {
      const bigger = new Float64Array(this.checkpoints.length * 2);
      bigger.set(this.checkpoints);
      this.checkpoints = bigger;
    }
    this.checkpoints[k] = offset;
  }

  private enqueue(position: number, hi: number, lo: number): void {
    if (this.qHead === this.qTail) this.qHead = this.qTail = 0;
    if (this.qTail === this.qPos.length) {
      const size = this.qPos.length * 2;
      this.qPos = grow(this.qPos, new Float64Array(size));
      this.qHi = grow(this.qHi, new Int32Array(size));
      this.qLo = grow(this.qLo, new Int32Array(size));
    }
    this.qPos[this.qTail] = position;
    this.qHi[this.qTail] = hi;
    this.qLo[this.qTail] = lo;
    this.qTail++;
  }
}

function grow<T extends Float64Array | Int32Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

/**
 * What the stored fingerprints were computed under: the program version, the fingerprint
 * function, and a digest of the code that turns bytes into rows (the parser and the transform
 * rules), so that any change to them makes the next run compare every record again.
 */
export const RULES_VERSION: string = (() => {
  const digest = createHash('sha256');
  for (const dir of ['./extract/', './transform/']) {
    const path = fileURLToPath(new URL(dir, import.meta.url));
    for (const file of readdirSync(path).sort()) digest.update(file).update(readFileSync(new URL(dir + file, import.meta.url)));
  }
  return `${APP_VERSION} ${RECORD_HASH_NAME} rules ${digest.digest('hex').slice(0, 16)}`;
})();

/** The duplicate-id rejects for skipped records that a later copy of their id replaced. */
export async function skippedDuplicateRejects(path: string, unchanged: UnchangedRecords): Promise<Reject[]> {
  const out: Reject[] = [];
  for (let k = 0; k < unchanged.skippedLosers.length; k++) {
    const position = unchanged.skippedLosers[k]!;
    const id = unchanged.skippedLoserIds[k]!;
    const { offset, skip } = unchanged.locate(position);
    const found = await locateRecord(path, offset, skip, MAX_DUPLICATE_RAW_BYTES);
    out.push(duplicateIdReject(position, id, found.bytes.toString('utf8')));
  }
  return out;
}
