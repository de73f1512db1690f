/**
 * The command line: parses arguments, builds the context (config, logger, pool) and maps
 * outcomes to exit codes: 0 succeeded, 1 run failed, 2 usage/configuration, 3 lock held.
 */
import type { ConfigNeeds } from './config.js';
import { forceExitLater, newApi, openContext, parseFlags, type Io } from './context.js';
import { migrate } from './db/migrate.js';
import { SyncError, UsageError, describeError } from './errors.js';
import { recentRuns, type RunRow } from './load/audit.js';
import { formatRunsTable, formatSummary } from './report.js';
import { RunReporter } from './reporting.js';
import { runSync, type SyncOutcome, type SyncRequest } from './sync.js';

const USAGE = `usage: wine-recon-sync <command> [options]

commands:
  run [--dry-run] [--allow-mass-delete] [--accept-schema-change] [--from-file F] [--json]
                                                                   one sync now
  schedule [--run-now]                                             the daemon: a sync on SYNC_SCHEDULE
  replay --run ID [--dry-run] [--allow-mass-delete] [--accept-schema-change] [--json]
                                                                   load an archived payload again
  migrate                                                          apply pending migrations
  status [--limit N] [--json]                                      recent runs, newest first
  demo                                                             the whole job on embedded defaults
  simulate [--port P] [--host H] [--records N] [--seed S] [--change N]  serve the simulated upstream API
  healthcheck                                                      exit 0 when the daemon is healthy

exit codes: 0 succeeded, 1 run failed, 2 usage or configuration error, 3 another run holds the lock`;

export async function main(argv: string[], io: Io = { env: process.env, stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await runCommand(rest, io);
      case 'replay':
        return await replayCommand(rest, io);
      case 'migrate':
        return await migrateCommand(rest, io);
      case 'status':
        return await statusCommand(rest, io);
      case 'schedule':
        return await (await import('./schedule.js')).scheduleCommand(rest, io);
      case 'healthcheck':
        return await (await import('./schedule.js')).healthcheckCommand(rest, io);
      case 'demo':
        return await (await import('./demo.js')).demoCommand(rest, io);
      case 'simulate':
        return await (await import('./simulator/command.js')).simulateCommand(rest, io);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.stdout.write(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
    }
  } catch (error) {
    io.stderr.write(`Error: ${describeError(error)}\n`);
    if (io.env.DEBUG && error instanceof Error) io.stderr.write(`${error.stack}\n`);
    return error instanceof SyncError ? error.exitCode : 1;
  }
}

function parse<T extends Parameters<typeof parseFlags>[1]>(args: string[], options: T) {
  return parseFlags(args, options, USAGE);
}

async function runCommand(args: string[], io: Io): Promise<number> {
  const flags = parse(args, {
    'dry-run': { type: 'boolean' },
    'allow-mass-delete': { type: 'boolean' },
    'accept-schema-change': { type: 'boolean' },
    'from-file': { type: 'string' },
    json: { type: 'boolean' },
  });
  const fromFile = flags['from-file'];
  const request: SyncRequest = {
    source: fromFile === undefined ? { kind: 'api' } : { kind: 'file', path: fromFile },
    trigger: fromFile === undefined ? 'manual' : 'file',
    dryRun: flags['dry-run'] === true,
    allowMassDelete: flags['allow-mass-delete'] === true,
    acceptSchemaChange: flags['accept-schema-change'] === true,
  };
  return syncOnce(io, { api: fromFile === undefined, database: true }, request, flags.json === true);
}

