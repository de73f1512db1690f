/**
 * The live rows a re-sync compares the listing with: a cache of bounded size, the rest on disk, so
 * that a re-sync's memory does not grow with the table. Rule: a row is found only once its block
 * is full (`covers`) or the read is over (`seal`).
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { Block, DEFAULT_GEOMETRY, type Geometry } from './live-block.js';

export type { Geometry } from './live-block.js';

/**
 * The rows, found by id. `find` positions on a row; `id`, `matches` and `mark` are about that row.
 * Marks are the caller's (0 when the run starts, and after `clearMarks`).
 */
export class LiveRowFile {
  /** Rows in all, once sealed; until then, the rows that can be found. */
  rows = 0;
  private readonly cache: Map<number, Block>;
  /** Blocks the file holds (the others are in the cache since the read). */
  private onDisk = new Uint8Array(0);
  /** Blocks whose marks in the file may not be 0. */
  private marksOnDisk = new Uint8Array(0);
  private fd: number | undefined;
  /** The row `find` last found: its block and its index there. */
  private block: Block | undefined;
  private k = -1;
  /** While the rows are read: the blocks that can be found (the first ones), and their last id. */
  private findable = 0;
  private lastFindable = -Infinity;
  private sealed = false;
  private failure: { error: unknown } | undefined;
  private waiters: Array<{ ready: () => boolean; resolve: () => void; reject: (error: unknown) => void }> = [];

  constructor(
    /** The first id of every block (of the read so far, until sealed). */
    private readonly firsts: ArrayLike<number>,
    private readonly geometry: Geometry = DEFAULT_GEOMETRY,
    kept = new Map<number, Block>(),
  ) {
    this.cache = kept;
  }

  static empty(): LiveRowFile {
    const file = new LiveRowFile([]);
    file.seal(undefined, 0);
    return file;
  }

  /** Every row is read: true once sealed. */
  get complete(): boolean {
    return this.sealed;
  }

  /**
   * Whether `find` can answer for `id` now: once every row is read, always; before, when `id` is
   * at most the last id of the blocks already findable (a live row with that id, if any, is in one of them).
   */
  covers(id: number): boolean {
    return this.sealed || id <= this.lastFindable;
  }

  /** Where the row `find` last found is among all rows (-1 before any). */
  get position(): number {
    return this.block === undefined ? -1 : this.block.no * this.geometry.blockRows + this.k;
  }

