/**
 * Which fields the records of one listing carry: per known field, how many records have it and
 * how many have a value; per unknown field, how many have it. Stored per run (sync_runs.field_counts)
 * so the next run can tell a renamed or emptied upstream field from normal data.
 */

/** The fields a record may carry, in schema order. */
export const KNOWN_FIELDS = [
  'id',
  'wpi',
  'inventory_bulk_wine',
  'inventory_finished_goods',
  'inventory_sales',
  'vintage_forecast',
  'vintage_make',
  'first_sale',
] as const;
export type KnownField = (typeof KNOWN_FIELDS)[number];

/** A listing with more distinct unknown names than this is hostile or broken; the rest are not named. */
export const MAX_UNKNOWN_FIELDS = 1000;

/** The stored form (JSON), as in sync_runs.field_counts. */
export interface FieldCounts {
  /** Records inspected: every array element that is a JSON object. */
  records: number;
  /** Per known field: records that have the key, and records whose value is neither null nor "". */
  fields: Record<KnownField, { present: number; non_null: number }>;
  /** Per unknown field name: records that have it. */
  unknown: Record<string, number>;
  /** True when more than MAX_UNKNOWN_FIELDS distinct unknown names appeared (the others are not listed). */
  unknown_truncated?: boolean;
}

const INDEX: ReadonlyMap<string, number> = new Map(KNOWN_FIELDS.map((name, i) => [name, i]));

/**
 * Counts per record without allocating: for-in reads the keys from V8's enum cache (no key array
 * as Object.keys would make), and the counters are typed arrays indexed by field.
 */
export class FieldCounter {
  records = 0;
  private readonly present = new Float64Array(KNOWN_FIELDS.length);
  private readonly nonNull = new Float64Array(KNOWN_FIELDS.length);
  private readonly unknown = new Map<string, number>();
  private truncated = false;

  count(record: object): void {
    this.records++;
    const r = record as Record<string, unknown>;
    for (const key in r) {
      const i = INDEX.get(key);
      if (i !== undefined) {
        this.present[i]!++;
        const value = r[key];
        // "" loads as null (decimals, dates), so a field sent as "" everywhere empties its column too.
        if (value !== null && value !== '') this.nonNull[i]!++;
      } else {
        const seen = this.unknown.get(key);
        if (seen !== undefined) this.unknown.set(key, seen + 1);
        else if (this.unknown.size < MAX_UNKNOWN_FIELDS) this.unknown.set(key, 1);
        else this.truncated = true;
      }
    }
  }

  /** Unknown field names, sorted. */
  unknownNames(): string[] {
    return [...this.unknown.keys()].sort();
  }

  toJSON(): FieldCounts {
    const fields = {} as FieldCounts['fields'];
    KNOWN_FIELDS.forEach((name, i) => (fields[name] = { present: this.present[i]!, non_null: this.nonNull[i]! }));
    // No prototype: an upstream field named "__proto__" is a plain key here.
    const unknown: Record<string, number> = Object.create(null);
    for (const name of this.unknownNames()) unknown[name] = this.unknown.get(name)!;
    return { records: this.records, fields, unknown, ...(this.truncated ? { unknown_truncated: true } : {}) };
  }
}
