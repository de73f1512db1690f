/**
 * One listing record -> one staging row, or every reason it cannot be loaded. Pure: no I/O.
 * Input is the lossless parse of the record (JSON numbers as their exact source text).
 */
import { z } from 'zod';
import { normalizeDate } from './date.js';
import { normalizeDecimal, normalizeId } from './decimal.js';
import { DATA_COLUMNS, type Row } from '../row.js';
import { fail, kindOf, ok, type Result } from './result.js';

export { DATA_COLUMNS, type Row };

export interface FieldError {
  path: string;
  message: string;
}

export type RecordResult =
  | { ok: true; row: Row; unknownFields: string[] }
  | { ok: false; recordId: string | null; errors: FieldError[]; unknownFields: string[] };

/** NUL cannot be stored in PostgreSQL text; an unpaired surrogate would be silently replaced (U+FFFD) on encoding. */
const NUL = '\u0000';
const LONE_SURROGATE = /\p{Surrogate}/u;

/** The wine identifier: text (a JSON number arrives as its text), trimmed, not empty. */
export function normalizeWpi(input: unknown): Result<string> {
  if (typeof input !== 'string') {
    if (input === null || input === undefined) return fail('required');
    return fail(`expected text, got ${kindOf(input)}`);
  }
  if (input.includes(NUL)) return fail('must not contain the NUL character (\\u0000)');
  if (LONE_SURROGATE.test(input)) return fail('must not contain an unpaired UTF-16 surrogate (not valid Unicode)');
  const text = input.trim();
  return text === '' ? fail('must not be empty') : ok(text);
}

/**
 * A zod field that runs a normalizer and turns its failure into one issue at the field's path.
 * `.optional()` lets an absent key reach the normalizer as `undefined` (which decides between
 * null and "required"); without it zod reports absent keys itself ("expected nonoptional").
 */
function field<T>(normalize: (input: unknown) => Result<T>) {
  return z.unknown().optional().transform((input, ctx): T => {
    const result = normalize(input);
    if (result.ok) return result.value;
    ctx.addIssue({ code: 'custom', message: result.message });
    return z.NEVER;
  });
}

/** The 8 known fields; others are stripped (and reported by name, see `unknownFieldsOf`). */
export const recordSchema = z.object({
  id: field(normalizeId),
  wpi: field(normalizeWpi),
  inventory_bulk_wine: field(normalizeDecimal),
  inventory_finished_goods: field(normalizeDecimal),
  inventory_sales: field(normalizeDecimal),
  vintage_forecast: field(normalizeDecimal),
  vintage_make: field(normalizeDecimal),
  first_sale: field(normalizeDate),
});

/** The fields a record may have, in schema order. */
export const KNOWN_FIELD_NAMES: readonly string[] = Object.keys(recordSchema.shape);
const KNOWN_FIELDS: ReadonlySet<string> = new Set(KNOWN_FIELD_NAMES);

function unknownFieldsOf(record: object): string[] {
  let unknown: string[] | undefined;
  for (const key of Object.keys(record)) {
    if (!KNOWN_FIELDS.has(key)) (unknown ??= []).push(key);
  }
  return unknown ?? [];
}

const RECORD_ID_LIMIT = 100;

/** The id as text for a rejected record: canonical when valid, else as written (cut), else null. */
function readableId(input: unknown): string | null {
  const id = normalizeId(input);
  if (id.ok) return id.value;
  if (typeof input === 'string') return input.length <= RECORD_ID_LIMIT ? input : `${input.slice(0, RECORD_ID_LIMIT)}…`;
  if (typeof input === 'bigint' || (typeof input === 'number' && Number.isFinite(input))) return String(input);
  return null;
}

export function transformRecord(value: unknown): RecordResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, recordId: null, errors: [{ path: '', message: 'record is not a JSON object' }], unknownFields: [] };
  }
  const unknownFields = unknownFieldsOf(value);
  const parsed = recordSchema.safeParse(value);
  if (parsed.success) return { ok: true, row: parsed.data, unknownFields };
  const errors = parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
  return { ok: false, recordId: readableId((value as Record<string, unknown>).id), errors, unknownFields };
}
