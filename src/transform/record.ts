/**
 * One listing record -> one staging row, or every reason it cannot be loaded. Pure: no I/O.
 * Input is the lossless parse of the record (JSON numbers as their exact source text).
 */
import { z } from 'zod';
import { normalizeDate } from './date.js';
import { normalizeDecimal, normalizeId } from './decimal.js';
import { DATA_COLUMNS, FIELDS, type FieldKind, type KnownField, type Row } from '../fields.js';
import { fail, kindOf, ok, type Result } from './result.js';

export { DATA_COLUMNS, type Row };

export interface FieldError {
  path: string;
  message: string;
}

/**
 * A reject carries its id as text for people (`recordId`: canonical when valid, else as written),
 * and `id`, the canonical id, only when the id itself is valid: that id's live row is then kept as
 * its last valid version (docs/data-safety.md).
 */
export type RecordResult =
  { ok: true; row: Row } | { ok: false; recordId: string | null; id: string | null; errors: FieldError[] };

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
  return z
    .unknown()
    .optional()
    .transform((input, ctx): T => {
      const result = normalize(input);
      if (result.ok) return result.value;
      ctx.addIssue({ code: 'custom', message: result.message });
      return z.NEVER;
    });
}

/** Each kind's normalizer: the rule that the catalogue's kind names (src/fields.ts). */
const NORMALIZE_KIND = {
  id: normalizeId,
  text: normalizeWpi,
  decimal: normalizeDecimal,
  date: normalizeDate,
} as const satisfies Record<FieldKind, (input: unknown) => Result<unknown>>;
/** Each known field's normalizer, in catalogue order (the order of zod's issues). */
const CHECKS: ReadonlyArray<readonly [KnownField, (input: unknown) => Result<unknown>]> = FIELDS.map(
  (f) => [f.name, NORMALIZE_KIND[f.kind]] as const,
);

/** The known fields; others are stripped (and counted by name, see field-counts.ts). */
export const recordSchema = z.object(
  Object.fromEntries(CHECKS.map(([name, normalize]) => [name, field(normalize)])) as unknown as RecordShape,
);
/** Each field's zod type by name (Object.fromEntries loses the names): its output is the Row's type. */
type RecordShape = { [K in KnownField]: ReturnType<typeof field<Row[K]>> };

const RECORD_ID_LIMIT = 100;

/** The id as text for a rejected record: canonical when valid, else as written (cut), else null. */
function readableId(input: unknown): string | null {
  const id = normalizeId(input);
  if (id.ok) return id.value;
  if (typeof input === 'string') return input.length <= RECORD_ID_LIMIT ? input : `${input.slice(0, RECORD_ID_LIMIT)}…`;
  if (typeof input === 'bigint' || (typeof input === 'number' && Number.isFinite(input))) return String(input);
  return null;
}

const NOT_AN_OBJECT: FieldError[] = [{ path: '', message: 'record is not a JSON object' }];

export function transformRecord(value: unknown): RecordResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, recordId: null, id: null, errors: NOT_AN_OBJECT };
  const record = value as Record<string, unknown>;
  // A record without a required field (id, wpi) is rejected for sure: its reasons are found
  // without zod, whose failure path (issue objects, a ZodError) is costly, which a
  // listing where every record lost a required field (a renamed id) would pay a million times.
  if (lacksRequired(record)) return rejected(record, fieldErrors(record));
  const parsed = recordSchema.safeParse(record);
  if (parsed.success) return { ok: true, row: parsed.data };
  return rejected(
    record,
    parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message })),
  );
}

function rejected(record: Record<string, unknown>, errors: FieldError[]): RecordResult {
  const id = normalizeId(record.id);
  return { ok: false, recordId: id.ok ? id.value : readableId(record.id), id: id.ok ? id.value : null, errors };
}

const REQUIRED: readonly KnownField[] = FIELDS.filter((f) => f.required).map((f) => f.name);

function lacksRequired(record: Record<string, unknown>): boolean {
  for (let i = 0; i < REQUIRED.length; i++) if (record[REQUIRED[i]!] == null) return true;
  return false;
}

/** Every reason a record fails, as recordSchema reports them (same paths, messages and order). */
function fieldErrors(record: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  for (const [name, normalize] of CHECKS) {
    const result = normalize(record[name]);
    if (!result.ok) errors.push({ path: name, message: result.message });
  }
  return errors;
}
