/**
 * Catch-up at start (SYNC_CATCH_UP): the daemon looks at the schedule's most recent slot before
 * now and runs once at start (trigger `catch-up`) when no run of the daemon has succeeded since
 * that slot and the slot's chain has not ended.
 *
 * A chain has ended when its newest run failed and the daemon planned no retry (sync_runs.retry_at
 * is null: a failure that needs a person, every retry spent, or the next slot coming first). A
 * failed run with a retry planned, and a run stopped by a signal, killed, or still marked running
 * by a dead process, leave the chain open: the catch-up is then its next attempt, so that it counts
 * against SYNC_RUN_RETRY_DELAYS like a retry. That bounds the catch-ups of a crash loop, and two
 * restarts after a catch-up that succeeded or gave up do nothing.
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
