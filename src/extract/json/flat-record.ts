/**
 * The scanner's fast lane for the usual compact flat record: validated, member ends noted, no output.
 * Rule: it accepts only what the state machine accepts, with the same member ends; anything else
 * answers -1 having changed nothing but `ends`.
 */
import { MAX_MEMBER_ENDS } from './scanner-state.js';
import { viewOf } from '../../io/byte-view.js';
import type { KeyGuide } from './listing-types.js';

/**
 * Scans the record whose '{' is at `s`, within `b[s, end)`. Returns its member count (at least 1)
 * with `ends[m]` the position of member m's ',' or '}' relative to `s` (the record ends just
 * after its last member's), or -1 when the record is not of the simple form or not whole before `end`.
 * With `keys`, each key expected is tried first, and `keys.found` says which were there.
 */
export function scanFlatRecord(b: Uint8Array, s: number, end: number, ends: Float64Array, keys?: KeyGuide): number {
  const view = viewOf(b);
  const guesses = keys === undefined ? 0 : keys.guess.length;
  let i = s + 1;
  let m = 0;
  for (;;) {
    // A key: '"', plain ASCII, '"', ':'.
    if (i >= end || b[i] !== 0x22) return -1;
    const k = m < guesses ? keys!.guess[m]! : -1;
    const after = k >= 0 ? keyColonEnd(keys!, k, b, view, i + 1, end) : -1;
    if (m < guesses) keys!.found[m] = after >= 0 ? k : -1;
    if (after >= 0) i = after;
    else if ((i = stringEnd(b, view, i + 1, end)) < 0 || ++i >= end || b[i] !== 0x3a || ++i >= end) return -1;
    // The value.
    let c = b[i]!;
    if (c === 0x22) {
      if ((i = stringEnd(b, view, i + 1, end)) < 0) return -1;
      i++;
    } else if ((c >= 0x30 && c <= 0x39) || c === 0x2d) {
      if ((i = numberEnd(b, view, i, end)) < 0) return -1;
    } else if (c === 0x74) {
      if (i + 4 > end || b[i + 1] !== 0x72 || b[i + 2] !== 0x75 || b[i + 3] !== 0x65) return -1;
      i += 4;
    } else if (c === 0x66) {
      if (i + 5 > end || b[i + 1] !== 0x61 || b[i + 2] !== 0x6c || b[i + 3] !== 0x73 || b[i + 4] !== 0x65) return -1;
      i += 5;
    } else if (c === 0x6e) {
      if (i + 4 > end || b[i + 1] !== 0x75 || b[i + 2] !== 0x6c || b[i + 3] !== 0x6c) return -1;
      i += 4;
    } else return -1;
    // After the value: ',' and the next key, or the closing '}'.
    if (i >= end || m === MAX_MEMBER_ENDS) return -1;
    c = b[i]!;
    ends[m++] = i - s;
    if (c === 0x7d) return m;
    if (c !== 0x2c) return -1;
    i++;
  }
}

/** When key k's text and '":' are at `i`, with a byte after them before `end`: the position of that byte; else -1. */
function keyColonEnd(keys: KeyGuide, k: number, b: Uint8Array, view: DataView, i: number, end: number): number {
  const text = keys.keyColon[k]!;
  const words = keys.keyWords[k]!;
  const n = text.length;
  if (i + n >= end) return -1;
  let x = 0;
  for (let w = 0; w < words.length; w++, x += 4) if (view.getInt32(i + x, true) !== words[w]) return -1;
  for (; x < n; x++) if (text[x] !== b[i + x]) return -1;
  return i + n;
}

/**
 * The position of the closing quote of the string whose text starts at `i`, when all of it is
 * plain (printable ASCII but '"' and '\\') and it ends before `end`; else -1. Four bytes at a
 * time (one DataView load and a few integer operations, where a byte at a time costs a load and
 * compares each); the word with a special byte says which it is by its lowest mark, rather than
 * looping over its bytes again. Byte by byte
 * only within 4 bytes of `end`.
 */
function stringEnd(b: Uint8Array, view: DataView, i: number, end: number): number {
  while (i + 4 <= end) {
    const w = view.getInt32(i, true);
    // A byte's high bit is set in this when it is < 0x20, '"', '\\' or >= 0x80 (exactly: whether
    // any is; a borrow may also mark the byte above a marked one).
    const marks =
      ((w - 0x20202020) | ((w ^ 0x22222222) - 0x01010101) | ((w ^ 0x5c5c5c5c) - 0x01010101) | w) & 0x80808080;
    if (marks !== 0) {
      i += firstMarked(marks);
      return b[i] === 0x22 ? i : -1;
    }
    i += 4;
  }
  for (; i < end; i++) {
    const c = b[i]!;
    if (!plain(c)) return c === 0x22 ? i : -1;
  }
  return -1;
}

/** Which byte (0-3) of a little-endian word holds the lowest of `marks` (high bits, at least one set). */
function firstMarked(marks: number): number {
  return (31 - Math.clz32(marks & -marks)) >> 3;
}

/** Printable ASCII but '"' and '\\' (STR_PLAIN as comparisons: the table load cost a fifth of the byte loop's time). */
function plain(c: number): boolean {
  return c >= 0x23 ? c !== 0x5c && c < 0x80 : c >= 0x20 && c !== 0x22;
}

