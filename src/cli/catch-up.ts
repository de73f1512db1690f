/**
 * Catch-up at start (SYNC_CATCH_UP): run once when no daemon run has succeeded since the last slot
 * and its chain has not ended. Rule: a catch-up is the chain's next attempt and counts as a retry.
 */
import type { RetryOf, RunRow } from '../load/audit.js';

export type CatchUpDecision = { run: true; retry: RetryOf; why: string } | { run: false; why: string };

export function decideCatchUp(
  slot: Date,
  since: { latest: RunRow; succeededSince: boolean } | undefined,
  attemptsAllowed: number,
): CatchUpDecision {
  const at = slot.toISOString();
  if (since === undefined)
    return { run: true, retry: { attempt: 1, retryOf: null }, why: `no run of the daemon since the slot of ${at}` };
  const { latest } = since;
  if (since.succeededSince) return { run: false, why: `a run succeeded since the slot of ${at}` };
  if (latest.status === 'failed' && latest.retry_at === null) {
    return {
      run: false,
      why: `run ${latest.id} failed after the slot of ${at} and no retry was planned (the chain ended)`,
    };
  }
  if (latest.attempt >= attemptsAllowed) {
    return {
      run: false,
      why: `run ${latest.id} was attempt ${latest.attempt} of ${attemptsAllowed}: every retry is spent`,
    };
  }
  return {
    run: true,
    retry: { attempt: latest.attempt + 1, retryOf: latest.retry_of ?? latest.id },
    why: `run ${latest.id} ${latest.status} after the slot of ${at} and its chain has not ended`,
  };
}
