/**
 * The daemon's runs: one at a time, on the schedule's slots, retried after a failure whose cause
 * may pass (SYNC_RUN_RETRY_DELAYS), never past the next slot. Rule: slots come only from
 * cron-schedule.ts, the reading catch-up and the page use.
 */
import type { Job } from '../job/job.js';
import type { CronSchedule } from '../schedule/cron-schedule.js';
import { LockHeldError, describeError } from '../errors.js';
import type { WineApi } from '../extract/http/api.js';
import { findRun, setRetryAt, type RetryOf, type RunRow, type Trigger } from '../load/audit.js';
import type { Health } from '../observe/health.js';
import { NOT_RETRIED, type ChainNotice } from '../observe/notify.js';
import type { RunReporter } from '../observe/run-reporter.js';
import { retryAfterOf, retryRule } from './retry-class.js';
import { runSync } from '../run/sync.js';
import { attemptsAllowed, planRetry } from './retry-plan.js';

/** Longest single wait of the timer: then it looks at the clock again. */
const MAX_WAIT_MS = 60_000;

/** A chain's next attempt: its number, the chain's first recorded run, and that run's error. */
interface Attempt extends RetryOf {
  firstError: string | null;
}

interface PendingRetry extends Attempt {
  at: Date;
  /** The failed run whose row promises this retry (sync_runs.retry_at), if it had a row. */
  failedRunId: number | undefined;
}

const FIRST: Attempt = { attempt: 1, retryOf: null, firstError: null };

export class Daemon {
  private running: Promise<void> | undefined;
  private controller: AbortController | undefined;
  private stopping = false;
  private timer: NodeJS.Timeout | undefined;
  private nextSlot: Date | null;
  private pending: PendingRetry | undefined;
  /** The running run's records and bytes so far (the status page). */
  progress: { received: number; bytes: number } | undefined;

  constructor(
    private readonly job: Job,
    private readonly api: WineApi | undefined,
    private readonly reporter: RunReporter,
    private readonly health: Health,
    /** Writes the heartbeat file now (the health changed). */
    private readonly beat: () => Promise<void>,
    private readonly schedule: CronSchedule,
  ) {
    this.nextSlot = schedule.next(new Date());
    this.showSchedule();
  }

  get nextRunAt(): string | null {
    return this.health.nextRunAt;
  }

  /** Waits for the slots (and retries) from now on. */
  arm(): void {
    clearTimeout(this.timer);
    if (this.stopping) return;
    const due = Math.min(this.nextSlot?.getTime() ?? Infinity, this.pending?.at.getTime() ?? Infinity);
    if (due === Infinity) return;
    this.timer = setTimeout(() => this.fire(), Math.min(Math.max(0, due - Date.now()), MAX_WAIT_MS));
  }

  /**
   * A run now (a slot, the page's button, --run-now, catch-up, a retry); undefined when the
   * daemon is stopping or a run is in progress (the tick is skipped and logged).
   */
  start(trigger: Trigger, attempt: Attempt = FIRST): Promise<void> | undefined {
    const { config, log, pool, secrets } = this.job;
    if (this.stopping) return undefined;
    if (this.running) {
      log.warn({ trigger }, 'the previous sync is still running; this tick is skipped');
      return undefined;
    }
    // A new first attempt takes over from a pending retry: its chain ends here.
    if (trigger !== 'retry' && attempt.attempt === 1) this.dropPending(`a ${trigger} run takes over`);
    const controller = (this.controller = new AbortController());
    this.health.state = 'running';
    this.health.runStartedAt = new Date().toISOString();
    void this.beat(); // never rejects (a failed write is logged); writes queue one behind the other
    const deps = {
      pool,
      log,
      api: this.api,
      secrets,
      signal: controller.signal,
      onProgress: (p: { received: number; bytes: number }) => (this.progress = p),
      onRunStarted: this.reporter.runStarted.bind(this.reporter),
    };
    const request = {
      source: { kind: 'api' as const },
      trigger,
      retry: { attempt: attempt.attempt, retryOf: attempt.retryOf },
    };
    this.running = runSync(config, deps, request)
      .then(
        (outcome) => this.ended(attempt, { outcome }, outcome.run, outcome.failure),
        (error: unknown) => this.ended(attempt, { error }, undefined, error),
      )
      .catch((error: unknown) => log.error({ err: error }, 'the end of a run could not be recorded'))
      .finally(async () => {
        this.running = undefined;
        this.progress = undefined;
        this.health.runStartedAt = null;
        this.health.state = this.stopping ? 'stopping' : 'idle';
        this.showSchedule();
        if (this.reporter.latestLoad !== undefined) this.health.lastSuccess = this.reporter.latestLoad;
        this.arm();
        if (!this.stopping) await this.beat();
        log.info({ nextRunAt: this.health.nextRunAt, retryAt: this.pending?.at.toISOString() }, 'next sync scheduled');
      });
    return this.running;
  }

