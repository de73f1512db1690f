/**
 * The live rows as they are read (fingerprints/store.ts), into blocks (live-block.ts): the first
 * ones kept in memory as the cache, findable as each fills; the later ones written to the file.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { writeAll } from '../io/file-write.js';
import { Block, DEFAULT_GEOMETRY, type Geometry } from './live-block.js';
import { LiveRowFile } from './live-file.js';

/** Queued bytes written out at once, in one write. */
const WRITE_AT = 1 << 20;

/**
 * Takes the live rows in id order. The first `cacheBlocks` blocks stay in memory, as the cache
 * the rows are then read through: a table that fits is never written. Later blocks are queued for
 * the file, at their place in it, and written a MiB at a time with one write in flight (the read
 * from PostgreSQL is not held up while one is written).
 */
export class LiveRowWriter {
  /** The rows as read so far, findable as they come (see LiveRowFile.covers). */
  readonly file: LiveRowFile;
  private block: Block;
  private readonly kept = new Map<number, Block>();
  private readonly firsts: number[] = [];
  private rows = 0;
  private handle: FileHandle | undefined;
  private queued: Buffer[] = [];
  private queuedBytes = 0;
  /** Where the first queued block goes in the file. */
  private queuedAt = 0;
  private writing: Promise<void> | undefined;
  /** A write that failed (a full disk): every later call fails with it. */
  private failure: unknown;

  constructor(
    private readonly path: string,
    private readonly geometry: Geometry = DEFAULT_GEOMETRY,
  ) {
    this.block = new Block(geometry.blockRows);
    this.block.no = 0;
    this.file = new LiveRowFile(this.firsts, geometry, this.kept);
  }

  /** The next row (its fingerprint, and the shape it was made of: 0 for none); ids must come in ascending order. */
  add(id: number, hi: number, lo: number, shape = 0): void {
    const b = this.block;
    const k = b.count++;
    if (k === 0) this.firsts.push(id);
    b.ids[k] = id;
    b.hi[k] = hi;
    b.lo[k] = lo;
    b.shapes[k] = shape;
    this.rows++;
    if (b.count === this.geometry.blockRows) {
      this.done(b);
      this.block = new Block(this.geometry.blockRows);
      this.block.no = b.no + 1;
    }
  }

  /**
   * Starts writing what is queued once it is a MiB. Undefined when the caller can go on at once;
   * otherwise a promise of the write in flight before (at most one is: memory stays bounded).
   */
  drain(): Promise<void> | undefined {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.queuedBytes < WRITE_AT) return undefined;
    if (this.writing) return this.writing.then(() => this.drain());
    this.writing = this.write().then(
      () => void (this.writing = undefined),
      (error: unknown) => {
        this.writing = undefined;
        this.failure = error;
        throw error;
      },
    );
    this.writing.catch(() => undefined); // awaited by the next drain or by finish(); a failure surfaces there
    return undefined;
  }

  /** Writes the rest and closes the file; every row can then be found through `file`, which is returned. */
  async finish(): Promise<LiveRowFile> {
    try {
      if (this.block.count > 0) this.done(this.block);
      await this.writing;
      if (this.failure !== undefined) throw this.failure;
      await this.write();
      await this.handle?.close();
    } catch (error) {
      this.file.fail(error);
      throw error;
    }
    const path = this.handle === undefined ? undefined : this.path;
    this.handle = undefined;
    this.file.seal(path, this.rows);
    return this.file;
  }

  /** Closes the file without finishing it: the read failed with `error`, which whoever waits for rows gets. */
  async discard(error: unknown = new Error('the live rows were not read to their end')): Promise<void> {
    this.file.fail(error);
    await this.writing?.catch(() => undefined);
    this.queued = [];
    this.queuedBytes = 0;
    await this.handle?.close();
    this.handle = undefined;
  }

  private done(b: Block): void {
    if (b.no < this.geometry.cacheBlocks) {
      this.kept.set(b.no, b);
      this.file.grew(b);
      return;
    }
    if (this.queued.length === 0) this.queuedAt = b.no * b.bytes.length;
    this.queued.push(Buffer.from(b.bytes.buffer));
    this.queuedBytes += b.bytes.length;
  }

  private async write(): Promise<void> {
    if (this.queued.length === 0) return;
    const [chunks, at, size] = [this.queued, this.queuedAt, this.queuedBytes];
    this.queued = [];
    this.queuedBytes = 0;
    this.handle ??= await open(this.path, 'w');
    await writeAll(this.handle, chunks, at, size);
  }
}
