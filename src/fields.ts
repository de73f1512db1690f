/**
 * The field catalogue: each upstream field once; everything that spells the fields derives from it.
 * Rule: order is the staging COPY column order, and names are written into SQL as identifiers, so
 * they are trusted constants. Adding a field: docs/internals.md (Adding a field).
 */

/**
 * How a field is read and stored; each kind has one rule (docs/data-safety.md's record rules):
 * id: an integer 1..2^63-1 (bigint); text: trimmed, not empty (text); decimal: exact canonical
 * decimal text, never a JS number (numeric); date: YYYY-MM-DD as written (date).
 */
export type FieldKind = 'id' | 'text' | 'decimal' | 'date';

export interface Field {
  readonly name: string;
  readonly kind: FieldKind;
  /** A record without it is rejected; its column is NOT NULL. */
  readonly required: boolean;
  /** What it means: the COMMENT of its column in bulk_wine_reconciliation. */
  readonly meaning: string;
}

export const FIELDS = [
  { name: 'id', kind: 'id', required: true, meaning: 'Upstream record identifier.' },
  { name: 'wpi', kind: 'text', required: true, meaning: 'Wine identifier code (upstream "wpi"), trimmed.' },
  {
    name: 'inventory_bulk_wine',
    kind: 'decimal',
    required: false,
    meaning: 'Bulk wine inventory quantity; exact decimal as sent; unit not specified upstream.',
  },
  {
    name: 'inventory_finished_goods',
    kind: 'decimal',
    required: false,
    meaning: 'Finished goods inventory quantity; exact decimal as sent; unit not specified upstream.',
  },
  {
    name: 'inventory_sales',
    kind: 'decimal',
    required: false,
    meaning:
      'Sales inventory quantity; exact decimal as sent (many fractional digits possible); unit not specified upstream.',
  },
  {
    name: 'vintage_forecast',
    kind: 'decimal',
    required: false,
    meaning: 'Vintage forecast quantity; exact decimal as sent; unit not specified upstream.',
  },
  {
    name: 'vintage_make',
    kind: 'decimal',
    required: false,
    meaning: 'Vintage make quantity; exact decimal as sent; unit not specified upstream.',
  },
  {
    name: 'first_sale',
    kind: 'date',
    required: false,
    meaning: 'Date of first sale as written upstream (no time zone conversion); null when unknown.',
  },
] as const satisfies readonly Field[];

type CatalogueField = (typeof FIELDS)[number];
export type KnownField = CatalogueField['name'];
/** Every field but the record id: the columns a run compares, stages and versions. */
export type DataColumn = Exclude<KnownField, 'id'>;

/**
 * One record as loaded: the shape the transform step produces and the load step stages.
 * Decimals are canonical decimal text, dates 'YYYY-MM-DD', the id its decimal digits: never a JS
 * number or Date. An optional field is null when absent, null or "".
 */
export type Row = { [F in CatalogueField as F['name']]: F['required'] extends true ? string : string | null };

/** The fields a record may carry, in catalogue order. */
export const KNOWN_FIELDS: readonly KnownField[] = FIELDS.map((f) => f.name);
const KNOWN: ReadonlySet<string> = new Set(KNOWN_FIELDS);
/** Whether a record's member of this name is a field of the catalogue (the others are extra_fields). */
export function isKnownField(name: string): boolean {
  return KNOWN.has(name);
}
/** The record's values besides its id, in catalogue order. */
export const DATA_COLUMNS: readonly DataColumn[] = FIELDS.filter((f) => f.kind !== 'id').map((f) => f.name);
export const DATA_FIELDS: readonly Field[] = FIELDS.filter((f) => f.kind !== 'id');
export const DECIMAL_FIELDS: readonly Field[] = FIELDS.filter((f) => f.kind === 'decimal');
/** Fields a record may lack (they load as null): the ones the schema-drift guard watches. */
export const OPTIONAL_FIELDS: readonly KnownField[] = FIELDS.filter((f) => !f.required).map((f) => f.name);

/**
 * Not a field of the catalogue: every top-level member of a record that the catalogue does not
 * know, names and values as sent, in one jsonb column (null when there is none, or with
 * SYNC_EXTRA_FIELDS=drop). It is stored, staged, compared and versioned like a data column, after
 * the catalogue's fields (db/field-sql.ts), and written by both COPY writers right after them.
 * Which such fields a run found is kept in sync_fields (load/extra-fields.ts).
 */
export const EXTRA_COLUMN = 'extra_fields';

