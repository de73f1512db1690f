/**
 * The fast path from a record's bytes to its staging COPY line, with no intermediate value,
 * object or string: canonical decimals and dates are written straight into an output buffer.
 * It takes only records it is sure of (the usual ones) and declines everything else, which then
 * goes through the zod schema (record.ts), the definition of the rules and of every reject
 * reason. A differential test holds the two to the same rows (test/unit/record-copy.test.ts).
 */
import { OVERFLOW, ROUNDED, type BiTally } from './bi-effect.js';
import { daysInMonth } from './date.js';
import { MAX_DIGITS } from './decimal.js';
import { trimValueEnd, writeFastExtras } from './extra-fields.js';
import { FIELDS, type FieldKind } from '../fields.js';

/** Where a compact record's known fields and extra members are (see extract/json/record-members.ts). */
export interface RecordFields {
  present: number;
  valueStart: Int32Array;
  valueEnd: Int32Array;
  /** Per extra member: key start, key end, value start, member end. */
  unknown: Int32Array;
  unknownCount: number;
  /**
   * The scanner's fast lane took it: compact, its strings plain ASCII and its numbers of bounded size
   * (extract/json/listing-types.ts).
   */
  plain: boolean;
}

/**
 * How each known field is written, by its catalogue kind, in KNOWN_FIELDS order: the staging
 * table's column order (STAGING_COLUMNS in load/staging.ts), which copyLine follows too.
 */
const ID = 0;
const TEXT = 1;
const DECIMAL = 2;
const DATE = 3;
const KIND_CODE: Record<FieldKind, number> = { id: ID, text: TEXT, decimal: DECIMAL, date: DATE };
const KINDS = Int8Array.from(FIELDS, (f) => KIND_CODE[f.kind]);
/** Presence bits of the required fields besides the id (which MemberReader already demands). */
const REQUIRED = FIELDS.reduce((bits, f, i) => (f.required && f.kind !== 'id' ? bits | (1 << i) : bits), 0);
const DECIMAL_COUNT = KINDS.filter((k) => k === DECIMAL).length;
/** Exponents beyond this many digits are left to the zod path (which says why they are too large). */
const MAX_EXPONENT_DIGITS = 6;
const FLUSH_AT = 256 * 1024;

export class CopyWriter {
  private out = Buffer.allocUnsafe(FLUSH_AT * 2);
  private o = 0;

  /**
   * Without `rowSuffix`, staging lines (STAGING_COLUMNS: position, the fields, extra_fields, raw
   * offset and length, fingerprint). With it, a first load's lines into the table itself: the
   * fields and extra_fields, then `rowSuffix` as it is (the tab-led columns every row of the run
   * shares, and the newline).
   * With `bi`, the decimals of every line written are counted into it as the BI views treat them
   * (a first load's rows, so that the run need not scan the table for that count).
   * `extras`: the record's extra members are written as its extra_fields (SYNC_EXTRA_FIELDS=keep);
   * otherwise extra_fields is always null.
   */
  constructor(
    private readonly extras: boolean,
    private readonly rowSuffix?: Buffer,
    private readonly bi?: BiTally,
  ) {}

  /** Bytes written so far. */
  get length(): number {
    return this.o;
  }

  /** The lines written so far, as a buffer of their own; the writer starts empty again. */
  take(): Buffer {
    const lines = Buffer.from(this.out.subarray(0, this.o));
    this.o = 0;
    return lines;
  }

  /**
   * Appends the COPY line of the record `b[start, end)` (member positions in `fields`) and
   * answers true, or writes nothing and answers false when the record is not one it is sure of.
   * `hash` is its two fingerprint halves and its shape (0: none, null in the table).
   */
  write(
    b: Buffer,
    start: number,
    end: number,
    fields: RecordFields,
    position: number,
    byteOffset: number,
    hash: Int32Array,
  ): boolean {
    if ((fields.present & REQUIRED) !== REQUIRED) return false;
    const suffix = this.rowSuffix;
    const worst = this.o + 2 * (end - start) + DECIMAL_COUNT * (MAX_DIGITS + 3) + 128 + (suffix?.length ?? 0);
    if (worst > this.out.length) {
      const bigger = Buffer.allocUnsafe(Math.max(worst, this.out.length * 2));
      this.out.copy(bigger, 0, 0, this.o);
      this.out = bigger;
    }
    const out = this.out;
    const bi = this.bi;
    // Added to the tally only once the line is written whole: a declined record counts nothing.
    let rounded = 0;
    let overflow = 0;
    let o = suffix === undefined ? writeInt(out, this.o, position) : this.o;
    for (let f = 0; f < KINDS.length; f++) {
      if (f > 0 || suffix === undefined) out[o++] = 0x09;
      const kind = KINDS[f]!;
      if (kind === ID) o = id(b, fields.valueStart[f]!, fields.valueEnd[f]!, out, o);
      else if ((fields.present & (1 << f)) === 0) o = writeNull(out, o);
      else if (kind === DECIMAL) {
        const at = o;
        o = decimal(b, fields.valueStart[f]!, fields.valueEnd[f]!, out, o);
        if (bi !== undefined && o > at && out[at] !== 0x5c) {
          const effect = bi.effect(out, at, o);
          if (effect === ROUNDED) rounded++;
          else if (effect === OVERFLOW) overflow++;
        }
      } else if (kind === TEXT) o = text(b, fields.valueStart[f]!, fields.valueEnd[f]!, out, o);
      else o = date(b, fields.valueStart[f]!, fields.valueEnd[f]!, out, o);
      if (o < 0) return false;
    }
    out[o++] = 0x09;
    o = this.extras && fields.unknownCount > 0 ? writeFastExtras(b, fields, out, o) : writeNull(out, o);
    if (o < 0) return false;
    if (bi !== undefined) {
      bi.rounded += rounded;
      bi.overflow += overflow;
    }
    if (suffix !== undefined) {
      this.o = o + suffix.copy(out, o);
      return true;
    }
    out[o++] = 0x09;
    o = writeInt(out, o, byteOffset);
    out[o++] = 0x09;
    o = writeInt(out, o, end - start);
    out[o++] = 0x09;
    o = writeInt(out, o, hash[0]!);
    out[o++] = 0x09;
    o = writeInt(out, o, hash[1]!);
    out[o++] = 0x09;
    o = hash[2] === 0 ? writeNull(out, o) : writeInt(out, o, hash[2]!);
    out[o++] = 0x0a;
    this.o = o;
    return true;
  }
}

