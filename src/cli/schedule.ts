/**
 * The daemon: a sync on SYNC_SCHEDULE (in SYNC_TIMEZONE), never overlapping itself, a failed run
 * retried (SYNC_RUN_RETRY_DELAYS) and a missed slot caught up at start (SYNC_CATCH_UP); one API
 * client (so the token is reused between runs), a heartbeat file for container healthchecks, and
 * a clean stop on SIGTERM/SIGINT. The runs themselves and their retries: daemon.ts.
 */
import { rm } from 'node:fs/promises';
import { SETTINGS, defineCommand, parseCommand } from './command-line.js';
import { forceExitLater, newApi, openContext, type Context, type Io } from './context.js';
import { DEFAULT_STALE_AFTER_MS } from '../config.js';
import { migrate } from '../db/migrate.js';
import { CronSchedule } from '../schedule/cron-schedule.js';
import { SchemaTooNewError, SyncError, describeError } from '../errors.js';
import { latestDaemonRunSince } from '../load/audit.js';
import {
  assessHealth,
  heartbeatToRead,
  processState,
  readHealth,
  writeHealth,
  type Health,
} from '../observe/health.js';
import { startMetricsServer, type MetricsServer } from '../observe/metrics-server.js';
import { staleRuleFromSchedule, type StaleRule } from '../observe/page/freshness.js';
import { pageHandler, type DaemonView } from '../observe/page/routes.js';
import { isLoopback } from '../observe/page/security.js';
import { RunReporter } from '../observe/run-reporter.js';
import { stripControls } from '../text/safe-text.js';
import { decideCatchUp } from './catch-up.js';
import { Daemon, firstErrorOf } from './daemon.js';
import { attemptsAllowed } from '../schedule/retry-plan.js';

const HEARTBEAT_MS = 15_000;
const SHUTDOWN_MS = 10_000;

export const SCHEDULE = defineCommand({
  name: 'schedule',
  summary: 'the daemon: a sync on SYNC_SCHEDULE in SYNC_TIMEZONE until SIGTERM/SIGINT',
  flags: {
    'run-now': { type: 'boolean', help: 'also run one sync at start (trigger run-now), whatever the history' },
  },
  env: {
    needs: ['DATABASE_URL', 'WINE_API_BASE_URL', 'WINE_API_EMAIL', 'WINE_API_PASSWORD'],
    reads: [
      'SYNC_SCHEDULE',
      'SYNC_TIMEZONE',
      'SYNC_HEALTH_FILE',
      'SYNC_METRICS_PORT',
      'SYNC_METRICS_HOST',
      'SYNC_UI_TOKEN',
      'SYNC_UI_ALLOWED_HOSTS',
      'SYNC_STALE_AFTER',
      'SYNC_RUN_RETRY_DELAYS',
      'SYNC_CATCH_UP',
      ...SETTINGS.API_SETTINGS,
      ...SETTINGS.LOAD_SETTINGS,
      ...SETTINGS.REPORTING,
    ],
  },
});

export const HEALTHCHECK = defineCommand({
  name: 'healthcheck',
  summary: "exit 0 when the daemon's heartbeat (SYNC_HEALTH_FILE) is fresh",
  flags: {},
  env: { needs: [], reads: ["SYNC_HEALTH_FILE (the same as the daemon's)"] },
});

export async function scheduleCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(SCHEDULE, args);
  const ctx = openContext(io, { api: true, database: true });
  const { config, log, pool } = ctx;
  const api = await newApi(ctx);
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
  const reporter = new RunReporter(ctx, { daemon: true, trigger: 'schedule' });
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
  const daemon = new Daemon(ctx, api, reporter, health, beat, schedule);
  const view: DaemonView = {
    nextRunAt: () => daemon.nextRunAt,
    progress: () => daemon.progress,
    runNow: () => daemon.start('page') !== undefined,
    attempts: attemptsAllowed(config.runRetryDelaysMs),
  };
  const server = config.metrics && (await serveMetrics(ctx, reporter, health, view, schedule));
  // Listened for from the moment the daemon says it started: a SIGTERM while catch-up reads the history stops cleanly
  // too.
  const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
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
  if (flags['run-now']) void daemon.start('run-now');
  else if (config.catchUp) await catchUp(ctx, daemon, schedule);
  daemon.arm();

  const signal = await stopSignal;
  health.state = 'stopping';
  forceExitLater(SHUTDOWN_MS);
  log.info({ signal }, 'stopping the daemon');
  clearInterval(heartbeat);
  await daemon.stop(new Error(signal));
  await writing;
  await server?.close();
  await rm(await heartbeatToRead(config.healthFile, config.healthPrivateDirs), { force: true });
  await ctx.close();
  log.info('daemon stopped');
  return 0;
}

