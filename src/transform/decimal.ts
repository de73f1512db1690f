/**
 * Exact decimal and id normalization by string manipulation only: a value never passes through a
 * JavaScript number, so every digit the API sent is the digit PostgreSQL receives.
 */
import { fail, kindOf, ok, quote, type Result } from './result.js';

export type { Result } from './result.js';

/** Most digits a decimal may have (integer digits, without a lone leading 0, plus fraction digits). */
export const MAX_DIGITS = 1000;

/** Already canonical: no sign but '-', no leading zeros, no trailing fraction zeros, no exponent. */
const CANONICAL = /^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/;
/** Any accepted numeric text: `[+-]digits[.digits][e[+-]digits]`, at least one mantissa digit (checked after). */
const NUMERIC = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?)(\d+))?$/;
/** Exponents with more significant digits than this are astronomically large (>= 1e15). */
const MAX_EXPONENT_DIGITS = 15;

const TOO_MANY_DIGITS = `more than ${MAX_DIGITS} digits`;
const NOT_LOSSLESS = 'got a JavaScript number, whose exact text is lost (the listing must be parsed losslessly)';

/**
 * A decimal as canonical text (`-12.5`, `0.00000015`, `1000`, `0`), or null for null, a missing
 * field or `""`. Accepts the exact text of a JSON number or a numeric string (surrounding
 * whitespace allowed), with or without exponent.
 */
export function normalizeDecimal(input: unknown): Result<string | null> {
  if (typeof input === 'string') {
    // Fast path: the common case is already canonical and short enough to need no digit count.
    if (input.length <= MAX_DIGITS && CANONICAL.test(input) && input !== '-0') return ok(input);
    if (input === '') return ok(null);
    return decimalFromText(input);
  }
  if (input === null || input === undefined) return ok(null);
  if (typeof input === 'bigint') return decimalFromText(input.toString());
  if (typeof input === 'number') return fail(`expected a decimal number as exact text, ${NOT_LOSSLESS}`);
  return fail(`expected a decimal number, got ${kindOf(input)}`);
}

function decimalFromText(input: string): Result<string | null> {
  const text = input.trim();
  const m = NUMERIC.exec(text);
  if (m === null || (m[2] === '' && (m[3] === undefined || m[3] === ''))) {
    if (text === 'NaN' || text === 'Infinity' || text === '-Infinity' || text === '+Infinity') {
      return fail(`expected a finite decimal number, got ${text}`);
    }
    return fail(`expected a decimal number, got text ${quote(input)}`);
  }
  const negative = m[1] === '-';
  const intPart = m[2] ?? '';
  const digits = intPart + (m[3] ?? '');

  // Significant digits D = digits[first..last]; the value is 0.D * 10^point.
  let first = 0;
  while (first < digits.length && digits.charCodeAt(first) === 48) first++;
  if (first === digits.length) return ok('0'); // any zero, whatever its sign or exponent
  let last = digits.length - 1;
  while (digits.charCodeAt(last) === 48) last--;
  let point = intPart.length - first;

  const expDigits = m[5];
  if (expDigits !== undefined) {
    let e = 0;
    while (e < expDigits.length && expDigits.charCodeAt(e) === 48) e++;
    // Checked before any expansion: a huge exponent on a non-zero mantissa can never fit.
    if (expDigits.length - e > MAX_EXPONENT_DIGITS) return fail(TOO_MANY_DIGITS);
    let exponent = 0;
    for (; e < expDigits.length; e++) exponent = exponent * 10 + (expDigits.charCodeAt(e) - 48);
    point += m[4] === '-' ? -exponent : exponent;
  }

  const count = last - first + 1;
  const total = point <= 0 ? count - point : Math.max(count, point);
  if (total > MAX_DIGITS) return fail(TOO_MANY_DIGITS);

  const significant = digits.slice(first, last + 1);
  let out: string;
  if (point <= 0) out = `0.${'0'.repeat(-point)}${significant}`;
  else if (point >= count) out = significant + '0'.repeat(point - count);
  else out = `${significant.slice(0, point)}.${significant.slice(point)}`;
  return ok(negative ? `-${out}` : out);
}

const ID_MAX = '9223372036854775807';
const ID_RANGE = `must be an integer from 1 to ${ID_MAX}`;
/** Up to 18 digits without a leading zero: always within 1..2^63-1. */
const ID_FAST = /^[1-9]\d{0,17}$/;
const ID_TEXT = /^(-?)(\d+)$/;

/**
 * An id as canonical integer text (leading zeros stripped), 1 to 2^63-1. Accepts the text of a
 * JSON integer or an integer string; no whitespace, sign '+', fraction or exponent.
 */
export function normalizeId(input: unknown): Result<string> {
  let text: string;
  if (typeof input === 'string') {
    if (ID_FAST.test(input)) return ok(input);
    text = input;
  } else if (input === null || input === undefined) {
    return fail('required');
  } else if (typeof input === 'bigint') {
    text = input.toString();
  } else if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) return fail(`${ID_RANGE}, ${NOT_LOSSLESS}`);
    text = String(input);
  } else {
    return fail(`expected an integer, got ${kindOf(input)}`);
  }
  const m = ID_TEXT.exec(text);
  if (m === null) return fail(`${ID_RANGE}, got ${quote(text)}`);
  const digits = (m[2] ?? '').replace(/^0+/, '');
  const inRange =
    m[1] === '' &&
    digits !== '' &&
    (digits.length < ID_MAX.length || (digits.length === ID_MAX.length && digits <= ID_MAX));
  return inRange ? ok(digits) : fail(`${ID_RANGE}, got ${quote(text)}`);
}
