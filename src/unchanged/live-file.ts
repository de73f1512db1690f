/**
 * The live rows a re-sync compares the listing with, on disk in id order and read back through a
 * cache of bounded size, so that a re-sync's memory does not grow with the table: as typed arrays
 * in the heap they took 20 bytes a row, 200 MB at 10M rows.
 *
 * The file is a run of blocks of `blockRows` rows. A block is four columns (the id as a float64,
 * the fingerprint's two int32 halves, the row's seen mark), so that reading one is a single read
 * into typed-array views, with nothing to decode. Listings usually come in id order: then each
 * block is read once, one after the other. A listing in another order reads blocks as it needs
 * them, and the last `cacheBlocks` used stay in memory (16 MiB by default: a table of up to about
 * 800,000 rows is read once in any order); a block pushed out has its marks written back first.
 * The file lives in the run's temp directory, read with synchronous calls from inside the parser's
 * record hook; it is in the page cache, having just been written.
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { AppendFile } from '../append-file.js';

/** Rows per block, and how many blocks stay in memory. */
export interface Geometry {
  blockRows: number;
  cacheBlocks: number;
}

const DEFAULT_GEOMETRY: Geometry = { blockRows: 1024, cacheBlocks: 800 };

/** One block's memory: 20 bytes a row, in four column views. */
class Block {
  no = -1;
  count = 0;
  /** Marks changed since the block was read. */
  dirty = false;
  readonly bytes: Uint8Array;
  readonly ids: Float64Array;
  readonly hi: Int32Array;
  readonly lo: Int32Array;
  readonly marks: Int32Array;
  /** Where the marks column starts in the block, in bytes. */
  readonly marksAt: number;

  constructor(rows: number) {
    const buffer = new ArrayBuffer(rows * 20);
    this.bytes = new Uint8Array(buffer);
    this.ids = new Float64Array(buffer, 0, rows);
    this.hi = new Int32Array(buffer, rows * 8, rows);
    this.lo = new Int32Array(buffer, rows * 12, rows);
    this.marksAt = rows * 16;
    this.marks = new Int32Array(buffer, this.marksAt, rows);
  }
}

/** Writes live rows, in id order, into a file a block at a time (queued; the caller flushes). */
export class LiveRowWriter {
  private readonly file: AppendFile;
  private block: Block;
  private readonly firsts: number[] = [];
  private rows = 0;

  constructor(
    private readonly path: string,
    private readonly geometry: Geometry = DEFAULT_GEOMETRY,
  ) {
    this.file = new AppendFile(path);
    this.block = new Block(geometry.blockRows);
  }

  /** Bytes queued for the file. */
  get pending(): number {
    return this.file.pending;
  }

  /** The next row; ids must come in ascending order. */
  add(id: number, hi: number, lo: number): void {
    const b = this.block;
    const k = b.count++;
    if (k === 0) this.firsts.push(id);
    b.ids[k] = id;
    b.hi[k] = hi;
    b.lo[k] = lo;
    this.rows++;
    if (b.count === this.geometry.blockRows) {
      this.file.append(Buffer.from(b.bytes.buffer));
      this.block = new Block(this.geometry.blockRows);
    }
  }

  flush(): Promise<void> {
    return this.file.flush();
  }

  /** Writes the last block and closes the file; the rows are then read through the returned file. */
  async finish(): Promise<LiveRowFile> {
    if (this.block.count > 0) this.file.append(Buffer.from(this.block.bytes.buffer));
    await this.file.close();
    return new LiveRowFile(this.rows === 0 ? undefined : this.path, this.rows, Float64Array.from(this.firsts), this.geometry);
  }

  /** Closes the file without finishing it: the read failed. */
  discard(): Promise<void> {
    return this.file.discard();
  }
}

/**
 * The rows, found by id. `find` positions on a row; `id`, `matches` and `mark` are about that row.
 * Marks are the caller's (0 when the run starts, and after `clearMarks`).
 */
export class LiveRowFile {
  private readonly cache = new Map<number, Block>();
  /** Blocks whose marks were written to the file at least once. */
  private readonly spilled: Uint8Array;
  private fd: number | undefined;
  /** The row `find` last found: its block and its index there. */
  private block: Block | undefined;
  private k = -1;

  constructor(
    path: string | undefined,
    readonly rows: number,
    /** The first id of every block. */
    private readonly firsts: Float64Array,
    private readonly geometry: Geometry = DEFAULT_GEOMETRY,
  ) {
    this.fd = path === undefined ? undefined : openSync(path, 'r+');
    this.spilled = new Uint8Array(firsts.length);
  }

  static empty(): LiveRowFile {
    return new LiveRowFile(undefined, 0, new Float64Array(0));
  }

  /** True when a live row has this id; it is then the current row. The next row is tried first. */
  find(id: number): boolean {
    const b = this.block;
    if (b !== undefined) {
      const next = this.k + 1;
      if (next < b.count) {
        if (b.ids[next] === id) return ((this.k = next), true);
      } else if (b.no + 1 < this.firsts.length && this.firsts[b.no + 1] === id) {
        this.block = this.load(b.no + 1);
        return ((this.k = 0), true);
      }
    }
    const no = lastAtMost(this.firsts, id);
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
    const scratch = this.fd === undefined ? undefined : new Block(this.geometry.blockRows);
    for (let no = 0; no < this.firsts.length; no++) {
      const b = this.cache.get(no) ?? this.read(no, scratch!);
      for (let k = 0; k < b.count; k++) if (b.marks[k] === 0) out.push(b.ids[k]!);
    }
    return out;
  }

  /** Every mark back to 0. */
  clearMarks(): void {
    for (const b of this.cache.values()) {
      b.marks.fill(0);
      b.dirty = this.spilled[b.no] === 1;
    }
    const scratch = new Block(this.geometry.blockRows);
    for (let no = 0; no < this.spilled.length; no++) {
      if (this.spilled[no] === 0 || this.cache.has(no)) continue;
      this.read(no, scratch).marks.fill(0);
      this.writeMarks(scratch);
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
      if (old.dirty) this.writeMarks(old);
      b = old;
    }
    this.cache.set(no, this.read(no, b));
    return b;
  }

  private read(no: number, into: Block): Block {
    const bytes = into.bytes;
    const at = no * bytes.length;
    for (let done = 0; done < bytes.length; ) {
      const n = readSync(this.fd!, bytes, done, bytes.length - done, at + done);
      if (n === 0) throw new Error(`live-row file ended at byte ${at + done}, inside block ${no}`);
      done += n;
    }
    into.no = no;
    into.count = Math.min(this.geometry.blockRows, this.rows - no * this.geometry.blockRows);
    into.dirty = false;
    return into;
  }

  private writeMarks(b: Block): void {
    const at = b.no * b.bytes.length + b.marksAt;
    const marks = b.bytes.subarray(b.marksAt);
    for (let done = 0; done < marks.length; ) done += writeSync(this.fd!, marks, done, marks.length - done, at + done);
    this.spilled[b.no] = 1;
    b.dirty = false;
  }
}

/** The index of the last value at most `x` in ascending `values`, or -1. */
function lastAtMost(values: Float64Array, x: number): number {
  let lo = 0;
  let hi = values.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= x) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi;
}
