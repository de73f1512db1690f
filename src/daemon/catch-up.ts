/**
 * Catch-up at start (SYNC_CATCH_UP): run once when no daemon run has succeeded since the last slot
 * and its chain has not ended. Rule: a catch-up is the chain's next attempt and counts as a retry.
 */
import type { CronSchedule } from '../schedule/cron-schedule.js';
import type { Job } from '../job/job.js';
import { latestDaemonRunSince, type RetryOf, type RunRow } from '../load/audit.js';
import { firstErrorOf, type Daemon } from './daemon.js';
import { attemptsAllowed } from './retry-plan.js';

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

/** Catch-up at start: one run when the schedule's most recent slot's chain has not ended. */
export async function catchUp(job: Job, daemon: Daemon, schedule: CronSchedule): Promise<void> {
  const { config, log, pool } = job;
  const slot = schedule.previous(new Date());
  if (slot === null) return;
  try {
    const decision = decideCatchUp(
      slot,
      await latestDaemonRunSince(pool, slot),
      attemptsAllowed(config.runRetryDelaysMs),
    );
    log.info(
      { slot: slot.toISOString(), catchUp: decision.run, why: decision.why },
      decision.run ? 'catching up the last scheduled run' : 'no catch-up needed',
    );
    // Not awaited: the daemon arms its timer meanwhile. start() never rejects (a run's end is caught and logged), and
    // stop() awaits the run in progress.
    if (decision.run)
      void daemon.start('catch-up', { ...decision.retry, firstError: await firstErrorOf(job, decision.retry.retryOf) });
  } catch (error) {
    // The catch-up's own run would fail on the same database: that run is what reports it.
    log.warn({ err: error }, 'cannot read the run history for catch-up; catching up');
    void daemon.start('catch-up'); // never rejects, as above
  }
}
