/**
 * `schedule`, the daemon's command (the daemon itself: src/daemon/), and `healthcheck`, which reads
 * the daemon's heartbeat file.
 */
import { SETTINGS, defineCommand, parseCommand } from './command-line.js';
import type { Io } from './io.js';
import { runDaemon } from '../daemon/run-daemon.js';
import { openJob } from '../job/job.js';
import { assessHealth, heartbeatToRead, processState, readHealth } from '../observe/health.js';
import { stripControls } from '../text/safe-text.js';

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
  env: { needs: [], reads: ['SYNC_HEALTH_FILE'] },
  notes: "SYNC_HEALTH_FILE must be the same as the daemon's (or both unset, as the same user)",
});

export async function scheduleCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(SCHEDULE, args);
  await runDaemon(openJob(io, { api: true, database: true }), { runNow: flags['run-now'] === true });
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
      : {
          healthy: false,
          reason:
            state === 'gone'
              ? `process ${health.pid} is gone`
              : `process ${health.pid} is another user's (EPERM): not this daemon; run healthcheck as the ` +
                `daemon's user`,
        };
  if (!verdict.healthy) {
    io.stderr.write(`unhealthy: ${stripControls(verdict.reason)}\n`);
    return 1;
  }
  io.stdout.write(`healthy: ${stripControls(verdict.reason)}\n`);
  return 0;
}