/**
 * The position after the run of digits at `i` (a digit), when it ends before `end`; else -1. Four at a time, as
 * stringEnd.
 */
function digitsEnd(b: Uint8Array, view: DataView, i: number, end: number): number {
  while (i + 4 <= end) {
    const w = view.getInt32(i, true);
    // A byte's high bit is set in this when it is not a digit (exactly: whether any is not).
    const marks = ((w - 0x30303030) | (w + 0x46464646) | w) & 0x80808080;
    if (marks !== 0) return i + firstMarked(marks);
    i += 4;
  }
  for (; i < end; i++) {
    const d = b[i]!;
    if (d < 0x30 || d > 0x39) return i;
  }
  return -1;
}

/**
 * A number in the fast lane has at most this many characters and exponent digits, and prints as
 * at most MAX_PRINTED_DIGITS digits (its digits and the zeros its exponent adds: counted from
 * above): so a consumer of the lane may write it into extra_fields as it is (transform/extra-fields.ts
 * states the rule). A larger one, never seen in real data, takes the state machine.
 */
const MAX_NUMBER_LENGTH = 1000;
const MAX_EXPONENT_DIGITS = 4;
const MAX_PRINTED_DIGITS = 1000;

/**
 * Where the well-formed number at `i` (a digit or '-') ends, when a ',' or '}' follows it before
 * `end` and it is within the sizes above; else -1 (the state machine then takes it: a malformed
 * number, -Infinity, an exponent without digits...).
 */
function numberEnd(b: Uint8Array, view: DataView, i: number, end: number): number {
  const start = i;
  let d = b[i]!;
  if (d === 0x2d) {
    if (++i >= end) return -1;
    d = b[i]!;
  }
  const intStart = i;
  if (d === 0x30) {
    if (++i >= end) return -1;
  } else if (d >= 0x31 && d <= 0x39) {
    if ((i = digitsEnd(b, view, i + 1, end)) < 0) return -1;
  } else return -1;
  const intDigits = i - intStart;
  let fracDigits = 0;
  d = b[i]!;
  if (d === 0x2e) {
    if (++i >= end) return -1;
    d = b[i]!;
    const fracStart = i;
    if (d < 0x30 || d > 0x39 || (i = digitsEnd(b, view, i + 1, end)) < 0) return -1;
    fracDigits = i - fracStart;
    d = b[i]!;
  }
  if (d === 0x65 || d === 0x45) {
    if ((i = exponentEnd(b, view, i + 1, end, intDigits, fracDigits)) < 0) return -1;
    d = b[i]!;
  }
  return (d === 0x2c || d === 0x7d) && i - start <= MAX_NUMBER_LENGTH ? i : -1;
}

/**
 * Where the exponent whose sign or first digit is at `i` ends, when it has 1 to 4 digits and its
 * number prints as at most MAX_PRINTED_DIGITS digits; else -1. Apart from numberEnd, which V8
 * then inlines into scanFlatRecord: exponents are rare in real data.
 */
function exponentEnd(
  b: Uint8Array,
  view: DataView,
  i: number,
  end: number,
  intDigits: number,
  fracDigits: number,
): number {
  if (i >= end) return -1;
  let d = b[i]!;
  const negative = d === 0x2d;
  if (d === 0x2b || d === 0x2d) {
    if (++i >= end) return -1;
    d = b[i]!;
  }
  const digits = i;
  if (d < 0x30 || d > 0x39 || (i = digitsEnd(b, view, i + 1, end)) < 0 || i - digits > MAX_EXPONENT_DIGITS) return -1;
  let exponent = 0;
  for (let k = digits; k < i; k++) exponent = exponent * 10 + (b[k]! - 0x30);
  // Never fewer than the digits it prints as (extra-fields.ts printedDigits): leading zeros count here.
  const printed = negative
    ? intDigits + fracDigits + exponent
    : intDigits + exponent + Math.max(0, fracDigits - exponent);
  return printed > MAX_PRINTED_DIGITS ? -1 : i;
}

/**
 * Writes the record `b[s, ...)` that scanFlatRecord took (its `count` member ends in `ends`) into
 * `out` at `o` as the state machine rewrites it: every byte as it is, each number in quotes.
 * Returns the new end of `out`.
 */
export function quoteFlatRecord(
  b: Uint8Array,
  s: number,
  ends: Float64Array,
  count: number,
  out: Uint8Array,
  o: number,
): number {
  out[o++] = 0x7b;
  let at = s; // the '{' or ',' before the member
  for (let m = 0; m < count; m++) {
    const memberEnd = s + ends[m]!;
    let i = at + 1;
    out[o++] = b[i++]!; // the key's opening quote
    while (b[i] !== 0x22) out[o++] = b[i++]!;
    out[o++] = 0x22;
    out[o++] = 0x3a;
    i += 2;
    const c = b[i]!;
    const quote = (c >= 0x30 && c <= 0x39) || c === 0x2d;
    if (quote) out[o++] = 0x22;
    while (i < memberEnd) out[o++] = b[i++]!;
    if (quote) out[o++] = 0x22;
    out[o++] = b[memberEnd]!; // ',' or '}'
    at = memberEnd;
  }
  return o;
}