/**
 * Data columns that a migration added to tables that already had rows: a row a run wrote before
 * that migration could not store them, and holds NULL there. When such a row's record differs
 * from it only there, a run fills the row in place, a backfill (load/apply.ts): no new version,
 * changed_at and run_id kept, counted in sync_runs.backfilled, not as updated. `since` is the
 * migration that added the column; `compared` how a change of it is judged (as classify_changes
 * compares it). A field that joins the catalogue later is added here too (docs/internals.md).
 */
export const LATE_COLUMNS: ReadonlyArray<{ readonly name: string; readonly since: number; readonly compared: string }> =
  [{ name: EXTRA_COLUMN, since: 9, compared: `${EXTRA_COLUMN}::text` }];

/** The PostgreSQL type of each kind's column. */
export const SQL_TYPE: Readonly<Record<FieldKind, string>> = {
  id: 'bigint',
  text: 'text',
  decimal: 'numeric',
  date: 'date',
};

/*
 * The BI views' type for a decimal field, numeric(BI_PRECISION, S), defined once: config validation
 * (SYNC_BI_SCALE), the views template (db/bi-views.ts) and the rounding count (load/bi-rounding.ts)
 * all take the precision and the scale rule from here.
 */

/** Total digits of every BI decimal: what .NET's System.Decimal (Npgsql, Power BI) always holds. */
export const BI_PRECISION = 28;
/** The largest S (SYNC_BI_SCALE's documented range is 0-20). */
export const MAX_BI_SCALE = 20;
/** The rule as the configuration error states it. */
export const BI_SCALE_RULE = `must be a whole number from 0 to ${MAX_BI_SCALE}`;

export function isBiScale(scale: number): boolean {
  return Number.isInteger(scale) && scale >= 0 && scale <= MAX_BI_SCALE;
}

/**
 * The scale, when it is one; a RangeError otherwise. Every function that builds SQL text from S
 * calls this first: S is substituted into SQL as digits, so it must be a validated integer.
 */
export function checkBiScale(scale: number): number {
  if (!isBiScale(scale)) throw new RangeError(`BI scale must be 0..${MAX_BI_SCALE}, got ${scale}`);
  return scale;
}

/** "numeric(28,S)", as PostgreSQL's format_type writes it. */
export function biDecimalType(scale: number): string {
  return `numeric(${BI_PRECISION},${checkBiScale(scale)})`;
}

/** The stored form (JSON), as in sync_runs.field_counts. */
export interface FieldCounts {
  /** Records inspected: every array element that is a JSON object. */
  records: number;
  /** Per known field: records that have the key, and records whose value is neither null nor "". */
  fields: Record<KnownField, { present: number; non_null: number }>;
  /** Per extra field name (as transform/field-name.ts shows it: at most 128 bytes): records that have it. */
  unknown: Record<string, number>;
  /** True when more than MAX_EXTRA_FIELDS distinct unknown names appeared (the others are not listed). */
  unknown_truncated?: boolean;
}

/**
 * What the code that derives from the catalogue relies on, checked once at load: a mistake in an
 * entry fails every command at start-up, naming the field, instead of loading wrong data.
 */
function checkCatalogue(fields: readonly Field[]): void {
  const seen = new Set<string>();
  fields.forEach((f, i) => {
    const problem = (why: string) => new Error(`field catalogue (src/fields.ts): ${f.name}: ${why}`);
    // Written into SQL as an identifier, unquoted: lower-case letters, digits and underscores.
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(f.name)) throw problem('a name must be a lower-case SQL identifier');
    if (seen.has(f.name)) throw problem('listed twice');
    seen.add(f.name);
    // The SQL keys and joins every table on a column named id; the byte-level reader needs it first.
    if ((f.kind === 'id') !== (i === 0 && f.name === 'id'))
      throw problem('the one field of kind id is "id", listed first');
    // Each kind's normalizer decides required-ness (transform/record.ts): id and text reject a
    // missing value, decimal and date load it as null.
    if (f.required !== (f.kind === 'id' || f.kind === 'text'))
      throw problem(`a ${f.kind} field is ${f.kind === 'id' || f.kind === 'text' ? 'required' : 'optional'}`);
    if (f.meaning.trim() === '') throw problem('say what it means (its column COMMENT)');
  });
  // Field presence travels as bits of an int32 (extract/json/record-members.ts).
  if (fields.length > 31) throw new Error('field catalogue (src/fields.ts): at most 31 fields');
}
checkCatalogue(FIELDS);
