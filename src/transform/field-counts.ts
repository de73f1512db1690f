/**
 * Which fields the records of one listing carry: per known field, how many records have it and
 * how many have a value; per extra field, how many have it. Stored per run (sync_runs.field_counts)
 * so the next run can tell a renamed or emptied upstream field from normal data.
 */
import { isKnownField, KNOWN_FIELDS, type FieldCounts, type KnownField } from '../fields.js';
import { shownName } from './field-name.js';

export { KNOWN_FIELDS, type FieldCounts, type KnownField };

/** A listing with more distinct unknown names than this is hostile or broken; the rest are not named. */
export const MAX_EXTRA_FIELDS = 1000;

/**
 * `counter.tally(0, record.id) + counter.tally(1, record.wpi) + ...`, one term per catalogue field
 * in KNOWN_FIELDS order: the hand-unrolled form's speed (the names are trusted identifiers,
 * checked by src/fields.ts), without a second list of the fields to keep in step.
 */
const tallyKnown = new Function(
  'counter',
  'record',
  `return ${KNOWN_FIELDS.map((name, i) => `counter.tally(${i}, record.${name})`).join(' + ')};`,
) as (counter: FieldCounter, record: object) => number;

/**
 * Counts on the hot path (every record of a 1M listing) without allocating: the known fields are
 * read by name (monomorphic property loads, several times cheaper than a loop over the names with
 * a keyed load each), and only a record with more keys than
 * known fields is walked for its unknown names.
 */
export class FieldCounter {
  records = 0;
  private readonly present = new Float64Array(KNOWN_FIELDS.length);
  private readonly nonNull = new Float64Array(KNOWN_FIELDS.length);
  /**
   * Per extra field name as shown (field-name.ts: a long name by its first bytes and a digest),
   * its slot in `unknownRecords` and `unknownKinds` (in the order first seen): at most
   * MAX_EXTRA_FIELDS names of at most MAX_NAME_BYTES bytes, whatever the listing sends.
   */
  private readonly unknown = new Map<string, number>();
  private readonly unknownRecords: number[] = [];
  /** Per slot: the kinds of the field's values (extra-fields.ts KIND_*), as bits. */
  private readonly unknownKinds: number[] = [];
  private truncated = false;

  /** Counts a parsed record; true when it has extra fields. */
  count(record: object): boolean {
    this.records++;
    const known = tallyKnown(this, record);
    let keys = 0;
    for (const _ in record) keys++;
    if (keys <= known) return false;
    this.countUnknownOf(record);
    return true;
  }

  /**
   * Known field i's value in the record being counted; 1 when the record has the field (a parsed JSON value is never
   * undefined).
   */
  tally(i: number, value: unknown): number {
    if (value === undefined) return 0;
    this.present[i]!++;
    // "" loads as null (decimals, dates), so a field sent as "" everywhere empties its column too.
    if (value !== null && value !== '') this.nonNull[i]!++;
    return 1;
  }

  private countUnknownOf(record: object): void {
    for (const key in record) if (!isKnownField(key)) this.countUnknown(key);
  }

  /**
   * A record read from its bytes (no object): bit i of `present` / `nonNull` for KNOWN_FIELDS[i];
   * its extra fields follow, one countUnknown each.
   */
  countMembers(present: number, nonNull: number): void {
    this.records++;
    for (let i = 0; i < KNOWN_FIELDS.length; i++) {
      if ((present & (1 << i)) === 0) continue;
      this.present[i]!++;
      if ((nonNull & (1 << i)) !== 0) this.nonNull[i]!++;
    }
  }

  /** One extra field of the record being counted, and the kind of its value when known (0: not). */
  countUnknown(key: string, kind = 0): void {
    this.countSlot(this.unknownSlot(key), kind);
  }

  /**
   * The slot of an extra field name, for countSlot: registered when new, -1 past
   * MAX_EXTRA_FIELDS names. The byte-level path asks once per name it has not just seen, then
   * counts by slot: an array increment per field of a record instead of map lookups.
   */
  unknownSlot(key: string): number {
    const name = shownName(key);
    const slot = this.unknown.get(name);
    if (slot !== undefined) return slot;
    if (this.unknown.size >= MAX_EXTRA_FIELDS) return -1;
    this.unknown.set(name, this.unknownRecords.length);
    this.unknownRecords.push(0);
    this.unknownKinds.push(0);
    return this.unknownRecords.length - 1;
  }

  /** One extra field (by its slot) of the record being counted, and the kind of its value (0: not known). */
  countSlot(slot: number, kind: number): void {
    if (slot < 0) {
      this.truncated = true;
      return;
    }
    this.unknownRecords[slot]!++;
    this.unknownKinds[slot]! |= kind;
  }

  /** The kind of an extra field's value, for a record whose names were counted already. */
  noteKind(key: string, kind: number): void {
    const slot = this.unknown.get(shownName(key));
    if (slot !== undefined) this.unknownKinds[slot]! |= kind;
  }

  /**
   * Each counted extra field (its name as shown): the records that have it, and the kinds of its values seen (0 when
   * only nulls).
   */
  unknownFields(): Array<{ name: string; records: number; kinds: number }> {
    return [...this.unknown].map(([name, slot]) => ({
      name,
      records: this.unknownRecords[slot]!,
      kinds: this.unknownKinds[slot]!,
    }));
  }

  /** Unknown field names as shown (field-name.ts), sorted. */
  unknownNames(): string[] {
    return [...this.unknown.keys()].sort();
  }

  toJSON(): FieldCounts {
    const fields = {} as FieldCounts['fields'];
    KNOWN_FIELDS.forEach((name, i) => (fields[name] = { present: this.present[i]!, non_null: this.nonNull[i]! }));
    // No prototype: an upstream field named "__proto__" is a plain key here.
    const unknown: Record<string, number> = Object.create(null);
    for (const name of this.unknownNames()) unknown[name] = this.unknownRecords[this.unknown.get(name)!]!;
    return { records: this.records, fields, unknown, ...(this.truncated ? { unknown_truncated: true } : {}) };
  }
}
