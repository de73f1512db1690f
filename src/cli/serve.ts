/**
 * `serve`: the status page alone, for sites that start `run` from cron or a Kubernetes CronJob.
 * Reads the database only (plain SELECTs); never takes the run lock, so it works while a run holds it.
 */
import { defineCommand, parseCommand } from './command-line.js';
import type { Io } from './io.js';
import { openJob, type Job } from '../job/job.js';
import { forceExitLater, stopSignal } from '../job/shutdown.js';
import { ConfigError, SyncError, describeError } from '../errors.js';
import { DEFAULT_STALE_AFTER_MS } from '../config.js';
import { startMetricsServer } from '../observe/metrics-server.js';
import { pageHandler, type PageHandler } from '../observe/page/routes.js';
import { PageQueries } from '../observe/page/queries.js';
import { isLoopback } from '../observe/page/security.js';
import { roughDuration } from '../observe/page/format.js';
import { attemptsAllowed } from '../daemon/retry-plan.js';

/** The page's port when --port is not given (the daemon serves it on SYNC_METRICS_PORT instead). */
export const DEFAULT_SERVE_PORT = 9465;

export const SERVE = defineCommand({
  name: 'serve',
  summary: 'the status page alone (history, plots, rejects), read-only, for sites that run from cron',
  flags: {
    port: {
      type: 'string',
      value: 'P',
      default: String(DEFAULT_SERVE_PORT),
      integer: { min: 0, max: 65535 },
      help: 'the port to listen on (0: any free one)',
    },
    host: {
      type: 'string',
      value: 'H',
      default: '127.0.0.1',
      help: 'the interface to listen on; beyond loopback SYNC_UI_TOKEN is required',
    },
  },
  env: {
    needs: ['DATABASE_URL'],
    reads: [
      'SYNC_DB_SCHEMA',
      'SYNC_TIMEZONE',
      'SYNC_UI_TOKEN',
      'SYNC_UI_ALLOWED_HOSTS',
      'SYNC_STALE_AFTER',
      'SYNC_RUN_TIMEOUT_MS',
      'SYNC_RUN_RETRY_DELAYS',
      'LOG_LEVEL',
    ],
  },
  notes:
    'SYNC_UI_TOKEN (or SYNC_UI_TOKEN_FILE) guards every page: Authorization: Bearer <token>, or Basic auth with the token as the password.',
});

/** The page `serve` and the demo serve; `boundHost` is the address it listens on (its own name for the Host check). */
export function statusPage(job: Job, boundHost: string): PageHandler {
  const { config } = job;
  const staleMs = config.ui.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  const setting = `SYNC_STALE_AFTER${config.ui.staleAfterMs === undefined ? ', default' : ''}`;
  const why = `Late when the last successful load is older than ${roughDuration(staleMs)} (${setting}).`;
  return pageHandler({
    pool: job.pool,
    schema: config.schema,
    timezone: config.timezone,
    token: config.ui.token,
    boundHost,
    allowedHosts: config.ui.allowedHosts,
    staleRule: () => ({ ms: staleMs, why }),
    runTimeoutMs: config.runTimeoutMs,
    attempts: attemptsAllowed(config.runRetryDelaysMs),
    secrets: job.secrets,
    log: job.log,
  });
}

export async function serveCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(SERVE, args);
  const job = openJob(io, { api: false, database: true });
  const { config, log } = job;
  try {
    if (!isLoopback(flags.host) && config.ui.token === undefined) {
      throw new ConfigError(
        `SYNC_UI_TOKEN: is not set, and --host ${flags.host} is not a loopback address: the page would ` +
          `show the job's history to anyone who reaches it. Set SYNC_UI_TOKEN (or SYNC_UI_TOKEN_FILE), or ` +
          `serve on 127.0.0.1`,
      );
    }
    if (!(await new PageQueries(job.pool, config.schema).schemaReady())) {
      throw new ConfigError(
        `SYNC_DB_SCHEMA: the schema "${config.schema}" has no sync_runs table; run \`wine-recon-sync ` +
          `migrate\` first (serve only reads)`,
      );
    }
    let server;
    try {
      server = await startMetricsServer({
        host: flags.host,
        port: Number(flags.port),
        page: statusPage(job, flags.host),
        onError: (err) => log.warn({ err }, 'status page failed'),
      });
    } catch (error) {
      throw new SyncError(
        'CONFIG',
        `cannot serve the status page on ${flags.host}:${flags.port} (--host / --port): ${describeError(error)}`,
        { exitCode: 2, cause: error },
      );
    }
    log.info(
      { page: `${server.url}/`, auth: config.ui.token === undefined ? 'none (loopback only)' : 'SYNC_UI_TOKEN' },
      'serving the status page',
    );
    const signal = await stopSignal();
    forceExitLater(10_000);
    log.info({ signal }, 'stopping the status page');
    await server.close();
    return 0;
  } finally {
    await job.close();
  }
}
