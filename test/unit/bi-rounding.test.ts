import { describe, expect, it } from 'vitest';
import { biCountPlan, biRoundingLevel, describeBiRounding, overflowThreshold } from '../../src/load/bi-rounding.js';

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
    const last = (scale: number | null, rounded: string | null, overflow: string | null) => ({
      bi_scale: scale,
      bi_rounded: rounded,
      bi_overflow: overflow,
    });
    expect(biRoundingLevel(now, undefined)).toBe('warn');
    expect(biRoundingLevel(now, last(null, null, null))).toBe('warn');
    expect(biRoundingLevel(now, last(10, '5', '1'))).toBe('info');
    expect(biRoundingLevel(now, last(10, '9', '3'))).toBe('info');
    expect(biRoundingLevel(now, last(10, '4', '1'))).toBe('warn');
    expect(biRoundingLevel(now, last(10, '5', '0'))).toBe('warn');
    expect(biRoundingLevel(now, last(8, '5', '1'))).toBe('warn');
  });

  it('starts from the last count only when it described the table as the run found it', () => {
    const last = { id: '7', bi_scale: 10, bi_rounded: '5', bi_overflow: '1', live_after: '100' };
    const changes = { initialLoad: false, liveBefore: 100, inserted: 0, updated: 0, restored: 0, deleted: 0 };
    const base = { scale: 10, rounded: 5, overflow: 1 };
    expect(biCountPlan(last, 10, changes, true)).toEqual({ method: 'carried', base });
    expect(biCountPlan(last, 10, { ...changes, updated: 1 }, true)).toEqual({ method: 'incremental', base });
    expect(biCountPlan(last, 10, { ...changes, deleted: 3, restored: 1 }, true)).toEqual({
      method: 'incremental',
      base,
    });
    const full = { method: 'full', scale: 10 };
    expect(biCountPlan(last, 10, { ...changes, updated: 1 }, false)).toEqual(full); // written outside a run
    expect(biCountPlan(last, 10, { ...changes, liveBefore: 99 }, true)).toEqual(full); // a row gone
    expect(biCountPlan({ ...last, live_after: null }, 10, changes, true)).toEqual(full);
    expect(biCountPlan({ ...last, bi_rounded: null }, 10, changes, true)).toEqual(full); // not counted then
    expect(biCountPlan(last, 12, changes, true)).toEqual({ method: 'full', scale: 12 }); // another scale
    expect(biCountPlan(undefined, 10, changes, true)).toEqual(full); // the first run
    expect(
      biCountPlan(
        { ...last, live_after: '0' },
        10,
        { ...changes, initialLoad: true, liveBefore: 0, inserted: 3 },
        true,
      ),
    ).toEqual(full);
  });

  it('takes a first load’s count of the rows it wrote, whatever the last run counted', () => {
    const written = { scale: 10, rounded: 2, overflow: 1 };
    const first = { initialLoad: true, liveBefore: 0, inserted: 3, updated: 0, restored: 0, deleted: 0 };
    expect(biCountPlan(undefined, 10, first, true, written)).toEqual({ method: 'written', counted: written });
    expect(
      biCountPlan(
        { id: '7', bi_scale: 12, bi_rounded: '5', bi_overflow: '1', live_after: '0' },
        10,
        first,
        false,
        written,
      ),
    ).toEqual({
      method: 'written',
      counted: written,
    });
  });
});
