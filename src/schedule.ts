/**
 * The daemon: a sync on SYNC_SCHEDULE (node-cron, in SYNC_TIMEZONE), never overlapping itself,
 * one API client (so the token is reused between runs), a heartbeat file for container
 * healthchecks, and a clean stop on SIGTERM/SIGINT.
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import cron from 'node-cron';
import { forceExitLater, newApi, openContext, parseFlags, type Io } from './context.js';
import { migrate } from './db/migrate.js';
import { LockHeldError } from './errors.js';
import { runSync } from './sync.js';

const HEARTBEAT_MS = 15_000;
/** A heartbeat older than this means the daemon is stuck or gone. */
const STALE_MS = 60_000;
const SHUTDOWN_MS = 10_000;

interface Health {
  pid: number;
  state: 'idle' | 'running' | 'stopping';
  heartbeatAt: string;
  nextRunAt: string | null;
  lastRun: { id: number; status: string; finishedAt: string | null } | null;
}

export async function scheduleCommand(args: string[], io: Io): Promise<number> {
  const flags = parseFlags(args, { 'run-now': { type: 'boolean' } });
  const ctx = openContext(io, { api: true, database: true });
  const { config, log, pool } = ctx;
  const api = newApi(ctx);
  await migrate(pool, config.schema, config.bi);

  let running: Promise<void> | undefined;
  let controller: AbortController | undefined;
  let stopping = false;
  const health: Health = { pid: process.pid, state: 'idle', heartbeatAt: '', nextRunAt: null, lastRun: null };

  const tick = (trigger: 'schedule' | 'manual'): Promise<void> | undefined => {
    if (stopping) return undefined;
    if (running) {
      log.warn({ trigger }, 'the previous sync is still running; this tick is skipped');
      return undefined;
    }
    controller = new AbortController();
    health.state = 'running';
    running = runSync(config, { pool, log, api, signal: controller.signal }, { source: { kind: 'api' }, trigger: 'schedule' })
      .then(({ run }) => {
        health.lastRun = { id: run.id, status: run.status, finishedAt: run.finished_at };
      })
      .catch((error) => {
        if (error instanceof LockHeldError) log.warn('another process holds the sync lock; this tick is skipped');
        else log.error({ err: error }, 'sync could not run');
      })
      .finally(() => {
        running = undefined;
        health.state = stopping ? 'stopping' : 'idle';
        health.nextRunAt = task.getNextRun()?.toISOString() ?? null;
        log.info({ nextRunAt: health.nextRunAt }, 'next sync scheduled');
      });
    return running;
  };

  const task = cron.schedule(config.schedule, () => void tick('schedule'), { timezone: config.timezone, name: 'wine-recon-sync' });
  health.nextRunAt = task.getNextRun()?.toISOString() ?? null;
  log.info({ schedule: config.schedule, timezone: config.timezone, nextRunAt: health.nextRunAt }, 'daemon started');

  const beat = async () => {
    health.heartbeatAt = new Date().toISOString();
    await writeHealth(config.healthFile, health).catch((err) => log.warn({ err }, 'cannot write the health file'));
  };
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
  await rm(config.healthFile, { force: true });
  await ctx.close();
  log.info('daemon stopped');
  return 0;
}

/** `healthcheck`: exit 0 when the daemon's heartbeat is fresh and its process alive. */
export async function healthcheckCommand(_args: string[], io: Io): Promise<number> {
  const { loadConfig } = await import('./config.js');
  const { healthFile } = loadConfig(io.env, { api: false, database: false });
  let health: Health;
  try {
    health = JSON.parse(await readFile(healthFile, 'utf8'));
  } catch {
    io.stderr.write(`unhealthy: no heartbeat at ${healthFile} (is the daemon running?)\n`);
    return 1;
  }
  const age = Date.now() - Date.parse(health.heartbeatAt);
  if (!(age <= STALE_MS) || !processAlive(health.pid)) {
    io.stderr.write(`unhealthy: last heartbeat ${Math.round(age / 1000)} s ago from pid ${health.pid}\n`);
    return 1;
  }
  io.stdout.write(`healthy: ${health.state}, next run ${health.nextRunAt ?? 'none'}, last run ${health.lastRun ? `${health.lastRun.id} ${health.lastRun.status}` : 'none'}\n`);
  return 0;
}

async function writeHealth(path: string, health: Health): Promise<void> {
  // Write then rename, so a reader never sees half a file.
  await writeFile(`${path}.tmp`, JSON.stringify(health));
  await rename(`${path}.tmp`, path);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
