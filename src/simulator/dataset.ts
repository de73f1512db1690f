/**
 * The simulated upstream's records: generated deterministically from a seed, one record at a time,
 * so a listing of any size is streamed without ever being held in memory.
 *
 * Every number is written as exact text built from a seeded PRNG (mulberry32), never through a JS
 * float: some decimals carry 20-30 fractional digits that `JSON.parse` would round.
 * The state kept is two typed arrays (live ids, per-record version): about 8 bytes a record.
 */

/** How a record is made invalid by the `invalid-records` fault. */
export const Invalid = {
  None: 0,
  /** `"inventory_sales":"n/a"` */
  Sales: 1,
  /** `"first_sale":"2021-02-30"` */
  Date: 2,
  /** `"wpi":""` */
  Wpi: 3,
  /** `"id":-<id>` */
  NegativeId: 4,
} as const;
export type Invalid = (typeof Invalid)[keyof typeof Invalid];
export const INVALID_KINDS = 4;

/** Version salt of the second copy written by the `duplicate-ids` fault: same id, other values. */
export const DUPLICATE_SALT = 0x40000000;

/** A record never takes more bytes than this (the longest possible one is about 330). */
export const MAX_RECORD_BYTES = 512;

const ascii = (text: string) => Uint8Array.from(Buffer.from(text, 'latin1'));
/** A constant piece of text, copied four bytes at a time. */
interface Piece {
  words: Int32Array;
  tail: Uint8Array;
}
const piece = (text: string): Piece => {
  const bytes = ascii(text);
  const whole = bytes.length - (bytes.length % 4);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const words = new Int32Array(whole / 4);
  for (let i = 0; i < words.length; i++) words[i] = view.getInt32(i * 4, true);
  return { words, tail: bytes.slice(whole) };
};
const VARIETIES = ['CS', 'PN', 'CH', 'SB', 'ME', 'ZI', 'SY', 'RI', 'MA', 'GR', 'PS', 'CF', 'VI', 'MO', 'TE', 'SA'].map(
  piece,
);
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** "0000".."9999" as little-endian 32-bit words: random digits are written four at a time. */
const DIGITS4 = Int32Array.from({ length: 10000 }, (_, i) => piece(String(i).padStart(4, '0')).words[0] as number);
const TO_UNIT = 1 / 0x100000000;
const [OPEN_ID, WPI, BULK, FINISHED, SALES, FORECAST, MAKE, FIRST_SALE, NULL, WPI_PREFIX, NOT_A_NUMBER, BAD_DATE] = [
  '{"id":',
  ',"wpi":"',
  '","inventory_bulk_wine":',
  ',"inventory_finished_goods":',
  ',"inventory_sales":',
  ',"vintage_forecast":',
  ',"vintage_make":',
  ',"first_sale":',
  'null',
  'WPI-',
  '"n/a"',
  '"2021-02-30"',
].map(piece) as [Piece, Piece, Piece, Piece, Piece, Piece, Piece, Piece, Piece, Piece, Piece, Piece];
const QUOTE = 0x22;
const DOT = 0x2e;
const DASH = 0x2d;
const ZERO = 0x30;

/**
 * Writes records as ASCII bytes straight into a buffer, with the digits drawn from mulberry32:
 * no strings and no floats on the way, so that a listing of millions of records is quick to make.
 */
class RecordEncoder {
  private buf: Uint8Array = Buffer.alloc(0);
  private view = new DataView(this.buf.buffer, this.buf.byteOffset, 0);
  private pos = 0;
  private s = 0;

