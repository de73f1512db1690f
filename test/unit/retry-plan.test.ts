import { describe, expect, it } from 'vitest';
import { decideCatchUp } from '../../src/daemon/catch-up.js';
import { attemptsAllowed, planRetry } from '../../src/daemon/retry-plan.js';
import type { RunRow } from '../../src/load/audit.js';

const MIN = 60_000;
const DELAYS = [5 * MIN, 15 * MIN, 45 * MIN];
const T0 = Date.parse('2026-11-28T03:00:30Z');
const NEXT_DAY = Date.parse('2026-11-29T03:00:00Z');

describe('planRetry', () => {
  it('waits each listed delay in turn, then gives up', () => {
    expect(planRetry({ class: 'retried', attempt: 1, delaysMs: DELAYS, failedAt: T0, nextSlot: NEXT_DAY })).toEqual({
      retry: true,
      at: T0 + 5 * MIN,
      attempt: 2,
    });
    expect(planRetry({ class: 'retried', attempt: 3, delaysMs: DELAYS, failedAt: T0, nextSlot: NEXT_DAY })).toEqual({
      retry: true,
      at: T0 + 45 * MIN,
      attempt: 4,
    });
    expect(planRetry({ class: 'retried', attempt: 4, delaysMs: DELAYS, failedAt: T0, nextSlot: NEXT_DAY })).toEqual({
      retry: false,
      why: 'retries-spent',
    });
    expect(attemptsAllowed(DELAYS)).toBe(4);
  });

  it('does not retry a failure that needs a person, nor anything with retries off', () => {
    expect(
      planRetry({ class: 'needs-a-person', attempt: 1, delaysMs: DELAYS, failedAt: T0, nextSlot: NEXT_DAY }),
    ).toEqual({ retry: false, why: 'needs-a-person' });
    expect(planRetry({ class: 'retried', attempt: 1, delaysMs: [], failedAt: T0, nextSlot: NEXT_DAY })).toEqual({
      retry: false,
      why: 'retries-spent',
    });
  });

  it('moves the retry later for a longer Retry-After, never a shorter one', () => {
    expect(
      planRetry({
        class: 'retried',
        attempt: 1,
        delaysMs: DELAYS,
        retryAfterMs: 20 * MIN,
        failedAt: T0,
        nextSlot: NEXT_DAY,
      }),
    ).toMatchObject({ at: T0 + 20 * MIN });
    expect(
      planRetry({
        class: 'retried',
        attempt: 1,
        delaysMs: DELAYS,
        retryAfterMs: MIN,
        failedAt: T0,
        nextSlot: NEXT_DAY,
      }),
    ).toMatchObject({ at: T0 + 5 * MIN });
  });

  it('leaves the failure to the next slot when the retry would come at or after it', () => {
    expect(planRetry({ class: 'retried', attempt: 1, delaysMs: DELAYS, failedAt: T0, nextSlot: T0 + 5 * MIN })).toEqual(
      { retry: false, why: 'next-slot' },
    );
    expect(
      planRetry({
        class: 'retried',
        attempt: 1,
        delaysMs: DELAYS,
        retryAfterMs: 25 * 3_600_000,
        failedAt: T0,
        nextSlot: NEXT_DAY,
      }),
    ).toEqual({ retry: false, why: 'next-slot' });
    expect(planRetry({ class: 'retried', attempt: 1, delaysMs: DELAYS, failedAt: T0, nextSlot: null })).toMatchObject({
      retry: true,
    });
  });
});

const SLOT = new Date('2026-11-28T03:00:00Z');
function row(over: Partial<RunRow>): RunRow {
  return {
    id: 17,
    status: 'failed',
    attempt: 1,
    retry_of: null,
    retry_at: null,
    trigger: 'schedule',
    ...over,
  } as RunRow;
}

describe('decideCatchUp', () => {
  it('runs a first attempt when the daemon ran nothing since the slot', () => {
    expect(decideCatchUp(SLOT, undefined, 4)).toMatchObject({ run: true, retry: { attempt: 1, retryOf: null } });
  });

  it('does nothing once a run succeeded since the slot', () => {
    expect(decideCatchUp(SLOT, { latest: row({ status: 'succeeded' }), succeededSince: true }, 4)).toMatchObject({
      run: false,
    });
    // A later page run that failed does not undo the slot's success.
    expect(decideCatchUp(SLOT, { latest: row({ status: 'aborted' }), succeededSince: true }, 4)).toMatchObject({
      run: false,
    });
  });

  it('does nothing when the chain ended: a failure that needs a person, or every retry spent', () => {
    expect(
      decideCatchUp(SLOT, { latest: row({ status: 'failed', retry_at: null }), succeededSince: false }, 4),
    ).toMatchObject({ run: false });
    expect(
      decideCatchUp(SLOT, { latest: row({ status: 'aborted', attempt: 4, retry_of: 14 }), succeededSince: false }, 4),
    ).toMatchObject({ run: false });
  });

  it('continues an open chain as its next attempt: a pending retry, a run stopped by a signal or a dead process', () => {
    expect(
      decideCatchUp(
        SLOT,
        { latest: row({ status: 'failed', retry_at: '2026-11-28T03:05:00Z' }), succeededSince: false },
        4,
      ),
    ).toMatchObject({
      run: true,
      retry: { attempt: 2, retryOf: 17 },
    });
    expect(
      decideCatchUp(
        SLOT,
        { latest: row({ id: 18, status: 'aborted', attempt: 2, retry_of: 17 }), succeededSince: false },
        4,
      ),
    ).toMatchObject({
      run: true,
      retry: { attempt: 3, retryOf: 17 },
    });
    expect(decideCatchUp(SLOT, { latest: row({ status: 'running' }), succeededSince: false }, 4)).toMatchObject({
      run: true,
    });
  });
});