  /**
   * Resolves once `ready()` holds, checked as blocks become findable and when the read ends;
   * rejects with the read's error if it fails first.
   */
  until(ready: () => boolean): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    if (ready()) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ ready, resolve, reject }));
  }

  /** The writer's: block `b`, full and kept in the cache, can be found. */
  grew(b: Block): void {
    this.findable = b.no + 1;
    this.lastFindable = b.ids[b.count - 1]!;
    this.rows += b.count;
    this.wake();
  }

  /** The writer's: every row is read (`rows` of them); those not in the cache are in the file at `path`. */
  seal(path: string | undefined, rows: number): void {
    this.fd = path === undefined ? undefined : openSync(path, 'r+');
    this.rows = rows;
    this.onDisk = new Uint8Array(this.firsts.length).fill(1);
    for (const no of this.cache.keys()) this.onDisk[no] = 0;
    this.marksOnDisk = new Uint8Array(this.firsts.length);
    this.findable = this.firsts.length;
    this.sealed = true;
    this.wake();
  }

  /** The writer's: the read failed; whoever waits for rows gets `error`. */
  fail(error: unknown): void {
    this.failure ??= { error };
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(error);
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (this.sealed || w.ready()) w.resolve();
      else this.waiters.push(w);
    }
  }

  /** True when a live row has this id; it is then the current row. The next row is tried first. */
  find(id: number): boolean {
    const b = this.block;
    if (b !== undefined) {
      const next = this.k + 1;
      if (next < b.count) {
        if (b.ids[next] === id) return ((this.k = next), true);
      } else if (b.no + 1 < this.findable && this.firsts[b.no + 1] === id) {
        this.block = this.load(b.no + 1);
        return ((this.k = 0), true);
      }
    }
    if (!this.covers(id)) return false;
    const no = lastAtMost(this.firsts, this.findable, id);
    if (no < 0) return false;
    const found = this.load(no);
    this.block = found;
    let lo = 0;
    let hi = found.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = found.ids[mid]!;
      if (v < id) lo = mid + 1;
      else if (v > id) hi = mid - 1;
      else return ((this.k = mid), true);
    }
    return false;
  }

  /** The current row's id. */
  get id(): number {
    return this.block!.ids[this.k]!;
  }

  /** Whether the current row's fingerprint is hi/lo. */
  matches(hi: number, lo: number): boolean {
    const b = this.block!;
    return b.hi[this.k] === hi && b.lo[this.k] === lo;
  }

  /** The shape of the record the current row's fingerprint was made of (shapes.ts); 0 for none. */
  get shape(): number {
    return this.block!.shapes[this.k]!;
  }

  get mark(): number {
    return this.block!.marks[this.k]!;
  }

  set mark(value: number) {
    const b = this.block!;
    b.marks[this.k] = value;
    b.dirty = true;
  }

  /** The ids of the rows whose mark is 0, in id order. */
  unmarked(): number[] {
    const out: number[] = [];
    const scratch = new Block(this.geometry.blockRows);
    for (let no = 0; no < this.firsts.length; no++) {
      const b = this.cache.get(no) ?? this.read(no, scratch);
      for (let k = 0; k < b.count; k++) if (b.marks[k] === 0) out.push(b.ids[k]!);
    }
    return out;
  }

  /** Every mark back to 0. */
  clearMarks(): void {
    for (const b of this.cache.values()) {
      b.marks.fill(0);
      b.dirty = this.marksOnDisk[b.no] === 1;
    }
    const scratch = new Block(this.geometry.blockRows);
    for (let no = 0; no < this.marksOnDisk.length; no++) {
      if (this.marksOnDisk[no] === 0 || this.cache.has(no)) continue;
      const b = this.read(no, scratch);
      b.marks.fill(0);
      b.dirty = true;
      this.writeBack(b);
      this.marksOnDisk[no] = 0;
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.cache.clear();
    this.block = undefined;
  }

  /** Block `no`, from the cache (as the most recently used) or the file (pushing out the least recently used). */
  private load(no: number): Block {
    const cached = this.cache.get(no);
    if (cached !== undefined) {
      this.cache.delete(no);
      this.cache.set(no, cached);
      return cached;
    }
    let b: Block;
    if (this.cache.size < this.geometry.cacheBlocks) b = new Block(this.geometry.blockRows);
    else {
      const [oldest, old] = this.cache.entries().next().value as [number, Block];
      this.cache.delete(oldest);
      this.writeBack(old);
      b = old;
    }
    this.cache.set(no, this.read(no, b));
    return b;
  }

  private read(no: number, into: Block): Block {
    const bytes = into.bytes;
    const at = no * bytes.length;
    for (let done = 0; done < bytes.length;) {
      const n = readSync(this.fd!, bytes, done, bytes.length - done, at + done);
      if (n === 0) throw new Error(`live-row file ended at byte ${at + done}, inside block ${no}`);
      done += n;
    }
    into.no = no;
    into.count = Math.min(this.geometry.blockRows, this.rows - no * this.geometry.blockRows);
    into.dirty = false;
    return into;
  }

  /** A block leaving memory: all of it when the file has no copy yet, else its marks if they changed. */
  private writeBack(b: Block): void {
    const whole = this.onDisk[b.no] === 0;
    if (!whole && !b.dirty) return;
    const from = whole ? 0 : b.marksAt;
    const at = b.no * b.bytes.length + from;
    const bytes = b.bytes.subarray(from);
    for (let done = 0; done < bytes.length;) done += writeSync(this.fd!, bytes, done, bytes.length - done, at + done);
    this.onDisk[b.no] = 1;
    if (b.dirty) this.marksOnDisk[b.no] = 1;
    b.dirty = false;
  }
}

/** The index of the last value at most `x` in ascending `values[0, length)`, or -1. */
function lastAtMost(values: ArrayLike<number>, length: number, x: number): number {
  let lo = 0;
  let hi = length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= x) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi;
}
