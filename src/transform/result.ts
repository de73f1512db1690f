/** Outcome of normalizing one field value: the canonical value, or a short, actionable reason. */
export type Result<T> = { ok: true; value: T } | { ok: false; message: string };

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function fail<T = never>(message: string): Result<T> {
  return { ok: false, message };
}

const QUOTE_LIMIT = 40;

/**
 * Offending text for a message: JSON-quoted (control characters and NUL escaped), cut at 40
 * characters (code points, so a surrogate pair is never split) with a trailing ellipsis.
 */
export function quote(text: string): string {
  if (text.length <= QUOTE_LIMIT) return JSON.stringify(text);
  // 2 * limit + 1 code units always hold more than `limit` code points when the text is longer.
  const points = Array.from(text.slice(0, QUOTE_LIMIT * 2 + 1));
  return points.length <= QUOTE_LIMIT
    ? JSON.stringify(text)
    : `${JSON.stringify(points.slice(0, QUOTE_LIMIT).join(''))}…`;
}

/** JSON-ish name of a value's type, for "expected X, got <kind>" messages. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
