/**
 * Calendar dates by string and integer arithmetic only (never a JS Date, so no time zone can
 * shift a day). A date-time keeps its date part exactly as written.
 */
import { fail, kindOf, ok, quote, type Result } from './result.js';

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
/** Date, then optionally `T` or space and `HH:MM[:SS[.fraction]]` with optional `Z` / `±HH:MM` / `±HHMM`. */
const DATE_TIME =
  /^(\d{4}-\d{2}-\d{2})[T ]([01]\d|2[0-3]):[0-5]\d(?::(?:[0-5]\d|60)(?:\.\d+)?)?(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?$/;
const ZERO_DATE = '0000-00-00';

/**
 * A `YYYY-MM-DD` calendar date (years 0001-9999), or null for null, a missing field, `""` and the
 * zero date `0000-00-00` (with or without a time).
 */
export function normalizeDate(input: unknown): Result<string | null> {
  if (typeof input === 'string') {
    if (DATE_ONLY.test(input)) return calendarDate(input);
    if (input === '') return ok(null);
    const m = DATE_TIME.exec(input);
    if (m !== null) return calendarDate(m[1] as string, input);
    return fail(`expected a date YYYY-MM-DD, got text ${quote(input)}`);
  }
  if (input === null || input === undefined) return ok(null);
  return fail(`expected a date YYYY-MM-DD, got ${kindOf(input)}`);
}

/** `date` is `\d{4}-\d{2}-\d{2}`; `written` is the whole input, for the message. */
function calendarDate(date: string, written: string = date): Result<string | null> {
  if (date === ZERO_DATE) return ok(null);
  const year = digit(date, 0) * 1000 + digit(date, 1) * 100 + digit(date, 2) * 10 + digit(date, 3);
  const month = digit(date, 5) * 10 + digit(date, 6);
  const day = digit(date, 8) * 10 + digit(date, 9);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
    return fail(`not a calendar date: ${quote(written)}`);
  }
  return ok(date);
}

function digit(text: string, index: number): number {
  return text.charCodeAt(index) - 48;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
