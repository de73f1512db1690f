/**
 * The daemon: a sync on SYNC_SCHEDULE (node-cron, in SYNC_TIMEZONE), never overlapping itself,
 * one API client (so the token is reused between runs), a heartbeat file for container
 * healthchecks, and a clean stop on SIGTERM/SIGINT.
 */
import { rm } from 'node:fs/promises';
import cron from 'node-cron';
import { SETTINGS, defineCommand, parseCommand } from './command-line.js';
import { forceExitLater, newApi, openContext, type Context, type Io } from './context.js';
import { DEFAULT_STALE_AFTER_MS } from '../config.js';
import { migrate } from '../db/migrate.js';
import { LockHeldError, SchemaTooNewError, SyncError, describeError } from '../errors.js';
import { assessHealth, heartbeatToRead, processState, readHealth, writeHealth, type Health } from '../observe/health.js';
import { startMetricsServer, type MetricsServer } from '../observe/metrics-server.js';
import { staleRuleFromSchedule, type StaleRule } from '../observe/page/freshness.js';
import { pageHandler, type DaemonView } from '../observe/page/routes.js';
import { isLoopback } from '../observe/page/security.js';
import { RunReporter } from '../observe/run-reporter.js';
import { runSync } from '../run/sync.js';
import { stripControls } from '../safe-text.js';

const HEARTBEAT_MS = 15_000;
const SHUTDOWN_MS = 10_000;

export const SCHEDULE = defineCommand({
  name: 'schedule',
  summary: 'the daemon: a sync on SYNC_SCHEDULE in SYNC_TIMEZONE until SIGTERM/SIGINT',
  flags: {
    'run-now': { type: 'boolean', help: 'also run one sync at start' },
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
  env: { needs: [], reads: ['SYNC_HEALTH_FILE (the same as the daemon\'s)'] },
});

export async function scheduleCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(SCHEDULE, args);
  const ctx = openContext(io, { api: true, database: true });
  const { config, log, pool, secrets } = ctx;
  const api = await newApi(ctx);
  try {
    await migrate(pool, config.schema, config.bi);
  } catch (error) {
    // `healthcheck` then says why the daemon is not running, rather than only that its process is gone.
    if (error instanceof SchemaTooNewError) {
      const refused: Health = { pid: process.pid, state: 'refused', refused: error.message, heartbeatAt: new Date().toISOString(), nextRunAt: null, lastRun: null, runStartedAt: null, runTimeoutMs: config.runTimeoutMs };
      await writeHealth(config.healthFile, refused, config.healthPrivateDirs).catch((err) => log.warn({ err }, 'cannot write the health file'));
    }
    throw error;
  }

  let running: Promise<void> | undefined;
  let controller: AbortController | undefined;
  let stopping = false;
  const health: Health = { pid: process.pid, state: 'idle', heartbeatAt: '', nextRunAt: null, lastRun: null, runStartedAt: null, runTimeoutMs: config.runTimeoutMs };
  const reporter = new RunReporter(ctx, { daemon: true, trigger: 'schedule' });
  await reporter.start();
  if (reporter.latestLoad !== undefined) health.lastSuccess = reporter.latestLoad;
  let progress: { received: number; bytes: number } | undefined;
  const daemon: DaemonView = {
    nextRunAt: () => health.nextRunAt,
    progress: () => progress,
    // What a cron tick does, so that the lock and the audit row work alike.
    runNow: () => tick('manual') !== undefined,
  };
  const server = config.metrics && (await serveMetrics(ctx, reporter, health, daemon));

  // The heartbeat file is what `healthcheck` reads: rewritten every HEARTBEAT_MS and whenever a run
  // starts or ends, so that it agrees with /healthz right after a run instead of up to 15 s later.
  // One write at a time (they share the temporary file), each with the state at its turn.
  let writing = Promise.resolve();
  const beat = (): Promise<void> =>
    (writing = writing.then(async () => {
      health.heartbeatAt = new Date().toISOString();
      await writeHealth(config.healthFile, health, config.healthPrivateDirs).catch((err) => log.warn({ err }, 'cannot write the health file'));
    }));

  const tick = (trigger: 'schedule' | 'manual'): Promise<void> | undefined => {
    if (stopping) return undefined;
    if (running) {
      log.warn({ trigger }, 'the previous sync is still running; this tick is skipped');
      return undefined;
    }
    controller = new AbortController();
    health.state = 'running';
    health.runStartedAt = new Date().toISOString();
    reporter.runStarted();
    void beat();
    running = runSync(config, { pool, log, api, secrets, signal: controller.signal, onProgress: (p) => (progress = p) }, { source: { kind: 'api' }, trigger: 'schedule' })
      .then(async (outcome) => {
        const { run } = outcome;
        health.lastRun = { id: run.id, status: run.status, finishedAt: run.finished_at };
        await reporter.finished({ outcome });
      })
      .catch(async (error) => {
        if (error instanceof LockHeldError) log.warn('another process holds the sync lock; this tick is skipped');
        else log.error({ err: error }, 'sync could not run');
        await reporter.finished({ error });
      })
      .finally(async () => {
        running = undefined;
        progress = undefined;
        health.runStartedAt = null;
        health.state = stopping ? 'stopping' : 'idle';
        health.nextRunAt = task.getNextRun()?.toISOString() ?? null;
        if (reporter.latestLoad !== undefined) health.lastSuccess = reporter.latestLoad;
        if (!stopping) await beat();
        log.info({ nextRunAt: health.nextRunAt }, 'next sync scheduled');
      });
    return running;
  };

  const task = cron.schedule(config.schedule, () => void tick('schedule'), { timezone: config.timezone, name: 'wine-recon-sync' });
  health.nextRunAt = task.getNextRun()?.toISOString() ?? null;
  log.info({ schedule: config.schedule, timezone: config.timezone, nextRunAt: health.nextRunAt }, 'daemon started');

  await beat();
  const heartbeat = setInterval(() => void beat(), HEARTBEAT_MS);
  if (flags['run-now']) void tick('manual');

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  stopping = true;
  health.state = 'stopping';
  forceExitLater(SHUTDOWN_MS);
  log.info({ signal, running: running !== undefined }, 'stopping the daemon');
  await task.stop();
  await task.destroy();
  clearInterval(heartbeat);
  if (running) {
    controller?.abort(new Error(signal));
    await running;
  }
  await writing;
  await server?.close();
  await rm(await heartbeatToRead(config.healthFile, config.healthPrivateDirs), { force: true });
  await ctx.close();
  log.info('daemon stopped');
  return 0;
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
      : { healthy: false, reason: state === 'gone' ? `process ${health.pid} is gone` : `process ${health.pid} is another user's (EPERM): not this daemon; run healthcheck as the daemon's user` };
  if (!verdict.healthy) {
    io.stderr.write(`unhealthy: ${stripControls(verdict.reason)}\n`);
    return 1;
  }
  io.stdout.write(`healthy: ${stripControls(verdict.reason)}\n`);
  return 0;
}

