/**
 * The zod path's COPY text lines (tab separated, `\N` for null, newline terminated) for a checked
 * row: the staging table's (STAGING_COLUMNS in load/staging.ts) and, on a first load, the table's
 * own. The byte-level fast path writes the same lines from a record's bytes (record-copy.ts); a
 * differential test holds the two together (test/unit/record-copy.test.ts).
 */
import { FIELDS, type Row } from '../fields.js';

/** A record's fingerprint as two int32 halves (see fingerprints/fingerprint.ts). */
export type FingerprintHalves = readonly [number, number];

/** The record's fields in catalogue order, then extra_fields (`extra`: its COPY text, or null). */
function fieldsText(row: Row, extra: string | null): string {
  let line = '';
  for (const field of FIELDS) {
    const value = row[field.name];
    // Only text can hold COPY's special characters: ids, decimals and dates are canonical digits.
    line += (line === '' ? '' : '\t') + (value === null ? '\\N' : field.kind === 'text' ? copyText(value) : value);
  }
  return `${line}\t${extra ?? '\\N'}`;
}

/**
 * A staging line: position, the fields, extra_fields, raw offset and length, fingerprint, and no shape (shapes.ts: the
 * zod path's records are read each time).
 */
export function copyLine(
  position: number,
  row: Row,
  extra: string | null,
  rawOffset: number,
  rawLength: number,
  fingerprint: FingerprintHalves | undefined,
): string {
  const hash = fingerprint === undefined ? '\\N\t\\N' : `${fingerprint[0]}\t${fingerprint[1]}`;
  return `${position}\t${fieldsText(row, extra)}\t${rawOffset}\t${rawLength}\t${hash}\t\\N\n`;
}

/**
 * A first load's line for the table itself: the fields, extra_fields, then `rowSuffix` (the run's tab-led columns and
 * the newline).
 */
export function rowLine(row: Row, extra: string | null, rowSuffix: string): string {
  return fieldsText(row, extra) + rowSuffix;
}

const COPY_SPECIAL = /[\\\t\n\r]/;
/** Text-format COPY escaping: backslash, tab, newline and carriage return. */
export function copyText(value: string): string {
  if (!COPY_SPECIAL.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}
