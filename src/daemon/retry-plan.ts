/**
 * When the daemon tries a failed run again: a pure function of the failure's class, the attempt
 * that failed, SYNC_RUN_RETRY_DELAYS, the upstream's Retry-After and the next scheduled slot.
 *
 * Attempt n (1 for the slot's first run) is followed by delays[n-1]; a Retry-After longer than
 * that delay moves the retry later. A retry that would start at or after the next slot is not
 * planned: that slot's run takes over, and this chain ends.
 */
import type { RetryClass } from './retry-class.js';

export type RetryPlan =
  | { retry: true; at: number; attempt: number }
  | { retry: false; why: 'needs-a-person' | 'retries-spent' | 'next-slot' };

export interface RetryInput {
  class: RetryClass;
  /** The attempt that failed: 1 for a first attempt. */
  attempt: number;
  delaysMs: readonly number[];
  /** The upstream's Retry-After with the failure, in ms from `failedAt`. */
  retryAfterMs?: number | undefined;
  failedAt: number;
  /** The next scheduled slot after the failure (ms since the epoch); null: the schedule never fires again. */
  nextSlot: number | null;
}

export function planRetry(input: RetryInput): RetryPlan {
  if (input.class !== 'retried') return { retry: false, why: 'needs-a-person' };
  const delay = input.delaysMs[input.attempt - 1];
  if (delay === undefined) return { retry: false, why: 'retries-spent' };
  const at = input.failedAt + Math.max(delay, input.retryAfterMs ?? 0);
  if (input.nextSlot !== null && at >= input.nextSlot) return { retry: false, why: 'next-slot' };
  return { retry: true, at, attempt: input.attempt + 1 };
}

/** How many attempts a chain may have: the first and one per delay. */
export function attemptsAllowed(delaysMs: readonly number[]): number {
  return delaysMs.length + 1;
}
