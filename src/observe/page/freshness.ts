/**
 * Fresh, late or failing: the page's first answer. Failing: the newest finished run did not
 * succeed. Late: the last successful load is older than allowed (none at all is late too).
 * Fresh: neither. How old is too old comes from the schedule when the daemon serves the page
 * (the gap between two scheduled runs, plus as much again up to an hour for the run itself), else
 * from SYNC_STALE_AFTER (default 26 h: a daily run and two hours to spare).
 */
import { roughDuration } from './format.js';

export type FreshnessState = 'fresh' | 'late' | 'failing';

export interface StaleRule {
  ms: number;
  /** Where the limit comes from, in words. */
  why: string;
}

export interface Freshness {
  state: FreshnessState;
  headline: string;
}

export function staleRuleFromSchedule(nextRuns: Date[]): StaleRule | undefined {
  if (nextRuns.length < 2) return undefined;
  const gap = nextRuns[1]!.getTime() - nextRuns[0]!.getTime();
  if (!(gap > 0)) return undefined;
  const ms = gap + Math.min(gap, 3_600_000);
  return {
    ms,
    why:
      `The schedule runs every ${roughDuration(gap)}: ` +
      `late when the last successful load is older than ${roughDuration(ms)}.`,
  };
}

export function judgeFreshness(input: {
  now: number;
  lastLoadAt: Date | undefined;
  /** attempt and retry_at: the daemon's chain (sync_runs), when the run is a retry or is to be retried. */
  latest: { id: string; status: string; attempt?: number; retry_at?: Date | null } | undefined;
  rule: StaleRule;
  /** Attempts a chain may have (1 + SYNC_RUN_RETRY_DELAYS), when the page's server knows them. */
  attempts?: number | undefined;
}): Freshness {
  const { now, lastLoadAt, latest, rule } = input;
  if (latest !== undefined && latest.status !== 'succeeded') {
    const of = input.attempts === undefined ? '' : ` of ${input.attempts}`;
    const attempt =
      latest.attempt !== undefined && (latest.attempt > 1 || latest.retry_at)
        ? ` (attempt ${latest.attempt}${of})`
        : '';
    // A retry time already past: the daemon stopped before it (catch-up at its start takes it up).
    const retry =
      latest.retry_at && latest.retry_at.getTime() > now ? `, retrying at ${latest.retry_at.toISOString()}` : '';
    return { state: 'failing', headline: `Failing: the last run (${latest.id}) ${latest.status}${attempt}${retry}` };
  }
  if (lastLoadAt === undefined) return { state: 'late', headline: 'Late: no successful load yet' };
  const age = now - lastLoadAt.getTime();
  if (age > rule.ms) return { state: 'late', headline: `Late: the last successful load is ${roughDuration(age)} old` };
  return { state: 'fresh', headline: `Fresh: the data was loaded ${roughDuration(age)} ago` };
}
