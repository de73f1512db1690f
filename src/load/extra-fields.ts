/**
 * Extra fields (upstream fields outside the catalogue): recorded in sync_fields and given a BI view column when
 * their name can become one. Rule: a field keeps the column it was first given (the column rule is
 * in docs/internals.md, Module notes).
 */
import type { BiKind } from '../db/bi-extra-fields.js';
import type { PoolClient } from '../db/pool.js';
import { loadStatements } from '../db/statements.js';
import { EXTRA_COLUMN, KNOWN_FIELDS } from '../fields.js';

const SQL = loadStatements('load/fields.sql', ['recorded', 'reserved_words', 'record']);

/** Columns of the BI views an extra field may hold: bounds how wide a runaway upstream can make them. */
export const MAX_COLUMNS = 100;
/** PostgreSQL's identifier limit (NAMEDATALEN - 1). */
const MAX_IDENTIFIER_BYTES = 63;
/** What the BI views and the tables already name. */
const TAKEN: ReadonlySet<string> = new Set([
  ...KNOWN_FIELDS,
  EXTRA_COLUMN,
  'first_seen_at',
  'changed_at',
  'deleted_at',
  'run_id',
  'valid_from',
  'valid_to',
  'overflow_columns',
]);

/** One extra field of a listing: records carrying it, and the kinds of its values (extra-fields.ts KIND_NAMES). */
export interface SeenField {
  name: string;
  records: number;
  kinds: readonly string[];
}

/** Where a field of this run is kept: its BI column, or why it has none. */
export interface KeptField {
  column: string | null;
  note: string | null;
}

/** The kinds, all of one sort, that type a column; anything else is JSON text. */
export function biKindOf(kinds: ReadonlySet<string>): BiKind {
  const only = (...allowed: string[]) => [...kinds].every((k) => allowed.includes(k));
  if (kinds.size === 0 || only('string', 'date')) return kinds.size === 1 && kinds.has('date') ? 'date' : 'text';
  if (only('number')) return 'number';
  if (only('boolean')) return 'boolean';
  return 'json';
}

/** `inventoryInTransit` -> `inventory_in_transit` (the rule above, before collisions). */
export function snakeCase(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** The column for a new field, given the columns `taken` so far, or why it gets none. */
export function columnFor(name: string, taken: ReadonlySet<string>, reserved: ReadonlySet<string>): KeptField {
  if (Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES)
    return { column: null, note: `name longer than ${MAX_IDENTIFIER_BYTES} bytes` };
  let base = snakeCase(name);
  if (base === '') return { column: null, note: 'name has no letter or digit' };
  if (/^[0-9]/.test(base)) base = `field_${base}`;
  if (reserved.has(base) || TAKEN.has(base)) base = `${base}_field`;
  let column = base;
  for (let k = 2; taken.has(column); k++) column = `${base}_${k}`;
  if (column.length > MAX_IDENTIFIER_BYTES)
    return { column: null, note: `column name longer than ${MAX_IDENTIFIER_BYTES} bytes` };
  return { column, note: null };
}

/**
 * The fields as sync_fields can hold them, each once. `seen` has each name once already, as the
 * field counter shows it (transform/field-name.ts: at most 128 bytes). A name with NUL cannot be
 * stored as text (nor were its values kept: jsonb refuses it too); an unpaired surrogate (from a
 * \uD800 escape) reaches PostgreSQL as U+FFFD, so two names may become one: merged here, since one
 * INSERT ... ON CONFLICT must not touch a row twice (it would fail the run, and every next one).
 */
function storable(seen: readonly SeenField[]): Array<SeenField & { names: string[] }> {
  const byName = new Map<string, SeenField & { names: string[] }>();
  for (const f of seen) {
    if (f.name.includes('\u0000')) continue;
    const name = f.name.replace(/\p{Surrogate}/gu, '\uFFFD');
    const same = byName.get(name);
    if (same === undefined) byName.set(name, { ...f, name, names: [f.name] });
    else
      byName.set(name, {
        name,
        records: same.records + f.records,
        kinds: [...new Set([...same.kinds, ...f.kinds])],
        names: [...same.names, f.name],
      });
  }
  return [...byName.values()];
}

interface Recorded {
  name: string;
  column_name: string | null;
  kinds: string[];
  note: string | null;
}

/**
 * Records this run's extra fields in sync_fields (in the run's transaction): new ones with their
 * column, known ones with the kinds seen so far and this run's count. Returns where each is kept.
 */
export async function recordExtraFields(
  client: PoolClient,
  runId: string,
  seen: readonly SeenField[],
): Promise<Map<string, KeptField>> {
  const kept = new Map<string, KeptField>();
  const fields = storable(seen);
  if (fields.length === 0) return kept;
  const recorded = new Map((await client.query<Recorded>(SQL.recorded)).rows.map((r) => [r.name, r]));
  const taken = new Set([...recorded.values()].flatMap((r) => (r.column_name === null ? [] : [r.column_name])));
  let reserved: Set<string> | undefined;
  const rows: Array<KeptField & { name: string; kind: BiKind; kinds: string[]; records: number }> = [];
  // New fields in more records first, then by name: who gets the plain column and who the cap.
  const ordered = [...fields].sort((a, b) => b.records - a.records || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const field of ordered) {
    const before = recorded.get(field.name);
    const kinds = [...new Set([...(before?.kinds ?? []), ...field.kinds])].sort();
    let place: KeptField;
    if (before !== undefined) place = { column: before.column_name, note: before.note };
    else if (taken.size >= MAX_COLUMNS)
      place = { column: null, note: `more than ${MAX_COLUMNS} new fields have columns` };
    else {
      reserved ??= new Set((await client.query<{ word: string }>(SQL.reserved_words)).rows.map((r) => r.word));
      place = columnFor(field.name, taken, reserved);
      if (place.column !== null) taken.add(place.column);
    }
    for (const name of field.names) kept.set(name, place);
    rows.push({ name: field.name, ...place, kind: biKindOf(new Set(kinds)), kinds, records: field.records });
  }
  await client.query(SQL.record, [
    runId,
    rows.map((r) => r.name),
    rows.map((r) => r.column),
    rows.map((r) => r.kind),
    rows.map((r) => r.kinds.join(',')),
    rows.map((r) => r.records),
    rows.map((r) => r.note),
  ]);
  return kept;
}
