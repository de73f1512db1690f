/**
 * A record's members outside the field catalogue become its extra_fields (jsonb text of the members'
 * own bytes, so every digit survives). Rule: both paths write it from bytes, and a number kept here
 * may print at most MAX_DIGITS digits (docs/internals.md, Module notes).
 */
import { viewCache, viewOf } from '../io/byte-view.js';
import { copyText } from './copy-line.js';
import { daysInMonth } from './date.js';
import { MAX_DIGITS } from './decimal.js';
import { shownName } from './field-name.js';
import type { FieldError } from './record.js';

/** Kinds of JSON values, as bits; null has none. */
const KIND_NUMBER = 1;
/** A string that is a calendar date `YYYY-MM-DD` (years 0001-9999). */
const KIND_DATE = 2;
const KIND_STRING = 4;
const KIND_BOOLEAN = 8;
/** An object or an array. */
const KIND_JSON = 16;
const KIND_NAMES: ReadonlyArray<readonly [number, string]> = [
  [KIND_NUMBER, 'number'],
  [KIND_DATE, 'date'],
  [KIND_STRING, 'string'],
  [KIND_BOOLEAN, 'boolean'],
  [KIND_JSON, 'json'],
];

/** The names of the kinds in `bits` (sync_fields.kinds). */
export function kindNames(bits: number): string[] {
  return KIND_NAMES.filter(([bit]) => (bits & bit) !== 0).map(([, name]) => name);
}

/**
 * A plain number on the fast path: at most this many characters, and an exponent of at most 4
 * digits, and it prints as at most MAX_DIGITS digits. The scanner's fast lane takes numbers within
 * the same bounds only (extract/json/flat-record.ts).
 */
const MAX_FAST_NUMBER = 1000;
const MAX_FAST_EXPONENT_DIGITS = 4;
/**
 * Exponents with more significant digits than this are refused whatever the mantissa (PostgreSQL refuses 0e2000000000).
 */
const MAX_EXPONENT_DIGITS = 9;
const TOO_MANY_DIGITS = `a number that prints as more than ${MAX_DIGITS} digits`;
const HUGE_EXPONENT = `a number with an exponent of more than ${MAX_EXPONENT_DIGITS} digits`;
const UNPAIRED = 'an unpaired UTF-16 surrogate (not valid Unicode)';

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The kind of the JSON value `b[s, e)` (no surrounding whitespace). */
export function valueKind(b: Uint8Array, s: number, e: number): number {
  const c = b[s]!;
  if (c === 0x22) return isDateString(b, s, e) ? KIND_DATE : KIND_STRING;
  if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return KIND_NUMBER;
  if (c === 0x74 || c === 0x66) return KIND_BOOLEAN;
  if (c === 0x6e) return 0;
  return KIND_JSON;
}

