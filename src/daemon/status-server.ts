/**
 * The daemon's metrics and status server: /metrics, /healthz and the status page on
 * SYNC_METRICS_PORT. The page shows the job's history, so beyond loopback it is served only behind
 * SYNC_UI_TOKEN; /metrics and /healthz always are.
 */
import { DEFAULT_STALE_AFTER_MS, type Config } from '../config.js';
import { SyncError, describeError } from '../errors.js';
import type { Job } from '../job/job.js';
import { assessHealth, type Health } from '../observe/health.js';
import { startMetricsServer, type MetricsServer } from '../observe/metrics-server.js';
import { staleRuleFromSchedule, type StaleRule } from '../observe/page/freshness.js';
import { pageHandler, type DaemonView } from '../observe/page/routes.js';
import { isLoopback } from '../observe/page/security.js';
import type { RunReporter } from '../observe/run-reporter.js';
import type { CronSchedule } from '../schedule/cron-schedule.js';
import { attemptsAllowed } from './retry-plan.js';

/** Starts the server; a port that cannot be bound is a configuration error (exit 2) naming the settings. */
export async function serveMetrics(
  job: Job,
  reporter: RunReporter,
  health: Health,
  daemon: DaemonView,
  schedule: CronSchedule,
): Promise<MetricsServer> {
  const { config, log } = job;
  const { host, port } = config.metrics!;
  // The page shows the job's history to whoever reaches the port: beyond loopback only behind a token.
  const pageOn = isLoopback(host) || config.ui.token !== undefined;
  if (!pageOn) {
    log.warn(
      { host },
      `status page off: SYNC_METRICS_HOST ${host} is not a loopback address and SYNC_UI_TOKEN is not set; ` +
        `serving /metrics and /healthz only (set SYNC_UI_TOKEN to serve the page)`,
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
            pool: job.pool,
            schema: config.schema,
            timezone: config.timezone,
            token: config.ui.token,
            boundHost: host,
            allowedHosts: config.ui.allowedHosts,
            staleRule: daemonStaleRule(config, schedule),
            runTimeoutMs: config.runTimeoutMs,
            daemon,
            attempts: attemptsAllowed(config.runRetryDelaysMs),
            secrets: job.secrets,
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
function daemonStaleRule(config: Config, schedule: CronSchedule): () => StaleRule {
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