/** Catch-up at start (catch-up.ts): one run when the schedule's most recent slot's chain has not ended. */
async function catchUp(ctx: Context, daemon: Daemon, schedule: CronSchedule): Promise<void> {
  const { config, log, pool } = ctx;
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
      void daemon.start('catch-up', { ...decision.retry, firstError: await firstErrorOf(ctx, decision.retry.retryOf) });
  } catch (error) {
    // The catch-up's own run would fail on the same database: that run is what reports it.
    log.warn({ err: error }, 'cannot read the run history for catch-up; catching up');
    void daemon.start('catch-up'); // never rejects, as above
  }
}

/** `healthcheck`: exit 0 when the daemon's heartbeat is fresh and its process alive. */
export async function healthcheckCommand(args: string[], io: Io): Promise<number> {
  parseCommand(HEALTHCHECK, args);
  const { loadConfig } = await import('../config.js');
  const { healthFile, healthPrivateDirs } = loadConfig(io.env, { api: false, database: false });
  const read = await readHealth(await heartbeatToRead(healthFile, healthPrivateDirs));
  if (!read.ok) {
    io.stderr.write(`unhealthy: ${stripControls(read.problem)}\n`);
    return 1;
  }
  const { health } = read;
  const state = processState(health.pid);
  const verdict =
    state === 'ours' || health.refused !== undefined
      ? assessHealth(health, Date.now(), true)
      : {
          healthy: false,
          reason:
            state === 'gone'
              ? `process ${health.pid} is gone`
              : `process ${health.pid} is another user's (EPERM): not this daemon; run healthcheck as the daemon's user`,
        };
  if (!verdict.healthy) {
    io.stderr.write(`unhealthy: ${stripControls(verdict.reason)}\n`);
    return 1;
  }
  io.stdout.write(`healthy: ${stripControls(verdict.reason)}\n`);
  return 0;
}

async function serveMetrics(
  ctx: Context,
  reporter: RunReporter,
  health: Health,
  daemon: DaemonView,
  schedule: CronSchedule,
): Promise<MetricsServer> {
  const { config, log } = ctx;
  const { host, port } = config.metrics!;
  // The page shows the job's history to whoever reaches the port: beyond loopback only behind a token.
  const pageOn = isLoopback(host) || config.ui.token !== undefined;
  if (!pageOn) {
    log.warn(
      { host },
      `status page off: SYNC_METRICS_HOST ${host} is not a loopback address and SYNC_UI_TOKEN is not set; serving /metrics and /healthz only (set SYNC_UI_TOKEN to serve the page)`,
    );
  }
  try {
    const server = await startMetricsServer({
      host,
      port,
      metrics: reporter.metrics!, // the daemon's reporter always has them
      health: () => assessHealth(health, Date.now(), false),
      page: pageOn
        ? pageHandler({
            pool: ctx.pool,
            schema: config.schema,
            timezone: config.timezone,
            token: config.ui.token,
            boundHost: host,
            allowedHosts: config.ui.allowedHosts,
            staleRule: daemonStaleRule(config, schedule),
            runTimeoutMs: config.runTimeoutMs,
            daemon,
            secrets: ctx.secrets,
            log,
          })
        : undefined,
      onError: (err) => log.warn({ err }, 'cannot collect the metrics'),
    });
    log.info(
      {
        metrics: `${server.url}/metrics`,
        healthz: `${server.url}/healthz`,
        ...(pageOn ? { page: `${server.url}/` } : {}),
      },
      'serving metrics',
    );
    return server;
  } catch (error) {
    throw new SyncError(
      'CONFIG',
      `cannot serve metrics on ${host}:${port} (SYNC_METRICS_HOST / SYNC_METRICS_PORT): ${describeError(error)}`,
      { exitCode: 2, cause: error },
    );
  }
}

/** SYNC_STALE_AFTER when set; else the schedule's own rhythm (observe/page/freshness.ts). */
function daemonStaleRule(config: Context['config'], schedule: CronSchedule): () => StaleRule {
  if (config.ui.staleAfterMs !== undefined) {
    const ms = config.ui.staleAfterMs;
    return () => ({
      ms,
      why: `Late when the last successful load is older than SYNC_STALE_AFTER (${Math.round(ms / 60_000)} min).`,
    });
  }
  return () =>
    staleRuleFromSchedule(schedule.nextRuns(2, new Date())) ?? {
      ms: DEFAULT_STALE_AFTER_MS,
      why: 'Late when the last successful load is older than 26 h.',
    };
}
