/**
 * What the BI views do to each decimal a first load writes (rounded, overflow), counted from digits.
 * Rule: this must equal sql/load/bi.sql's count exactly, never via a JS number (bi-effect.test.ts).
 */
import { BI_PRECISION, FIELDS, checkBiScale, type KnownField, type Row } from '../fields.js';
import { MAX_DIGITS } from './decimal.js';

/** What the views do to a value: ROUNDED or OVERFLOW, or 0 when they show it as it is. */
export const ROUNDED = 1;
export const OVERFLOW = 2;

const MINUS = 0x2d;
const DOT = 0x2e;
const NINE = 0x39;
const ZERO = 0x30;
const DECIMAL_NAMES: readonly KnownField[] = FIELDS.filter((f) => f.kind === 'decimal').map((f) => f.name);

/** The running count of one first load's written values; `rounded` and `overflow` as the SQL counts them. */
export class BiTally {
  rounded = 0;
  overflow = 0;
  /** Integer digits numeric(P, S) holds: P-S. */
  private readonly room: number;
  /** A text value at the overflow edge, copied into a buffer of the largest decimal (no allocation per value). */
  private readonly scratch = Buffer.allocUnsafe(MAX_DIGITS + 3);

  constructor(readonly scale: number) {
    this.room = BI_PRECISION - checkBiScale(scale);
  }

  /**
   * The effect on the plain decimal text `b[start, end)`: an optional `-`, digits, and an optional
   * point and digits, as the COPY writers write a decimal (no exponent, no `\N`).
   */
  effect(b: Uint8Array, start: number, end: number): number {
    let i = start;
    if (b[i] === MINUS) i++;
    while (i < end && b[i] === ZERO) i++;
    const intAt = i;
    while (i < end && b[i] !== DOT) i++;
    const intLen = i - intAt;
    const fracLen = i < end ? end - i - 1 : 0;
    if (intLen === this.room && this.reachesLimit(b, intAt, intLen, fracLen)) return OVERFLOW;
    return this.bySize(intLen, fracLen);
  }

  /** The same for a decimal as text (the zod path's rows). */
  effectOfText(text: string): number {
    const end = text.length;
    let i = text.charCodeAt(0) === MINUS ? 1 : 0;
    while (i < end && text.charCodeAt(i) === ZERO) i++;
    const intAt = i;
    while (i < end && text.charCodeAt(i) !== DOT) i++;
    const intLen = i - intAt;
    // Only a value at the overflow edge has its digits read: as bytes, the way the writer's are.
    if (intLen === this.room) return this.effect(this.scratch, 0, this.scratch.write(text, 'latin1'));
    return this.bySize(intLen, i < end ? end - i - 1 : 0);
  }

  /** Adds the effects of a row's decimals (the zod path's rows; the byte-level writer adds its own). */
  addRow(row: Row): void {
    for (const name of DECIMAL_NAMES) {
      const value = row[name];
      if (value === null) continue;
      const effect = this.effectOfText(value);
      if (effect === ROUNDED) this.rounded++;
      else if (effect === OVERFLOW) this.overflow++;
    }
  }

  /** Off the overflow edge, the digit counts decide: more than P-S integer digits, or more than S fraction digits. */
  private bySize(intLen: number, fracLen: number): number {
    if (intLen > this.room) return OVERFLOW;
    return fracLen > this.scale ? ROUNDED : 0;
  }

  /**
   * With exactly P-S integer digits (no leading zero): whether the magnitude is at least T, i.e.
   * the integer digits are all nines, the first S fraction digits too, and the next is 5 or more
   * (missing fraction digits are zeros).
   */
  private reachesLimit(b: Uint8Array, intAt: number, intLen: number, fracLen: number): boolean {
    for (let k = 0; k < intLen; k++) if (b[intAt + k] !== NINE) return false;
    const fracAt = intAt + intLen + 1;
    const scale = this.scale;
    if (fracLen <= scale) return false;
    for (let k = 0; k < scale; k++) if (b[fracAt + k] !== NINE) return false;
    return b[fracAt + scale]! >= 0x35;
  }
}
