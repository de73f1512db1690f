/**
 * Records shaped like real listings (not the simulator's tidy ones), each with the row the sync
 * must load from it, so that the floor can `\copy` exactly the same rows:
 * decimals mostly with 18–28 fractional digits, some of 30+ digits, some short ones and integers,
 * exponents (`1.5e-7`, `2E+3`), trailing zeros, about 30% of one decimal sent as a numeric string,
 * nulls, ISO date-times in `first_sale` besides plain dates and `0000-00-00`, an unknown field on
 * about 1% of records.
 * The 'new-fields' variant adds two unknown members to every record.
 */

export type Variant =
  /** The listing as first loaded. */
  | 'base'
  /**
   * Every 100th id (1%, spread over the whole id range, as the sales of one wine in every hundred
   * are at a site) carries new values in two fields, `inventory_sales` and
   * `inventory_finished_goods`; the rest of each record is the base one. Spread changes touch one
   * heap page each, which is what a nightly run meets (a block of ids would touch a few pages).
   */
  | 'changed'
  /** Every record has `record_id` instead of `id`: every one is rejected. */
  | 'renamed'
  /** Every record is `{}`: every one is rejected. */
  | 'empty'
  /**
   * Every record as in 'base', then two members the sync does not know: `inventory_in_transit`,
   * a decimal like the known ones, and `cellar_note`, a short note (null on about 5%). The known
   * columns load exactly as from 'base'; what keeping unknown members costs shows against it.
   */
  | 'new-fields';

export interface GeneratedRecord {
  json: string;
  /**
   * COPY text line of the row the sync loads (no newline): the known fields, then extra_fields
   * (the record's unknown members as sent, or \N); undefined when a later duplicate supersedes it.
   */
  row: string | undefined;
}

const NULL = '\\N';

/** mulberry32: a tiny, fast, deterministic generator; the same (seed, index, version) gives the same record. */
class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(below: number): number {
    return Math.floor(this.next() * below);
  }
  digits(n: number): string {
    let s = '';
    while (s.length < n) s += String(this.int(1e9)).padStart(9, '0');
    return s.slice(0, n);
  }
  nonZeroDigit(): string {
    return String(1 + this.int(9));
  }
}

/** An integer part without leading zeros, up to `max` digits. */
function integerPart(rng: Rng, max: number): string {
  const n = rng.int(max + 1);
  return n === 0 ? '0' : rng.nonZeroDigit() + rng.digits(n - 1);
}

/** One decimal: its JSON text and its canonical text (or `\N`). */
function decimal(rng: Rng): { json: string; canon: string } {
  const r = rng.next();
  const minus = rng.next() < 0.02 ? '-' : '';
  if (r < 0.06) return { json: 'null', canon: NULL };
  if (r < 0.08) return exponent(rng, minus);
  if (r < 0.24) {
    const int = integerPart(rng, 5);
    return { json: minus + int, canon: int === '0' ? '0' : minus + int };
  }
  const long = r < 0.28;
  const short = r >= 0.28 && r < 0.5;
  const fracLength = long ? 30 + rng.int(6) : short ? 1 + rng.int(6) : 18 + rng.int(11);
  const int = integerPart(rng, long ? 3 : 4);
  const frac = rng.digits(fracLength - 1) + rng.nonZeroDigit();
  const trailing = rng.next() < 0.03 ? '00' : '';
  return { json: `${minus}${int}.${frac}${trailing}`, canon: `${minus}${int}.${frac}` };
}

/** `1.5e-7` -> `0.00000015`, `2E+3` -> `2000`. */
function exponent(rng: Rng, minus: string): { json: string; canon: string } {
  const digits = rng.nonZeroDigit() + (rng.next() < 0.5 ? '' : rng.digits(rng.int(3)) + rng.nonZeroDigit());
  const e = rng.next() < 0.6 ? -(1 + rng.int(9)) : 1 + rng.int(6);
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const json = `${minus}${mantissa}${rng.next() < 0.5 ? 'e' : 'E'}${e > 0 ? (rng.next() < 0.5 ? '+' : '') : ''}${e}`;
  const point = 1 + e;
  let canon: string;
  if (point <= 0) canon = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) canon = digits + '0'.repeat(point - digits.length);
  else canon = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return { json, canon: minus + canon };
}

function firstSale(rng: Rng): { json: string; canon: string } {
  const r = rng.next();
  if (r < 0.15) return { json: 'null', canon: NULL };
  if (r < 0.2) return { json: '"0000-00-00"', canon: NULL };
  // Year, month, day drawn in this order, as the seed's sequence has them.
  const year = 2000 + rng.int(25);
  const month = String(1 + rng.int(12)).padStart(2, '0');
  const day = String(1 + rng.int(28)).padStart(2, '0');
  const date = `${year}-${month}-${day}`;
  if (r < 0.4) return { json: `"${date}T00:00:00.000000Z"`, canon: date };
  return { json: `"${date}"`, canon: date };
}