async function replayCommand(args: string[], io: Io): Promise<number> {
  const flags = parse(args, {
    run: { type: 'string' },
    'dry-run': { type: 'boolean' },
    'allow-mass-delete': { type: 'boolean' },
    'accept-schema-change': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (flags.run === undefined || !/^[1-9]\d{0,17}$/.test(flags.run)) throw new UsageError('replay needs --run ID (a sync_runs id)');
  const request: SyncRequest = {
    source: { kind: 'replay', runId: flags.run },
    trigger: 'replay',
    dryRun: flags['dry-run'] === true,
    allowMassDelete: flags['allow-mass-delete'] === true,
    acceptSchemaChange: flags['accept-schema-change'] === true,
  };
  return syncOnce(io, { api: false, database: true }, request, flags.json === true);
}

/** One run with signal handling: SIGTERM/SIGINT abort it, roll back and mark it aborted. */
async function syncOnce(io: Io, needs: ConfigNeeds, request: SyncRequest, json: boolean): Promise<number> {
  const ctx = openContext(io, needs);
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    ctx.log.warn({ signal }, 'signal received; aborting the run');
    controller.abort(new Error(signal));
    forceExitLater(10_000);
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    await migrate(ctx.pool, ctx.config.schema, ctx.config.bi);
    const reporter = new RunReporter(ctx, { processMetrics: false, trigger: request.trigger });
    await reporter.start();
    const progress = terminalProgress(io.stderr);
    let outcome: SyncOutcome;
    try {
      reporter.runStarted();
      outcome = await runSync(
        ctx.config,
        { pool: ctx.pool, log: ctx.log, api: newApi(ctx), signal: controller.signal, onProgress: progress?.update },
        request,
      );
    } catch (error) {
      await reporter.finished({ error });
      throw error;
    }
    progress?.done();
    printOutcome(io, outcome, json);
    await reporter.finished({ outcome });
    await reporter.push();
    return outcome.run.status === 'succeeded' ? 0 : 1;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await ctx.close();
  }
}

/** A one-line progress display on a terminal; nothing when stderr is not a TTY (logs stay plain JSON). */
function terminalProgress(stderr: NodeJS.WritableStream): { update: (p: { received: number; bytes: number }) => void; done: () => void } | undefined {
  if ((stderr as { isTTY?: boolean }).isTTY !== true) return undefined;
  const started = Date.now();
  let last = 0;
  return {
    update: ({ received, bytes }) => {
      const now = Date.now();
      if (now - last < 250) return;
      last = now;
      stderr.write(`\r  ${received.toLocaleString('en-US')} records parsed and staged (${(bytes / 2 ** 20).toFixed(0)} MB), ${((now - started) / 1000).toFixed(1)} s `);
    },
    done: () => stderr.write('\r\x1b[K'),
  };
}

export function printOutcome(io: Io, outcome: SyncOutcome, json: boolean): void {
  io.stdout.write(json ? `${JSON.stringify(outcome.run)}\n` : `${formatSummary(outcome.run, outcome.topReasons, outcome.bi, outcome.newFields)}\n`);
}

async function migrateCommand(args: string[], io: Io): Promise<number> {
  parse(args, {});
  const ctx = openContext(io, { api: false, database: true });
  try {
    const applied = await migrate(ctx.pool, ctx.config.schema, ctx.config.bi);
    io.stdout.write(applied.length > 0 ? `applied ${applied.join(', ')} to schema ${ctx.config.schema}\n` : `schema ${ctx.config.schema} is up to date\n`);
    return 0;
  } finally {
    await ctx.close();
  }
}

async function statusCommand(args: string[], io: Io): Promise<number> {
  const flags = parse(args, { limit: { type: 'string' }, json: { type: 'boolean' } });
  const limit = flags.limit ?? '10';
  if (!/^[1-9]\d{0,5}$/.test(limit)) throw new UsageError('--limit takes a whole number from 1 to 999999');
  const ctx = openContext(io, { api: false, database: true });
  try {
    await migrate(ctx.pool, ctx.config.schema, ctx.config.bi);
    const runs: RunRow[] = await recentRuns(ctx.pool, Number(limit));
    io.stdout.write(flags.json ? `${JSON.stringify(runs)}\n` : `${formatRunsTable(runs)}\n`);
    return 0;
  } finally {
    await ctx.close();
  }
}
