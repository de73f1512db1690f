/**
 * The one definition of the BI views' decimal type numeric(BI_PRECISION, S): config validation
 * (SYNC_BI_SCALE), the views template (src/db/bi-views.ts) and the rounding count
 * (src/load/bi-rounding.ts) all take the precision and the scale rule from here.
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
