/**
 * JSON text in which some numbers are written with the exact digits the database gave (a numeric
 * sum, min or max), which JSON.stringify cannot do without passing them through a float. Only
 * text that is a JSON number by the grammar becomes one; everything else is written by
 * JSON.stringify, so no text can break out of its place in the document.
 */

/** The JSON number grammar (RFC 8259, section 6). */
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** A number to be written as this text. */
export class JsonNumberText {
  private constructor(readonly text: string) {}

  /** The number, or undefined when the text is not a JSON number (NaN, Infinity, anything else). */
  static of(text: string | null | undefined): JsonNumberText | undefined {
    return typeof text === 'string' && JSON_NUMBER.test(text) ? new JsonNumberText(text) : undefined;
  }
}

/** As JSON.stringify(value) (no indentation), with each JsonNumberText written as its digits. */
export function jsonText(value: unknown): string {
  if (value instanceof JsonNumberText) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : jsonText(v))).join(',')}]`;
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON !== 'function') {
    const members = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && typeof v !== 'function')
      .map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
