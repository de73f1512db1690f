/**
 * The unit the live rows are held in (live-file.ts says why): a block of rows as five columns
 * over one buffer, so that a block is read from or written to the file in one call.
 */

/** Rows per block, and how many blocks stay in memory. */
export interface Geometry {
  blockRows: number;
  cacheBlocks: number;
}

export const DEFAULT_GEOMETRY: Geometry = { blockRows: 1024, cacheBlocks: 800 };

/** One block's memory: 24 bytes a row, in five column views. */
export class Block {
  no = -1;
  count = 0;
  /** Marks changed since the block was read. */
  dirty = false;
  readonly bytes: Uint8Array;
  readonly ids: Float64Array;
  readonly hi: Int32Array;
  readonly lo: Int32Array;
  /** The shape of the record the fingerprint was made of (shapes.ts), 0 for none. */
  readonly shapes: Int32Array;
  readonly marks: Int32Array;
  /** Where the marks column starts in the block, in bytes. */
  readonly marksAt: number;

  constructor(rows: number) {
    const buffer = new ArrayBuffer(rows * 24);
    this.bytes = new Uint8Array(buffer);
    this.ids = new Float64Array(buffer, 0, rows);
    this.hi = new Int32Array(buffer, rows * 8, rows);
    this.lo = new Int32Array(buffer, rows * 12, rows);
    this.shapes = new Int32Array(buffer, rows * 16, rows);
    this.marksAt = rows * 20;
    this.marks = new Int32Array(buffer, this.marksAt, rows);
  }
}
