/**
 * The hot loop's fast path for a number token. A function of its own, not written inline in
 * ListingScanner.scan: V8 inlines it there, and bench/parser-micro.ts measured no cost (issue 17).
 */

/**
 * When the whole number at `i` lies before `end` and is well formed, writes it quoted at `o`
 * (`12.50` -> `"12.50"`) and returns the new end of `out`; else -1 (window end, an error,
 * -Infinity: the resumable S_NUM machine takes the number from its start).
 */
export function quoteNumber(b: Buffer, i: number, end: number, out: Buffer, o: number): number {
  out[o++] = 0x22;
  let j = i;
  let d = b[j]!;
  if (d === 0x2d) {
    out[o++] = d;
    if (++j === end) return -1;
    d = b[j]!;
  }
  if (d === 0x30) {
    out[o++] = d;
    if (++j === end) return -1;
    d = b[j]!;
  } else if (d >= 0x31 && d <= 0x39) {
    do {
      out[o++] = d;
      if (++j === end) return -1;
      d = b[j]!;
    } while (d >= 0x30 && d <= 0x39);
  } else return -1;
  if (d === 0x2e) {
    out[o++] = d;
    if (++j === end) return -1;
    d = b[j]!;
    if (d < 0x30 || d > 0x39) return -1;
    do {
      out[o++] = d;
      if (++j === end) return -1;
      d = b[j]!;
    } while (d >= 0x30 && d <= 0x39);
  }
  if (d === 0x65 || d === 0x45) {
    out[o++] = d;
    if (++j === end) return -1;
    d = b[j]!;
    if (d === 0x2b || d === 0x2d) {
      out[o++] = d;
      if (++j === end) return -1;
      d = b[j]!;
    }
    if (d < 0x30 || d > 0x39) return -1;
    do {
      out[o++] = d;
      if (++j === end) return -1;
      d = b[j]!;
    } while (d >= 0x30 && d <= 0x39);
  }
  if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) return -1;
  out[o++] = 0x22;
  return o;
}