async function serveMetrics(ctx: Context, reporter: RunReporter, health: Health, daemon: DaemonView): Promise<MetricsServer> {
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
        ? pageHandler({ pool: ctx.pool, schema: config.schema, timezone: config.timezone, token: config.ui.token, boundHost: host, allowedHosts: config.ui.allowedHosts, staleRule: daemonStaleRule(config), runTimeoutMs: config.runTimeoutMs, daemon, secrets: ctx.secrets, log })
        : undefined,
      onError: (err) => log.warn({ err }, 'cannot collect the metrics'),
    });
    log.info({ metrics: `${server.url}/metrics`, healthz: `${server.url}/healthz`, ...(pageOn ? { page: `${server.url}/` } : {}) }, 'serving metrics');
    return server;
  } catch (error) {
    throw new SyncError('CONFIG', `cannot serve metrics on ${host}:${port} (SYNC_METRICS_HOST / SYNC_METRICS_PORT): ${describeError(error)}`, { exitCode: 2, cause: error });
  }
}

/** SYNC_STALE_AFTER when set; else the schedule's own rhythm (observe/page/freshness.ts). */
function daemonStaleRule(config: Context['config']): () => StaleRule {
  if (config.ui.staleAfterMs !== undefined) {
    const ms = config.ui.staleAfterMs;
    return () => ({ ms, why: `Late when the last successful load is older than SYNC_STALE_AFTER (${Math.round(ms / 60_000)} min).` });
  }
  const probe = cron.createTask(config.schedule, () => undefined, { timezone: config.timezone });
  return () =>
    staleRuleFromSchedule(probe.getNextRuns(2)) ?? { ms: DEFAULT_STALE_AFTER_MS, why: 'Late when the last successful load is older than 26 h.' };
}