const NOTE_WORDS = [
  'racked',
  'topped up',
  'fined',
  'filtered',
  'lees stirred',
  'SO2 adjusted',
  'tasted',
  'tight',
  'fruity',
  'reductive',
  'bright',
  'hazy',
  'press fraction',
  'free run',
  'cold settled',
  'sample to lab',
  'ok',
  'hold',
] as const;

/**
 * A cellar hand's note as JSON: a few words, a tank on some, an escaped quote on about 2% (free
 * text is where upstream escapes show up), null on about 5%.
 */
function cellarNote(rng: Rng): string {
  if (rng.next() < 0.05) return 'null';
  const words: string[] = Array.from({ length: 1 + rng.int(4) }, () => NOTE_WORDS[rng.int(NOTE_WORDS.length)]!);
  if (rng.next() < 0.02) words.push(`\\"${NOTE_WORDS[rng.int(NOTE_WORDS.length)]}\\"`);
  const tank = rng.next() < 0.4 ? `T${1 + rng.int(60)}: ` : '';
  return `"${tank}${words.join(', ')}"`;
}

/** The catalogue's decimal fields, in the listing's order; the tests share this list. */
export const DECIMALS = [
  'inventory_bulk_wine',
  'inventory_finished_goods',
  'inventory_sales',
  'vintage_forecast',
  'vintage_make',
] as const;

/**
 * The listing's layout: position -> id. A couple of positions repeat an earlier id (the later
 * record wins, the earlier becomes a "duplicate id" reject).
 */
export class ListingShape {
  private readonly duplicateOf = new Map<number, number>();
  private readonly superseded = new Set<number>();

  constructor(
    readonly records: number,
    readonly seed = 20260101,
  ) {
    if (records >= 1000) {
      for (const [later, earlier] of [
        [Math.floor(records / 3), 10],
        [Math.floor((2 * records) / 3), 20],
      ] as const) {
        this.duplicateOf.set(later, earlier);
        this.superseded.add(earlier);
      }
    }
  }

  idAt(position: number): number {
    return (this.duplicateOf.get(position) ?? position) + 1;
  }

  /** Rows the sync loads: every record but the superseded duplicates. */
  get rows(): number {
    return this.records - this.superseded.size;
  }

  record(position: number, variant: Variant): GeneratedRecord {
    if (variant === 'empty') return { json: '{}', row: undefined };
    const id = this.idAt(position);
    const changed = variant === 'changed' && id % 100 === 0;
    const rng = new Rng(hash(this.seed ^ Math.imul(id, 0x9e3779b1)));
    // The new values come from a generator of their own, so that the base one draws as for 'base'.
    const changes = changed ? new Rng(hash(this.seed ^ Math.imul(id, 0x9e3779b1)) ^ 0x5bd1e995) : undefined;
    const wpi = `WPI-${String(id).padStart(7, '0')}-${String.fromCharCode(65 + rng.int(26), 65 + rng.int(26))}`;
    let json = `{"${variant === 'renamed' ? 'record_id' : 'id'}":${id},"wpi":"${wpi}"`;
    let row = `${id}\t${wpi}`;
    for (const name of DECIMALS) {
      const base = decimal(rng);
      const quotedInBase = name === 'inventory_finished_goods' && base.json !== 'null' && rng.next() < 0.3;
      const d = changes && CHANGED.has(name) ? differentDecimal(changes, base.canon) : base;
      const quoted = quotedInBase && d.json !== 'null';
      json += `,"${name}":${quoted ? `"${d.json}"` : d.json}`;
      row += `\t${d.canon}`;
    }
    const sale = firstSale(rng);
    json += `,"first_sale":${sale.json}`;
    row += `\t${sale.canon}`;
    const extra: string[] = [];
    if (rng.next() < 0.01) extra.push(`"lot_code":"L${rng.digits(6)}"`);
    // Drawn after every base member, so that the rest of the record stays the base one.
    if (variant === 'new-fields')
      extra.push(`"inventory_in_transit":${decimal(rng).json}`, `"cellar_note":${cellarNote(rng)}`);
    for (const member of extra) json += `,${member}`;
    json += '}';
    // extra_fields as COPY text: the JSON with its backslashes doubled (no tab or newline in it).
    row += extra.length === 0 ? `\t${NULL}` : `\t{${extra.join(',').replaceAll('\\', '\\\\')}}`;
    const loaded = variant !== 'renamed' && !this.superseded.has(position);
    return { json, row: loaded ? row : undefined };
  }
}

/** The fields the 'changed' variant gives new values. */
const CHANGED: ReadonlySet<string> = new Set(['inventory_sales', 'inventory_finished_goods']);

/** A decimal whose value differs from `canon`, so that every changed record is a change. */
function differentDecimal(rng: Rng, canon: string): { json: string; canon: string } {
  for (;;) {
    const d = decimal(rng);
    if (d.canon !== canon) return d;
  }
}

function hash(n: number): number {
  let h = Math.imul(n ^ (n >>> 16), 0x45d9f3b);
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  return (h ^ (h >>> 16)) >>> 0;
}
