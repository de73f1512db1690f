/**
 * Exact decimal arithmetic on the text PostgreSQL gives for numeric (`-12.50`, `0.000001`): the
 * digits as a BigInt and how many of them are fractional. Sums and comparisons of totals and of
 * minimums and maximums never pass through a JS number.
 */

export interface Decimal {
  /** The value times 10^scale. */
  units: bigint;
  scale: number;
}

const PLAIN = /^(-?)(\d+)(?:\.(\d+))?$/;

/** The decimal `text` names; undefined for anything else (NaN, Infinity, an exponent). */
export function parseDecimal(text: string): Decimal | undefined {
  const m = PLAIN.exec(text);
  if (m === null) return undefined;
  const fraction = m[3] ?? '';
  const units = BigInt(m[2]! + fraction);
  return { units: m[1] === '-' ? -units : units, scale: fraction.length };
}

function rescale(d: Decimal, scale: number): bigint {
  return d.units * 10n ** BigInt(scale - d.scale);
}

export function addDecimal(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { units: rescale(a, scale) + rescale(b, scale), scale };
}

export function subtractDecimal(a: Decimal, b: Decimal): Decimal {
  return addDecimal(a, { units: -b.units, scale: b.scale });
}

/** -1, 0 or 1 as a is below, equal to or above b. */
export function compareDecimal(a: Decimal, b: Decimal): number {
  const scale = Math.max(a.scale, b.scale);
  const x = rescale(a, scale);
  const y = rescale(b, scale);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function absDecimal(d: Decimal): Decimal {
  return d.units < 0n ? { units: -d.units, scale: d.scale } : d;
}

export function multiplyDecimal(a: Decimal, b: Decimal): Decimal {
  return { units: a.units * b.units, scale: a.scale + b.scale };
}

/** Canonical text: no trailing fractional zeros, no `-0`. */
export function formatDecimal(d: Decimal): string {
  const negative = d.units < 0n;
  let digits = (negative ? -d.units : d.units).toString().padStart(d.scale + 1, '0');
  let scale = d.scale;
  while (scale > 0 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    scale--;
  }
  const whole = digits.slice(0, digits.length - scale);
  const text = scale === 0 ? whole : `${whole}.${digits.slice(digits.length - scale)}`;
  return negative && /[1-9]/.test(text) ? `-${text}` : text;
}

/** a / b rounded half away from zero to `places` fractional digits, as text; b must not be zero. */
export function divideToText(a: Decimal, b: Decimal, places: number): string {
  // a/b = (a.units * 10^b.scale) / (b.units * 10^a.scale)
  let num = a.units * 10n ** BigInt(b.scale + places);
  let den = b.units * 10n ** BigInt(a.scale);
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const negative = num < 0n;
  const abs = negative ? -num : num;
  let q = abs / den;
  if ((abs % den) * 2n >= den) q++;
  const fixed = formatDecimal({ units: negative ? -q : q, scale: places });
  return fixed;
}