/** The id: MemberReader accepted only 1-15 plain digits, maybe quoted. */
function id(b: Buffer, s: number, e: number, out: Buffer, o: number): number {
  e = trimValueEnd(b, s, e);
  if (b[s] === 0x22) {
    s++;
    e--;
  }
  return copyBytes(b, s, e, out, o);
}

/**
 * A text field (`wpi`): a string of printable ASCII without escapes, trimmed and not empty, or a JSON number's text.
 */
function text(b: Buffer, s: number, e: number, out: Buffer, o: number): number {
  e = trimValueEnd(b, s, e);
  const c = b[s]!;
  if (c === 0x22) {
    s++;
    e--;
    for (let i = s; i < e; i++) {
      const d = b[i]!;
      if (d < 0x20 || d > 0x7e || d === 0x5c) return -1;
    }
    while (s < e && b[s] === 0x20) s++;
    while (e > s && b[e - 1] === 0x20) e--;
    if (s === e) return -1;
  } else if (!((c >= 0x30 && c <= 0x39) || c === 0x2d)) return -1;
  else if (b[s + 1] === 0x49) return -1; // -Infinity
  return copyBytes(b, s, e, out, o);
}

/**
 * A decimal: JSON number or numeric string (spaces around allowed) to canonical text; `null` or
 * `""` to \N. -1 for anything else, or a value the zod path should judge (over MAX_DIGITS digits).
 */
function decimal(b: Buffer, s: number, e: number, out: Buffer, o: number): number {
  e = trimValueEnd(b, s, e);
  let c = b[s]!;
  if (c === 0x6e) return writeNull(out, o);
  if (c === 0x22) {
    s++;
    e--;
    if (s === e) return writeNull(out, o);
    while (s < e && b[s] === 0x20) s++;
    while (e > s && b[e - 1] === 0x20) e--;
    c = b[s]!;
  }
  let i = s;
  let negative = false;
  if (c === 0x2d || c === 0x2b) {
    negative = c === 0x2d;
    i++;
  }
  const intStart = i;
  while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
  const intLen = i - intStart;
  let fracStart = i;
  let fracLen = 0;
  if (i < e && b[i] === 0x2e) {
    fracStart = ++i;
    while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    fracLen = i - fracStart;
  }
  if (intLen + fracLen === 0) return -1;
  let exponent = 0;
  if (i < e && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    let expNegative = false;
    if (i < e && (b[i] === 0x2d || b[i] === 0x2b)) expNegative = b[i++] === 0x2d;
    const expStart = i;
    while (i < e && b[i] === 0x30) i++;
    const significantStart = i;
    while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) exponent = exponent * 10 + (b[i++]! - 0x30);
    if (i === expStart || i - significantStart > MAX_EXPONENT_DIGITS) return -1;
    if (expNegative) exponent = -exponent;
  }
  if (i !== e) return -1;

  // The digits int+frac as one sequence; significant ones are [first, last].
  const n = intLen + fracLen;
  let first = 0;
  while (first < n && digitAt(b, intStart, intLen, fracStart, first) === 0x30) first++;
  if (first === n) {
    out[o] = 0x30;
    return o + 1;
  }
  let last = n - 1;
  while (digitAt(b, intStart, intLen, fracStart, last) === 0x30) last--;
  const point = intLen - first + exponent;
  const count = last - first + 1;
  const total = point <= 0 ? count - point : Math.max(count, point);
  if (total > MAX_DIGITS) return -1;
  if (negative) out[o++] = 0x2d;
  if (point <= 0) {
    out[o++] = 0x30;
    out[o++] = 0x2e;
    for (let k = point; k < 0; k++) out[o++] = 0x30;
    for (let k = first; k <= last; k++) out[o++] = digitAt(b, intStart, intLen, fracStart, k);
  } else if (point >= count) {
    for (let k = first; k <= last; k++) out[o++] = digitAt(b, intStart, intLen, fracStart, k);
    for (let k = count; k < point; k++) out[o++] = 0x30;
  } else {
    for (let k = first; k < first + point; k++) out[o++] = digitAt(b, intStart, intLen, fracStart, k);
    out[o++] = 0x2e;
    for (let k = first + point; k <= last; k++) out[o++] = digitAt(b, intStart, intLen, fracStart, k);
  }
  return o;
}

