/**
 * The hot loop's fast path for a number token. A function of its own, not written inline in
 * ListingScanner.scan: V8 inlines it there (bench/parser-micro.ts checks that it costs nothing).
 */

/**
 * When the whole number at `i` lies before `end` and is well formed, writes it quoted at `o`
 * (`12.50` -> `"12.50"`) and returns the new end of `out`; else -1 (window end, an error,
 * -Infinity: the resumable S_NUM machine takes the number from its start).
 */
export function quoteNumber(b: Buffer, i: number, end: number, out: Buffer, o: number): number {
  out[o] = 0x22;
  // Each byte of the number is copied as it is, after the opening quote: out[j + shift] = b[j].
  const shift = o + 1 - i;
  let j = i;
  let d = b[j]!;
  if (d === 0x2d) {
    out[j + shift] = d;
    if (++j === end) return -1;
    d = b[j]!;
  }
  if (d === 0x30) {
    out[j + shift] = d;
    if (++j === end) return -1;
  } else if (d >= 0x31 && d <= 0x39) {
    if ((j = digitRun(b, j, end, out, shift)) < 0) return -1;
  } else return -1;
  d = b[j]!;
  if (d === 0x2e) {
    out[j + shift] = d;
    if (++j === end) return -1;
    d = b[j]!;
    if (d < 0x30 || d > 0x39 || (j = digitRun(b, j, end, out, shift)) < 0) return -1;
    d = b[j]!;
  }
  if (d === 0x65 || d === 0x45) {
    out[j + shift] = d;
    if (++j === end) return -1;
    d = b[j]!;
    if (d === 0x2b || d === 0x2d) {
      out[j + shift] = d;
      if (++j === end) return -1;
      d = b[j]!;
    }
    if (d < 0x30 || d > 0x39 || (j = digitRun(b, j, end, out, shift)) < 0) return -1;
    d = b[j]!;
  }
  if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) return -1;
  out[j + shift] = 0x22;
  return j + shift + 1;
}

/** Copies the run of digits at `j` (a digit); returns the position after it, or -1 at `end`. */
function digitRun(b: Buffer, j: number, end: number, out: Buffer, shift: number): number {
  let d = b[j]!;
  do {
    out[j + shift] = d;
    if (++j === end) return -1;
    d = b[j]!;
  } while (d >= 0x30 && d <= 0x39);
  return j;
}
