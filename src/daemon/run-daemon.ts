/**
 * The daemon from start to stop: a sync on SYNC_SCHEDULE (in SYNC_TIMEZONE), never overlapping
 * itself, a failed run retried (SYNC_RUN_RETRY_DELAYS) and a missed slot caught up at start
 * (SYNC_CATCH_UP); one API client (so the token is reused between runs), a heartbeat file for
 * container healthchecks, and a clean stop on SIGTERM/SIGINT. The runs themselves: daemon.ts.
 */
import { rm } from 'node:fs/promises';
import { migrate } from '../db/migrate.js';
import { SchemaTooNewError } from '../errors.js';
import type { Job } from '../job/job.js';
import { forceExitLater, stopSignal } from '../job/shutdown.js';
import { heartbeatToRead, writeHealth, type Health } from '../observe/health.js';
import type { DaemonView } from '../observe/page/routes.js';
import { RunReporter } from '../observe/run-reporter.js';
import { CronSchedule } from '../schedule/cron-schedule.js';
import { catchUp } from './catch-up.js';
import { Daemon } from './daemon.js';
import { serveMetrics } from './status-server.js';

const HEARTBEAT_MS = 15_000;
const SHUTDOWN_MS = 10_000;

export interface DaemonOptions {
  /** One sync at start (trigger run-now), whatever the history; catch-up is then not asked. */
  runNow: boolean;
}

/** Runs the daemon of `job` until SIGTERM/SIGINT; closes the job when stopped. */
export async function runDaemon(job: Job, options: DaemonOptions): Promise<void> {
  const { config, log, pool } = job;
  const api = await job.api();
  try {
    await migrate(pool, config.schema, config.bi);
  } catch (error) {
    // `healthcheck` then says why the daemon is not running, rather than only that its process is gone.
    if (error instanceof SchemaTooNewError) {
      const refused: Health = {
        pid: process.pid,
        state: 'refused',
        refused: error.message,
        heartbeatAt: new Date().toISOString(),
        nextRunAt: null,
        lastRun: null,
        runStartedAt: null,
        runTimeoutMs: config.runTimeoutMs,
      };
      await writeHealth(config.healthFile, refused, config.healthPrivateDirs).catch((err) =>
        log.warn({ err }, 'cannot write the health file'),
      );
    }
    throw error;
  }

  const health: Health = {
    pid: process.pid,
    state: 'idle',
    heartbeatAt: '',
    nextRunAt: null,
    lastRun: null,
    runStartedAt: null,
    runTimeoutMs: config.runTimeoutMs,
  };
  const reporter = new RunReporter(job, { daemon: true, trigger: 'schedule' });
  await reporter.start();
  if (reporter.latestLoad !== undefined) health.lastSuccess = reporter.latestLoad;

  // The heartbeat file is what `healthcheck` reads: rewritten every HEARTBEAT_MS and whenever a run
  // starts or ends, so that it agrees with /healthz right after a run instead of up to 15 s later.
  // One write at a time (they share the temporary file), each with the state at its turn.
  let writing = Promise.resolve();
  const beat = (): Promise<void> =>
    (writing = writing.then(async () => {
      health.heartbeatAt = new Date().toISOString();
      await writeHealth(config.healthFile, health, config.healthPrivateDirs).catch((err) =>
        log.warn({ err }, 'cannot write the health file'),
      );
    }));

  const schedule = new CronSchedule(config.schedule, config.timezone);
  const daemon = new Daemon(job, api, reporter, health, beat, schedule);
  const view: DaemonView = {
    nextRunAt: () => daemon.nextRunAt,
    progress: () => daemon.progress,
    runNow: () => daemon.start('page') !== undefined,
  };
  const server = config.metrics && (await serveMetrics(job, reporter, health, view, schedule));
  // Listened for from the moment the daemon says it started: a SIGTERM while catch-up reads the
  // history stops cleanly too.
  const stopped = stopSignal();
  log.info(
    {
      schedule: config.schedule,
      timezone: config.timezone,
      nextRunAt: health.nextRunAt,
      retryDelaysMs: config.runRetryDelaysMs,
    },
    'daemon started',
  );

  await beat();
  // beat() never rejects (a failed write is logged); writes queue one behind the other.
  const heartbeat = setInterval(() => void beat(), HEARTBEAT_MS);
  // start() never rejects (a run's end is caught and logged), and stop() awaits the run in progress.
  if (options.runNow) void daemon.start('run-now');
  else if (config.catchUp) await catchUp(job, daemon, schedule);
  daemon.arm();

  const signal = await stopped;
  health.state = 'stopping';
  forceExitLater(SHUTDOWN_MS);
  log.info({ signal }, 'stopping the daemon');
  clearInterval(heartbeat);
  await daemon.stop(new Error(signal));
  await writing;
  await server?.close();
  await rm(await heartbeatToRead(config.healthFile, config.healthPrivateDirs), { force: true });
  await job.close();
  log.info('daemon stopped');
}
