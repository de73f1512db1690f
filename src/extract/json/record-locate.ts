/**
 * Finds records again in the spooled listing, from a known record start at or before each: the
 * earlier copies of duplicate ids, whose raw text goes to sync_rejects, whether the copy was
 * staged (its own offset is known) or skipped as unchanged (found from the checkpoint before it).
 * The listing was validated by the parser already, so skipping values needs only brackets,
 * strings and separators.
 */
import { open, type FileHandle } from 'node:fs/promises';

const FIRST_READ = 64 * 1024;

export interface LocatedRecord {
  byteOffset: number;
  byteLength: number;
  /** The record's bytes, at most `maxBytes` of them. */
  bytes: Buffer;
}

/** Where to find a record: `skip` records after the one starting at byte `offset`. */
export interface RecordPlace {
  offset: number;
  skip: number;
}

/** The records at `places`, each at most `maxBytes` of it, read with the listing file opened once. */
export async function readRecords(
  path: string,
  places: readonly RecordPlace[],
  maxBytes: number,
): Promise<LocatedRecord[]> {
  if (places.length === 0) return [];
  const file = await open(path, 'r');
  try {
    const out: LocatedRecord[] = [];
    for (const place of places) out.push(await readOne(file, place, maxBytes));
    return out;
  } finally {
    await file.close();
  }
}

async function readOne(file: FileHandle, { offset, skip }: RecordPlace, maxBytes: number): Promise<LocatedRecord> {
  for (let size = FIRST_READ; ; size *= 2) {
    const buffer = Buffer.alloc(size);
    const { bytesRead } = await file.read(buffer, 0, size, offset);
    const found = findValue(buffer.subarray(0, bytesRead), skip);
    if (found !== undefined) {
      const [start, end] = found;
      return {
        byteOffset: offset + start,
        byteLength: end - start,
        bytes: Buffer.from(buffer.subarray(start, Math.min(end, start + maxBytes))),
      };
    }
    if (bytesRead < size)
      throw new Error(`record not found at byte ${offset} + ${skip} records (the listing file changed?)`);
  }
}

/** One record, as readRecords. */
export async function locateRecord(
  path: string,
  offset: number,
  skip: number,
  maxBytes: number,
): Promise<LocatedRecord> {
  return (await readRecords(path, [{ offset, skip }], maxBytes))[0]!;
}

/** Start and end of the value `skip` values after the one at b[0], or undefined when b ends first. */
function findValue(b: Buffer, skip: number): [number, number] | undefined {
  let i = 0;
  for (let k = 0; ; k++) {
    const end = valueEnd(b, i);
    if (end < 0) return undefined;
    if (k === skip) return [i, end];
    i = end;
    while (i < b.length && b[i] !== 0x2c) i++; // whitespace, then the ','
    i++;
    while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
    if (i >= b.length) return undefined;
  }
}

/** The end of the JSON value starting at b[i], or -1 when b ends first. */
function valueEnd(b: Buffer, i: number): number {
  let depth = 0;
  let inString = false;
  for (; i < b.length; i++) {
    const c = b[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return i; // a scalar, last in the array
      if (--depth === 0) return i + 1;
    } else if (depth === 0 && (c === 0x2c || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09)) return i;
  }
  return -1;
}

const CHECKPOINT_SHIFT = 6;

/**
 * Where every 64th record starts in the listing (8 bytes per 64 records), so that any record can
 * be found again from its position with locateRecord.
 */
export class RecordCheckpoints {
  private offsets = new Float64Array(1024);

  /** Called for every record, in order. */
  record(position: number, byteOffset: number): void {
    if ((position & ((1 << CHECKPOINT_SHIFT) - 1)) !== 0) return;
    const k = position >> CHECKPOINT_SHIFT;
    if (k >= this.offsets.length) {
      const bigger = new Float64Array(this.offsets.length * 2);
      bigger.set(this.offsets);
      this.offsets = bigger;
    }
    this.offsets[k] = byteOffset;
  }

  /** Where the record at `position` is: a record start at or before it, and how many records to skip from there. */
  place(position: number): RecordPlace {
    const mask = (1 << CHECKPOINT_SHIFT) - 1;
    return { offset: this.offsets[position >> CHECKPOINT_SHIFT]!, skip: position & mask };
  }
}