function isDateString(b: Uint8Array, s: number, e: number): boolean {
  if (e - s !== 12 || b[e - 1] !== 0x22 || b[s + 5] !== 0x2d || b[s + 8] !== 0x2d) return false;
  const year = digitsAt(b, s + 1, 4);
  const month = digitsAt(b, s + 6, 2);
  const day = digitsAt(b, s + 9, 2);
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/** The n digits at i as a number, or -1 when one is not a digit. */
function digitsAt(b: Uint8Array, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const d = b[k]! - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

/** The end of `b[s, e)` without trailing whitespace. */
export function trimValueEnd(b: Uint8Array, s: number, e: number): number {
  while (e > s && isWs(b[e - 1]!)) e--;
  return e;
}

/**
 * Fast path: writes the extra_fields COPY text of a record's extra members (at least one;
 * `unknown`: per member, key start, key end, value start, member end; `plain`: the scanner's fast
 * lane took the record) into `out` at `o`. Returns the new end, or -1 when a value is not plain
 * (the zod path then takes the record).
 */
export function writeFastExtras(
  b: Uint8Array,
  { unknown: spans, unknownCount: count, plain }: { unknown: Int32Array; unknownCount: number; plain: boolean },
  out: Uint8Array,
  o: number,
): number {
  out[o++] = 0x7b;
  if (plain) {
    // The scanner's fast lane took the record: it is compact (a member ends where its value
    // does), its strings need no doubled backslash, and its numbers are of the sizes above
    // (listing-types.ts RecordBytesHook): each member `"name":value` is copied as it is, and
    // members next to each other (new fields usually come together) in one copy with their ','.
    for (let u = 0; u < count;) {
      if (u > 0) out[o++] = 0x2c;
      const s = spans[4 * u]! - 1;
      let e = spans[4 * u + 3]!;
      for (u++; u < count && spans[4 * u]! === e + 2; u++) e = spans[4 * u + 3]!;
      o = copyBytes(b, s, e, out, o);
    }
    out[o++] = 0x7d;
    return o;
  }
  for (let u = 0; u < count; u++) {
    if (u > 0) out[o++] = 0x2c;
    out[o++] = 0x22;
    // A key MemberReader accepted is plain ASCII without escapes.
    for (let i = spans[4 * u]!; i < spans[4 * u + 1]!; i++) out[o++] = b[i]!;
    out[o++] = 0x22;
    out[o++] = 0x3a;
    const vs = spans[4 * u + 2]!;
    o = writePlainValue(b, vs, trimValueEnd(b, vs, spans[4 * u + 3]!), out, o);
    if (o < 0) return -1;
  }
  out[o++] = 0x7d;
  return o;
}

/** The view of the output buffer being written (viewOf keeps the input's). */
const outViewOf = viewCache();

/**
 * Copies `b[s, e)` to `out` at `o`; returns the new end. Four bytes at a time through DataViews
 * (one load and one store each in V8), cheaper than a byte loop or `out.set(b.subarray(...))`
 * (an object per record).
 */
function copyBytes(b: Uint8Array, s: number, e: number, out: Uint8Array, o: number): number {
  const from = viewOf(b);
  const to = outViewOf(out);
  for (; s + 4 <= e; s += 4, o += 4) to.setInt32(o, from.getInt32(s, true), true);
  for (; s < e; s++) out[o++] = b[s]!;
  return o;
}

/**
 * Copies a value jsonb surely holds, checking it as it goes (one pass: this runs for every new
 * field of every record), backslashes doubled for COPY text; -1 for any other. The scanner has
 * checked that it is valid JSON; a string's \u escape (a NUL or a lone surrogate may hide there)
 * and non-ASCII bytes are left to the zod path.
 */
function writePlainValue(b: Uint8Array, s: number, e: number, out: Uint8Array, o: number): number {
  const c = b[s]!;
  if (c === 0x22) {
    out[o++] = 0x22;
    for (let i = s + 1; i < e - 1; i++) {
      const d = b[i]!;
      if (d < 0x20 || d > 0x7e) return -1;
      out[o++] = d;
      if (d === 0x5c) {
        const escaped = b[++i]!;
        if (escaped === 0x75) return -1;
        out[o++] = 0x5c;
        out[o++] = escaped;
        if (escaped === 0x5c) out[o++] = 0x5c;
      }
    }
    out[o++] = 0x22;
    return o;
  }
  if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
    if (e - s > MAX_FAST_NUMBER) return -1;
    for (let i = s; i < e; i++) {
      const d = b[i]!;
      out[o++] = d;
      if (d === 0x65 || d === 0x45) {
        const sign = b[i + 1] === 0x2d || b[i + 1] === 0x2b ? 1 : 0;
        if (e - (i + 1 + sign) > MAX_FAST_EXPONENT_DIGITS || printedDigits(b, s, e) > MAX_DIGITS) return -1;
      }
    }
    return o;
  }
  if (c !== 0x74 && c !== 0x66 && c !== 0x6e) return -1;
  for (let i = s; i < e; i++) out[o++] = b[i]!;
  return o;
}

export type ExtraFields =
  | { ok: true; text: string | null; members: Array<{ name: string; kind: number }> }
  | { ok: false; errors: FieldError[] };

/**
 * A record's fields that cannot be kept are named up to this many: a 64 kB record of 4,000
 * `"aN":1e131000` members would otherwise store 4,000 errors with its reject.
 */
const MAX_NAMED_ERRORS = 10;

/**
 * The zod path: the extra_fields COPY text of a record from its raw text (the whole record, as
 * received; the scanner has validated it), every top-level member whose name `isKnown` refuses.
 * A name given twice keeps its last value, as jsonb does.
 */
export function extraFieldsOf(raw: string, isKnown: (name: string) => boolean): ExtraFields {
  const b = Buffer.from(raw, 'utf8');
  const members: Array<{ name: string; kind: number }> = [];
  const errors: FieldError[] = [];
  const parts: string[] = [];
  let more = 0;
  let i = skipWs(b, 0);
  if (b[i] !== 0x7b) return { ok: true, text: null, members };
  i = skipWs(b, i + 1);
  while (b[i] === 0x22) {
    const ks = i;
    const ke = stringEnd(b, i);
    const name = JSON.parse(b.toString('utf8', ks, ke)) as string;
    const vs = skipWs(b, skipWs(b, ke) + 1);
    const ve = valueEnd(b, vs);
    if (!isKnown(name)) {
      const problem = jsonbProblem(b, ks, ke) ?? jsonbProblem(b, vs, ve);
      const path = shownName(name);
      if (problem !== undefined) {
        if (errors.length < MAX_NAMED_ERRORS)
          errors.push({ path, message: `cannot be kept in extra_fields: ${problem}` });
        else more++;
      } else {
        members.push({ name, kind: valueKind(b, vs, ve) });
        parts.push(`${copyText(b.toString('utf8', ks, ke))}:${copyText(b.toString('utf8', vs, ve))}`);
      }
    }
    i = skipWs(b, ve);
    if (b[i] === 0x2c) i = skipWs(b, i + 1);
  }
  if (more > 0)
    errors.push({
      path: '',
      message: `and more fields that cannot be kept in extra_fields (the first ${MAX_NAMED_ERRORS} are named)`,
    });
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, text: parts.length === 0 ? null : `{${parts.join(',')}}`, members };
}