/** Digit k of the mantissa's digits, the integer part's then the fraction's. */
function digitAt(b: Buffer, intStart: number, intLen: number, fracStart: number, k: number): number {
  return k < intLen ? b[intStart + k]! : b[fracStart + k - intLen]!;
}

/**
 * A date field (`first_sale`): a real calendar date `YYYY-MM-DD`, or an ISO date-time keeping its date as written;
 * null, "", 0000-00-00 to \N.
 */
function date(b: Buffer, s: number, e: number, out: Buffer, o: number): number {
  e = trimValueEnd(b, s, e);
  if (b[s] === 0x6e) return writeNull(out, o);
  if (b[s] !== 0x22) return -1;
  s++;
  e--;
  if (s === e) return writeNull(out, o);
  if (
    e - s < 10 ||
    !digits(b, s, 4) ||
    b[s + 4] !== 0x2d ||
    !digits(b, s + 5, 2) ||
    b[s + 7] !== 0x2d ||
    !digits(b, s + 8, 2)
  )
    return -1;
  if (e - s > 10 && !timeOfDay(b, s + 10, e)) return -1;
  const year = num(b, s, 4);
  const month = num(b, s + 5, 2);
  const day = num(b, s + 8, 2);
  if (year === 0 && month === 0 && day === 0) return writeNull(out, o);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return -1;
  return copyBytes(b, s, s + 10, out, o);
}

/** `[T ]HH:MM[:SS[.fraction]][Z|±HH:MM|±HHMM]` exactly, as the zod path's date-time pattern. */
function timeOfDay(b: Buffer, i: number, e: number): boolean {
  if (b[i] !== 0x54 && b[i] !== 0x20) return false;
  if (!hour(b, i + 1) || b[i + 3] !== 0x3a || !minute(b, i + 4)) return false;
  i += 6;
  if (i < e && b[i] === 0x3a) {
    if (!(minute(b, i + 1) || (b[i + 1] === 0x36 && b[i + 2] === 0x30))) return false;
    i += 3;
    if (i < e && b[i] === 0x2e) {
      const from = ++i;
      while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
      if (i === from) return false;
    }
  }
  if (i === e) return true;
  if (b[i] === 0x5a) return i + 1 === e;
  if (b[i] !== 0x2b && b[i] !== 0x2d) return false;
  if (!hour(b, i + 1)) return false;
  i += 3;
  if (b[i] === 0x3a) i++;
  return minute(b, i) && i + 2 === e;
}

function hour(b: Buffer, i: number): boolean {
  const h = b[i]!;
  const l = b[i + 1]!;
  return ((h === 0x30 || h === 0x31) && l >= 0x30 && l <= 0x39) || (h === 0x32 && l >= 0x30 && l <= 0x33);
}

function minute(b: Buffer, i: number): boolean {
  const h = b[i]!;
  const l = b[i + 1]!;
  return h >= 0x30 && h <= 0x35 && l >= 0x30 && l <= 0x39;
}

function digits(b: Buffer, i: number, n: number): boolean {
  for (let k = i; k < i + n; k++) if (!(b[k]! >= 0x30 && b[k]! <= 0x39)) return false;
  return true;
}

function num(b: Buffer, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) v = v * 10 + (b[k]! - 0x30);
  return v;
}

function writeNull(out: Buffer, o: number): number {
  out[o] = 0x5c;
  out[o + 1] = 0x4e;
  return o + 2;
}

function copyBytes(b: Buffer, s: number, e: number, out: Buffer, o: number): number {
  for (let i = s; i < e; i++) out[o++] = b[i]!;
  return o;
}

/** A safe integer (possibly negative) as decimal digits. */
function writeInt(out: Buffer, o: number, v: number): number {
  if (v < 0) {
    out[o++] = 0x2d;
    v = -v;
  }
  // Integer division while the value fits an int32 (every value but offsets past 2 GiB): a
  // float division and floor per digit is much slower on the hot path.
  const small = v <= 0x7fffffff;
  let digitsCount = 1;
  for (let t = v; t >= 10; t = small ? (t / 10) | 0 : Math.floor(t / 10)) digitsCount++;
  for (let k = o + digitsCount - 1; k >= o; k--) {
    const q = small ? (v / 10) | 0 : Math.floor(v / 10);
    out[k] = 0x30 + (v - q * 10);
    v = q;
  }
  return o + digitsCount;
}
