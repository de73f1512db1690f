import { describe, expect, it } from 'vitest';
import { biRoundingLevel, describeBiRounding, overflowThreshold } from '../../src/load/bi-rounding.js';

describe('BI rounding report', () => {
  it('the overflow threshold is the half-way point below 10^(28-S)', () => {
    expect(overflowThreshold(10)).toBe('999999999999999999.99999999995');
    expect(overflowThreshold(0)).toBe('9999999999999999999999999999.5');
    expect(overflowThreshold(20)).toBe('99999999.999999999999999999995');
    expect(() => overflowThreshold(21)).toThrow(RangeError);
  });

  it('warns only when digits are lost or values left out', () => {
    expect(describeBiRounding({ scale: 10, rounded: 0, overflow: 0 })).toBeUndefined();
    expect(describeBiRounding({ scale: 4, rounded: 1, overflow: 0 })).toBe(
      'BI views: 1 live value has more than 4 decimal places and is rounded; the exact tables keep every digit',
    );
    expect(describeBiRounding({ scale: 10, rounded: 0, overflow: 2 })).toBe(
      'BI views: 2 live values do not fit numeric(28,10) and are NULL (see overflow_columns); the exact tables keep every digit',
    );
  });

  it('is a warning only when the count grew since the last successful load or the scale changed', () => {
    const now = { scale: 10, rounded: 5, overflow: 1 };
    const last = (scale: number | null, rounded: string | null, overflow: string | null) => ({ bi_scale: scale, bi_rounded: rounded, bi_overflow: overflow });
    expect(biRoundingLevel(now, undefined)).toBe('warn');
    expect(biRoundingLevel(now, last(null, null, null))).toBe('warn');
    expect(biRoundingLevel(now, last(10, '5', '1'))).toBe('info');
    expect(biRoundingLevel(now, last(10, '9', '3'))).toBe('info');
    expect(biRoundingLevel(now, last(10, '4', '1'))).toBe('warn');
    expect(biRoundingLevel(now, last(10, '5', '0'))).toBe('warn');
    expect(biRoundingLevel(now, last(8, '5', '1'))).toBe('warn');
  });
});
