/**
 * Record shapes: what the run's field counts take from a record, stored by number with its
 * fingerprint so an unchanged record is counted without being read. Rule: a shape number is never
 * given to two descriptions.
 */
import type { FieldCounter } from '../transform/field-counts.js';
import { fingerprint } from './fingerprint.js';

/** Descriptions a run holds; past this, new shapes get no number (a listing whose every record differs). */
export const MAX_SHAPES = 4096;
/** A record with more extra members than this, or a longer unknown name, gets no shape. */
const MAX_UNKNOWN = 32;
const MAX_NAME_CHARS = 128;
const DIGEST_SEED = 0x5a4e5e;

/** A shape as stored: its number and description. */
export interface StoredShape {
  shape: number;
  description: string;
}

interface Shape {
  number: number;
  present: number;
  nonNull: number;
  names: string[];
  kinds: number[];
  /** The counter `slots` were found in, and per extra member its slot there. */
  slotsOf: FieldCounter | undefined;
  slots: number[];
}

/** What a record read from its bytes has: MemberReader's masks and unknown names. */
export interface RecordShape {
  present: number;
  nonNull: number;
  unknownCount: number;
  unknownNames: readonly string[];
}

export class ShapeBook {
  private readonly shapes = new Map<number, Shape>();
  /** The same shapes by their masks (present * 2^31 + nonNull, rounded: a bucket, checked whole). */
  private readonly byMasks = new Map<number, Shape[]>();
  private readonly added: StoredShape[] = [];
  private readonly digest = new Int32Array(2);
  /** The last record's shape: records of a listing mostly repeat it. */
  private last: Shape | undefined;
  private counted: Shape | undefined;
  private countedNumber = 0;

  /** How many shapes were stored before the run (whether this book took them or not). */
  readonly stored: number;

  /**
   * The stored shapes; one whose description does not digest to its number is left out (and a
   * shape of that number the run finds replaces it). Every valid one is taken, so that a number
   * the run gives out is never one a stored description holds.
   */
  constructor(stored: readonly StoredShape[] = []) {
    this.stored = stored.length;
    for (const { shape, description } of stored) {
      const parsed = parse(shape, description);
      if (parsed !== undefined && this.numberFor(description) === shape) this.add(parsed);
    }
  }

  /** Whether `shape` is a number this book can count. */
  has(shape: number): boolean {
    return shape !== 0 && this.shapes.has(shape);
  }

  /**
   * The number of the shape of `record` (`kinds`: per extra member, the kind of its value, 0
   * when not looked at); new shapes are added, to be stored with the run. 0 when it gets none.
   * `plain`: the record's keys are printable ASCII without escapes (flat-record.ts).
   */
  numberOf(record: RecordShape, kinds: Int32Array, plain: boolean): number {
    const last = this.last;
    if (
      last !== undefined &&
      sameShape(last, record.present, record.nonNull, record.unknownNames, kinds, record.unknownCount)
    )
      return last.number;
    const number = this.number(record, kinds, plain);
    if (number !== 0) this.last = this.shapes.get(number);
    return number;
  }

  /** Counts a record of shape `shape` (one `has` answered true for) into `fields`. */
  count(shape: number, fields: FieldCounter): void {
    let s = this.counted;
    if (s === undefined || this.countedNumber !== shape) {
      s = this.shapes.get(shape)!;
      this.counted = s;
      this.countedNumber = shape;
    }
    fields.countMembers(s.present, s.nonNull);
    if (s.names.length === 0) return;
    if (s.slotsOf !== fields) {
      s.slots = s.names.map((name) => fields.unknownSlot(name));
      s.slotsOf = fields;
    }
    for (let u = 0; u < s.names.length; u++) fields.countSlot(s.slots[u]!, s.kinds[u]!);
  }

  /** The shapes this run added, to store with its fingerprints. */
  get newShapes(): readonly StoredShape[] {
    return this.added;
  }

  private number(record: RecordShape, valueKinds: Int32Array, plain: boolean): number {
    const count = record.unknownCount;
    if (count > MAX_UNKNOWN || (count > 0 && !plain)) return 0;
    // A shape held already: found by its masks, without describing the record.
    const bucket = this.byMasks.get(record.present * 2147483648 + record.nonNull);
    if (bucket !== undefined) {
      for (const s of bucket)
        if (sameShape(s, record.present, record.nonNull, record.unknownNames, valueKinds, count)) return s.number;
    }
    const names = record.unknownNames.slice(0, count);
    const kinds = Array.from(valueKinds.subarray(0, count));
    if (names.some((name) => name.length > MAX_NAME_CHARS || !/^[\x20-\x7e]*$/.test(name))) return 0;
    const description = JSON.stringify([record.present, record.nonNull, names.map((name, u) => [name, kinds[u]])]);
    const shape = this.numberFor(description);
    // Its number held by another description (not found by its masks above): it gets none.
    if (this.shapes.has(shape) || this.shapes.size >= MAX_SHAPES) return 0;
    this.add({
      number: shape,
      present: record.present,
      nonNull: record.nonNull,
      names,
      kinds,
      slotsOf: undefined,
      slots: [],
    });
    this.added.push({ shape, description });
    return shape;
  }

  private add(s: Shape): void {
    this.shapes.set(s.number, s);
    const key = s.present * 2147483648 + s.nonNull;
    const bucket = this.byMasks.get(key);
    if (bucket === undefined) this.byMasks.set(key, [s]);
    else bucket.push(s);
  }

  private numberFor(description: string): number {
    const bytes = Buffer.from(description, 'utf8');
    fingerprint(bytes, 0, bytes.length, this.digest, DIGEST_SEED);
    return this.digest[0]! & 0x7fffffff || 1;
  }
}

function parse(number: number, description: string): Shape | undefined {
  try {
    const [present, nonNull, unknown] = JSON.parse(description) as [unknown, unknown, unknown];
    if (!Number.isInteger(present) || !Number.isInteger(nonNull) || !Array.isArray(unknown)) return undefined;
    const names: string[] = [];
    const kinds: number[] = [];
    for (const member of unknown as unknown[]) {
      if (!Array.isArray(member) || typeof member[0] !== 'string' || !Number.isInteger(member[1])) return undefined;
      names.push(member[0]);
      kinds.push(member[1] as number);
    }
    return {
      number,
      present: present as number,
      nonNull: nonNull as number,
      names,
      kinds,
      slotsOf: undefined,
      slots: [],
    };
  } catch {
    return undefined;
  }
}

function sameShape(
  s: Shape,
  present: number,
  nonNull: number,
  names: readonly string[],
  kinds: ArrayLike<number>,
  count: number,
): boolean {
  if (s.present !== present || s.nonNull !== nonNull || s.names.length !== count) return false;
  for (let u = 0; u < count; u++) if (s.names[u] !== names[u] || s.kinds[u] !== kinds[u]) return false;
  return true;
}