function skipWs(b: Uint8Array, i: number): number {
  while (i < b.length && isWs(b[i]!)) i++;
  return i;
}

/** After the closing quote of the string whose opening quote is at i. */
function stringEnd(b: Uint8Array, i: number): number {
  for (i++; i < b.length; i++) {
    const c = b[i]!;
    if (c === 0x22) return i + 1;
    if (c === 0x5c) i++;
  }
  return i;
}

/** After the value that starts at i. */
function valueEnd(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c === 0x22) return stringEnd(b, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (; i < b.length; i++) {
      const d = b[i]!;
      if (d === 0x22) i = stringEnd(b, i) - 1;
      else if (d === 0x7b || d === 0x5b) depth++;
      else if ((d === 0x7d || d === 0x5d) && --depth === 0) return i + 1;
    }
    return i;
  }
  return scalarEnd(b, i, b.length);
}

/** After the number or literal that starts at i: its first whitespace, ',', '}' or ']' before `e`. */
function scalarEnd(b: Uint8Array, i: number, e: number): number {
  while (i < e && !isWs(b[i]!) && b[i] !== 0x2c && b[i] !== 0x7d && b[i] !== 0x5d) i++;
  return i;
}

/** What jsonb cannot hold in the JSON text `b[s, e)`, or undefined. */
function jsonbProblem(b: Buffer, s: number, e: number): string | undefined {
  for (let i = s; i < e; i++) {
    const c = b[i]!;
    if (c === 0x22) {
      const end = stringEnd(b, i);
      const problem = stringProblem(b, i + 1, end - 1);
      if (problem !== undefined) return problem;
      i = end - 1;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const end = scalarEnd(b, i, e);
      const digits = printedDigits(b, i, end);
      if (digits > MAX_DIGITS) return digits === Infinity ? HUGE_EXPONENT : TOO_MANY_DIGITS;
      i = end - 1;
    }
  }
  return undefined;
}

/** A \u0000 escape or an unpaired surrogate escape in the string text `b[s, e)`. */
function stringProblem(b: Buffer, s: number, e: number): string | undefined {
  let pendingHigh = false;
  for (let i = s; i < e; i++) {
    const escape = b[i] === 0x5c;
    // The UTF-16 unit of a \u escape; -1 for any other character.
    const unit = escape && b[i + 1] === 0x75 ? Number.parseInt(b.toString('latin1', i + 2, i + 6), 16) : -1;
    // A high surrogate must be followed by a low one, and a low one must follow a high one.
    if (pendingHigh !== (unit >= 0xdc00 && unit <= 0xdfff)) return UNPAIRED;
    if (unit === 0) return 'the NUL character (\\u0000)';
    pendingHigh = unit >= 0xd800 && unit <= 0xdbff;
    if (unit >= 0) i += 5;
    else if (escape) i++;
  }
  return pendingHigh ? UNPAIRED : undefined;
}

/**
 * How many digits the JSON number `b[s, e)` (valid JSON) prints as in jsonb, a lone leading 0
 * not counted: its integer digits from the first significant one (zeros its exponent adds
 * included), and its fraction digits as written less its exponent (numeric's display scale).
 * Integer arithmetic only; Infinity for an exponent of more than MAX_EXPONENT_DIGITS digits.
 */
export function printedDigits(b: Uint8Array, s: number, e: number): number {
  let i = b[s] === 0x2d ? s + 1 : s;
  const intStart = i;
  // Where the first significant digit is, counted over the mantissa's digits (-1: none yet).
  let first = -1;
  while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) {
    if (first < 0 && b[i] !== 0x30) first = i - intStart;
    i++;
  }
  const intLen = i - intStart;
  let fracLen = 0;
  if (i < e && b[i] === 0x2e) {
    const fracStart = ++i;
    while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) {
      if (first < 0 && b[i] !== 0x30) first = intLen + i - fracStart;
      i++;
    }
    fracLen = i - fracStart;
  }
  let exponent = 0;
  if (i < e && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    const negative = b[i] === 0x2d;
    if (negative || b[i] === 0x2b) i++;
    while (i < e && b[i] === 0x30) i++;
    if (e - i > MAX_EXPONENT_DIGITS) return Infinity;
    for (; i < e; i++) exponent = exponent * 10 + (b[i]! - 0x30);
    if (negative) exponent = -exponent;
  }
  const point = intLen + exponent;
  const integerDigits = first >= 0 && point > first ? point - first : 0;
  return integerDigits + Math.max(0, fracLen - exponent);
}