  reset(seed: number): void {
    this.s = seed | 0;
  }
  /** mulberry32: a uniform 32-bit value (as a signed int). */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) | 0;
    let t = Math.imul(this.s ^ (this.s >>> 15), 1 | this.s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return t ^ (t >>> 14);
  }
  /** 0 <= result < n, for n <= 65536: integer arithmetic only (16 bits of randomness are plenty). */
  below(n: number): number {
    return ((this.next() & 0xffff) * n) >>> 16;
  }
  /** 0 <= result < n, for any n < 2^32. */
  belowLarge(n: number): number {
    return Math.floor((this.next() >>> 0) * TO_UNIT * n);
  }
  /** true with probability percent/100. */
  chance(percent: number): boolean {
    return (this.next() & 0xffff) * 100 < percent * 0x10000;
  }
  byte(c: number): void {
    this.buf[this.pos++] = c;
  }
  bytes(p: Piece): void {
    const { words, tail } = p;
    const view = this.view;
    let o = this.pos;
    for (let i = 0; i < words.length; i++, o += 4) view.setInt32(o, words[i] as number, true);
    for (let i = 0; i < tail.length; i++) this.buf[o++] = tail[i] as number;
    this.pos = o;
  }
  /** A non-negative integer in decimal, left-padded with zeros to `width` digits. */
  uint(n: number, width = 1): void {
    const buf = this.buf;
    if (n > 0x7fffffff) {
      // Not reached by generated values (ids stay far below 2^31); kept correct anyway.
      const text = String(n).padStart(width, '0');
      for (let i = 0; i < text.length; i++) buf[this.pos++] = text.charCodeAt(i);
      return;
    }
    let len =
      n < 10
        ? 1
        : n < 100
          ? 2
          : n < 1000
            ? 3
            : n < 10000
              ? 4
              : n < 100000
                ? 5
                : n < 1000000
                  ? 6
                  : n < 10000000
                    ? 7
                    : n < 100000000
                      ? 8
                      : n < 1000000000
                        ? 9
                        : 10;
    if (len < width) len = width;
    let o = this.pos + len;
    this.pos = o;
    let v = n | 0;
    for (let i = 0; i < len; i++) {
      const q = (v / 10) | 0;
      buf[--o] = ZERO + v - q * 10;
      v = q;
    }
  }
  /** `n` (>= 1) random digits, the last one non-zero so the decimal text is canonical. */
  fraction(n: number): void {
    const buf = this.buf;
    let o = this.pos;
    const view = this.view;
    let left = n - 1;
    while (left >= 8) {
      const x = this.next();
      view.setInt32(o, DIGITS4[(x & 0xffff) % 10000] as number, true);
      view.setInt32(o + 4, DIGITS4[(x >>> 16) % 10000] as number, true);
      o += 8;
      left -= 8;
    }
    if (left > 0) {
      const x = this.next();
      if (left >= 4) {
        view.setInt32(o, DIGITS4[(x & 0xffff) % 10000] as number, true);
        o += 4;
        left -= 4;
      }
      for (let w = DIGITS4[(x >>> 16) % 10000] as number; left > 0; left--, w >>>= 8) buf[o++] = w & 0xff;
    }
    buf[o++] = ZERO + 1 + this.below(9);
    this.pos = o;
  }
  /** `<int below intRange>.<fraction digits>` */
  decimal(intRange: number, digits: number): void {
    this.uint(this.below(intRange));
    this.byte(DOT);
    this.fraction(digits);
  }

  /** Encodes one record at buf[pos]; returns the position after it. */
  record(buf: Uint8Array, pos: number, seed: number, id: number, version: number, invalid: Invalid): number {
    if (buf !== this.buf) {
      this.buf = buf;
      this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    this.pos = pos;
    this.bytes(OPEN_ID);
    if (invalid === Invalid.NegativeId) this.byte(DASH);
    this.uint(id);

    // The wine identifier depends on the id only: a changed record keeps it.
    this.bytes(WPI);
    if (invalid !== Invalid.Wpi) {
      this.reset(mixSeed(seed, id, 0x7fffffff));
      this.bytes(WPI_PREFIX);
      this.uint(2010 + this.below(15));
      this.byte(DASH);
      this.bytes(VARIETIES[this.below(VARIETIES.length)] as Piece);
      this.byte(DASH);
      this.uint(id, 6);
    }

    this.reset(mixSeed(seed, id, version));
    this.bytes(BULK);
    if (this.chance(2)) this.bytes(NULL);
    else if (this.chance(55)) this.uint(this.below(500) * 50);
    else this.decimal(25000, 1 + this.below(2));

    this.bytes(FINISHED);
    if (this.chance(2)) this.bytes(NULL);
    else if (this.chance(50)) this.uint(this.below(10000));
    else this.decimal(8000, 2 + this.below(3));

    this.bytes(SALES);
    const salesAt = this.pos;
    if (this.chance(4)) this.bytes(NULL);
    else {
      const long = this.chance(25);
      if (this.chance(3)) this.byte(DASH);
      this.decimal(5000, long ? 20 + this.below(11) : 12 + this.below(9));
    }
    if (invalid === Invalid.Sales) {
      this.pos = salesAt;
      this.bytes(NOT_A_NUMBER);
    }

    this.bytes(FORECAST);
    if (this.chance(4)) this.bytes(NULL);
    else if (this.chance(12)) this.decimal(1, 20 + this.below(11));
    else this.decimal(30000, 10 + this.below(9));

    this.bytes(MAKE);
    if (this.chance(5)) this.bytes(NULL);
    else if (this.chance(12)) this.decimal(1, 20 + this.below(11));
    else this.decimal(30000, 10 + this.below(9));

    this.bytes(FIRST_SALE);
    if (invalid === Invalid.Date) this.bytes(BAD_DATE);
    else if (this.chance(8)) this.bytes(NULL);
    else {
      const year = 2012 + this.below(13);
      const month = this.below(12);
      const days = month === 1 && year % 4 === 0 ? 29 : (DAYS[month] as number);
      this.byte(QUOTE);
      this.uint(year);
      this.byte(DASH);
      this.uint(month + 1, 2);
      this.byte(DASH);
      this.uint(1 + this.below(days), 2);
      this.byte(QUOTE);
    }
    this.byte(0x7d);
    return this.pos;
  }
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function mixSeed(seed: number, id: number, version: number): number {
  return fmix(
    (fmix((fmix(seed ^ 0x9e3779b9) ^ (id | 0)) + Math.imul(id / 0x100000000, 0x165667b1)) +
      Math.imul(version + 1, 0x27d4eb2f)) |
      0,
  );
}

const shared = new RecordEncoder();
const scratch = Buffer.alloc(MAX_RECORD_BYTES);

/** Encodes one record into `buf` at `pos` (room for MAX_RECORD_BYTES needed); returns the end. */
export function writeRecord(
  buf: Uint8Array,
  pos: number,
  seed: number,
  id: number,
  version: number,
  invalid: Invalid = Invalid.None,
): number {
  return shared.record(buf, pos, seed, id, version, invalid);
}

/**
 * The JSON text of one record (compact, about 245 bytes). `wpi` depends on the id only; the values
 * depend on (seed, id, version).
 */
export function recordText(seed: number, id: number, version: number, invalid: Invalid = Invalid.None): string {
  const end = shared.record(scratch, 0, seed, id, version, invalid);
  return scratch.toString('latin1', 0, end);
}

export interface Mutation {
  /** Records whose values change (same id, new values). */
  change?: number;
  /** Records removed from the listing. */
  remove?: number;
  /** New records, with ids above every id used so far. */
  add?: number;
}

/** The live records: ids ascending, each with the version of its values. */
export class Dataset {
  readonly seed: number;
  private ids: Uint32Array;
  private versions: Uint32Array;
  private size: number;
  private nextId: number;
  private mutations = 0;

  constructor(seed: number, records: number) {
    if (!Number.isInteger(records) || records < 0)
      throw new RangeError(`records must be a whole number >= 0, got ${records}`);
    this.seed = seed >>> 0;
    this.size = records;
    this.ids = new Uint32Array(Math.max(records, 16));
    for (let i = 0; i < records; i++) this.ids[i] = i + 1;
    this.versions = new Uint32Array(this.ids.length);
    this.nextId = records + 1;
  }

  get count(): number {
    return this.size;
  }

  idAt(position: number): number {
    return this.ids[position] as number;
  }

  /** The record at `position` (0-based, in id order), optionally made invalid or given duplicate values. */
  textAt(position: number, invalid: Invalid = Invalid.None, duplicate = false): string {
    const version = (this.versions[position] as number) + (duplicate ? DUPLICATE_SALT : 0);
    return recordText(this.seed, this.ids[position] as number, version, invalid);
  }

  /** Like textAt, encoded into `buf` at `pos` (room for MAX_RECORD_BYTES needed); returns the end. */
  writeAt(buf: Uint8Array, pos: number, position: number, invalid: Invalid = Invalid.None, duplicate = false): number {
    const version = (this.versions[position] as number) + (duplicate ? DUPLICATE_SALT : 0);
    return shared.record(buf, pos, this.seed, this.ids[position] as number, version, invalid);
  }

  /** Deterministic: the same seed and the same sequence of mutations give the same records. */
  mutate(m: Mutation): { changed: number; removed: number; added: number } {
    const whole = (n: number | undefined, name: string) => {
      if (n === undefined) return 0;
      if (!Number.isInteger(n) || n < 0) throw new RangeError(`${name} must be a whole number >= 0, got ${n}`);
      return n;
    };
    const change = Math.min(whole(m.change, 'change'), this.size);
    const remove = Math.min(whole(m.remove, 'remove'), this.size - change);
    const add = whole(m.add, 'add');
    this.mutations++;
    const rng = new RecordEncoder();
    rng.reset(mixSeed(this.seed, 0x5eed, this.mutations));
    const picked = pickDistinct(rng, this.size, change + remove);
    for (let i = 0; i < change; i++) {
      const p = picked[i] as number;
      this.versions[p] = (this.versions[p] as number) + 1;
    }
    if (remove > 0) {
      const gone = new Uint8Array(this.size);
      for (let i = change; i < picked.length; i++) gone[picked[i] as number] = 1;
      let w = 0;
      for (let r = 0; r < this.size; r++) {
        if (gone[r]) continue;
        this.ids[w] = this.ids[r] as number;
        this.versions[w] = this.versions[r] as number;
        w++;
      }
      this.size = w;
    }
    if (add > 0) {
      const needed = this.size + add;
      if (needed > this.ids.length) {
        const capacity = Math.max(needed, Math.ceil(this.ids.length * 1.5));
        const ids = new Uint32Array(capacity);
        ids.set(this.ids.subarray(0, this.size));
        const versions = new Uint32Array(capacity);
        versions.set(this.versions.subarray(0, this.size));
        this.ids = ids;
        this.versions = versions;
      }
      for (let i = 0; i < add; i++) {
        this.ids[this.size] = this.nextId++;
        this.versions[this.size] = 0;
        this.size++;
      }
    }
    return { changed: change, removed: remove, added: add };
  }
}

/** k distinct positions in [0, n), in a deterministic random order. */
function pickDistinct(rng: RecordEncoder, n: number, k: number): number[] {
  if (k === 0) return [];
  if (k * 2 <= n) {
    const seen = new Set<number>();
    const out: number[] = [];
    while (out.length < k) {
      const p = rng.belowLarge(n);
      if (seen.has(p)) continue;
      seen.add(p);
      out.push(p);
    }
    return out;
  }
  const all = new Uint32Array(n);
  for (let i = 0; i < n; i++) all[i] = i;
  for (let i = 0; i < k; i++) {
    const j = i + rng.belowLarge(n - i);
    const t = all[i] as number;
    all[i] = all[j] as number;
    all[j] = t;
  }
  return Array.from(all.subarray(0, k));
}

/** `k` positions spread evenly over `n` records (for the faults that touch a few records). */
export function spreadPositions(n: number, k: number): number[] {
  const count = Math.min(Math.max(k, 0), n);
  return Array.from({ length: count }, (_, j) => Math.floor(((j + 0.5) * n) / count));
}