  /** SIGTERM/SIGINT: no new run, a pending retry left to catch-up at the next start, the run in progress aborted. */
  async stop(reason: Error): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    this.pending = undefined;
    if (this.running) {
      this.controller?.abort(reason);
      await this.running;
    }
  }

  private fire(): void {
    const now = Date.now();
    if (this.nextSlot !== null && now >= this.nextSlot.getTime()) {
      this.nextSlot = this.schedule.next(new Date(now));
      this.showSchedule();
      void this.start('schedule'); // never rejects: a run's end is caught and logged; stop() awaits it
    } else if (this.pending !== undefined && now >= this.pending.at.getTime()) {
      const retry = this.pending;
      // A retry that finds a run in progress (a new first attempt drops it first, so only a clock
      // set back could) is dropped, not stacked.
      if (this.running) this.dropPending('a run is in progress');
      else {
        this.pending = undefined;
        void this.start('retry', retry); // never rejects, as above
      }
    }
    this.arm();
  }

  /** After a run: plan the retry of a failure, tell the reporter (metrics, notification), keep the health. */
  private async ended(
    attempt: Attempt,
    result: Parameters<RunReporter['finished']>[0],
    run: RunRow | undefined,
    failure: unknown,
  ): Promise<void> {
    const { config, log, pool } = this.job;
    if (!run && failure instanceof LockHeldError) {
      log.warn('another process holds the sync lock; this tick is skipped');
      await this.reporter.finished(result);
      return;
    }
    if (!run) log.error({ err: failure }, 'sync could not run');
    const attempts = attemptsAllowed(config.runRetryDelaysMs);
    const errorText = run ? run.error : describeError(failure);
    const chain: ChainNotice = { attempt: attempt.attempt, attempts, retryAt: null, firstError: attempt.firstError };
    if (run?.status !== 'succeeded' && !this.stopping) {
      const rule = retryRule(failure);
      const plan = planRetry({
        class: rule.class,
        attempt: attempt.attempt,
        delaysMs: config.runRetryDelaysMs,
        retryAfterMs: retryAfterOf(failure),
        failedAt: Date.now(),
        nextSlot: this.nextSlot?.getTime() ?? null,
      });
      if (plan.retry) {
        chain.retryAt = new Date(plan.at);
        this.pending = {
          at: chain.retryAt,
          attempt: plan.attempt,
          // A run whose row could not be finished (the database lost mid-run, a failover) still started: its id links
          // the chain.
          retryOf: attempt.retryOf ?? run?.id ?? (this.reporter.current ? Number(this.reporter.current.id) : null),
          firstError: attempt.firstError ?? errorText,
          failedRunId: run?.id,
        };
        log.warn(
          { attempt: attempt.attempt, attempts, retryAt: chain.retryAt.toISOString(), why: rule.why },
          'the run failed for a reason that may pass; it will be tried again',
        );
      } else {
        chain.ended = plan.why;
        log.warn(
          { attempt: attempt.attempt, attempts, notRetried: plan.why, why: rule.why },
          `the run failed and is not retried (${plan.why})`,
        );
      }
      if (run)
        await setRetryAt(pool, run.id, chain.retryAt).catch((err: unknown) =>
          log.warn({ err }, 'cannot record the retry plan in sync_runs'),
        );
    }
    if (run) {
      this.health.lastRun = {
        id: run.id,
        status: run.status,
        finishedAt: run.finished_at,
        attempt: attempt.attempt,
        attempts,
        retryAt: chain.retryAt?.toISOString() ?? null,
        ...(chain.ended ? { notRetried: NOT_RETRIED[chain.ended] } : {}),
      };
    }
    await this.reporter.finished(result, chain);
  }

  /** Forgets a pending retry, and says so in the failed run's row. */
  private dropPending(why: string): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = undefined;
    this.job.log.info({ retryAt: pending.at.toISOString(), why }, 'the pending retry is dropped');
    this.reporter.metrics?.setRetry(null);
    if (this.health.lastRun?.retryAt) this.health.lastRun.retryAt = null;
    // Best effort, not awaited: the retry is already dropped in memory, which is what this process acts on.
    if (pending.failedRunId !== undefined)
      void setRetryAt(this.job.pool, pending.failedRunId, null).catch(() => undefined);
  }

  private showSchedule(): void {
    this.health.nextRunAt = this.nextSlot?.toISOString() ?? null;
  }
}

/** The error of a chain's first run, for the notification of a later attempt (null when unknown). */
export async function firstErrorOf(job: Job, retryOf: number | null): Promise<string | null> {
  if (retryOf === null) return null;
  return (await findRun(job.pool, String(retryOf)).catch(() => undefined))?.error ?? null;
}
