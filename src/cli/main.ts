/**
 * The command line: parses arguments, builds the context (config, logger, pool) and maps
 * outcomes to exit codes: 0 succeeded, 1 run failed, 2 usage/configuration, 3 lock held.
 */
import type { ConfigNeeds } from '../config.js';
import { PROGRAM, SETTINGS, defineCommand, parseCommand, programUsage, type CommandSpec } from './command-line.js';
import type { Io } from './io.js';
import { openJob } from '../job/job.js';
import { forceExitLater } from '../job/shutdown.js';
import { migrate } from '../db/migrate.js';
import { HelpRequested, SyncError, UsageError, describeError } from '../errors.js';
import { findRun, recentRuns, type RunRow } from '../load/audit.js';
import { checksOfRuns, profilesOfRuns } from '../load/checks-store.js';
import type { Pool } from '../db/pool.js';
import { formatRun, formatRunsTable, formatSummary } from './summary.js';
import { RunReporter } from '../observe/run-reporter.js';
import { runSync, type SyncOutcome, type SyncRequest } from '../run/sync.js';
import { attemptsAllowed } from '../daemon/retry-plan.js';
import { readSetting } from '../settings/read.js';
import { APP_VERSION } from '../io/paths.js';
import { stripControls } from '../text/safe-text.js';
import { stat } from 'node:fs/promises';
import { terminalLine } from '../text/terminal-line.js';

const { SCHEMA_SETTINGS, LOAD_SETTINGS, API_SETTINGS, REPORTING } = SETTINGS;

const RUN = defineCommand({
  name: 'run',
  summary: 'one sync now: log in, download the listing, load it in one transaction',
  flags: {
    'dry-run': { type: 'boolean', help: 'do everything and report the counts, but commit nothing to the data tables' },
    'allow-mass-delete': {
      type: 'boolean',
      help: 'allow a run that soft-deletes more than SYNC_MAX_DELETE_RATIO of the live rows',
    },
    'accept-schema-change': {
      type: 'boolean',
      help: 'load even though a field the last successful run saw is now absent (it becomes the new reference)',
    },
    'accept-check': {
      type: 'string',
      value: 'NAME',
      multiple: true,
      help: 'let this run through although the error-level check NAME fails (e.g. nulls:inventory_sales); repeatable',
    },
    'from-file': { type: 'string', value: 'F', help: 'load a saved listing document instead of calling the API' },
    json: { type: 'boolean', help: 'print the finished sync_runs row as JSON on stdout' },
  },
  env: {
    needs: ['DATABASE_URL', 'WINE_API_BASE_URL', 'WINE_API_EMAIL', 'WINE_API_PASSWORD'],
    reads: [...API_SETTINGS, ...LOAD_SETTINGS, 'SYNC_PUSHGATEWAY_URL', ...REPORTING, 'SYNC_EXIT_FLUSH_TIMEOUT'],
  },
  notes: 'with --from-file, DATABASE_URL is the only setting needed (no WINE_API_*).',
});

const REPLAY = defineCommand({
  name: 'replay',
  summary: 'load the archived payload of an earlier run again (backfill, rebuild after a fix)',
  flags: {
    run: {
      type: 'string',
      value: 'ID',
      required: true,
      integer: { min: 1, max: Number.MAX_SAFE_INTEGER },
      help: 'the sync_runs id whose payload to load',
    },
    'dry-run': { type: 'boolean', help: 'do everything and report the counts, but commit nothing to the data tables' },
    'allow-mass-delete': {
      type: 'boolean',
      help: 'allow a run that soft-deletes more than SYNC_MAX_DELETE_RATIO of the live rows',
    },
    'accept-schema-change': {
      type: 'boolean',
      help: 'load even though a field the last successful run saw is now absent (it becomes the new reference)',
    },
    'accept-check': {
      type: 'string',
      value: 'NAME',
      multiple: true,
      help: 'let this run through although the error-level check NAME fails (e.g. nulls:inventory_sales); repeatable',
    },
    json: { type: 'boolean', help: 'print the finished sync_runs row as JSON on stdout' },
  },
  env: {
    needs: ['DATABASE_URL'],
    reads: [...LOAD_SETTINGS, 'SYNC_PUSHGATEWAY_URL', ...REPORTING, 'SYNC_EXIT_FLUSH_TIMEOUT'],
  },
});

const MIGRATE = defineCommand({
  name: 'migrate',
  summary: 'apply pending migrations and exit',
  flags: {},
  env: { needs: ['DATABASE_URL'], reads: [...SCHEMA_SETTINGS, 'LOG_LEVEL'] },
});

const STATUS = defineCommand({
  name: 'status',
  summary: 'recent runs from sync_runs, newest first',
  flags: {
    limit: {
      type: 'string',
      value: 'N',
      default: '10',
      integer: { min: 1, max: 999_999 },
      help: 'how many runs to show',
    },
    run: {
      type: 'string',
      value: 'ID',
      integer: { min: 1, max: Number.MAX_SAFE_INTEGER },
      help: 'show this one run in full, error text included',
    },
    json: { type: 'boolean', help: 'print the rows as JSON instead of a table (errors in full)' },
  },
  env: { needs: ['DATABASE_URL'], reads: [...SCHEMA_SETTINGS, 'SYNC_RUN_RETRY_DELAYS', 'LOG_LEVEL'] },
});

/** Every command's spec, for `wine-recon-sync --help`; the lazily loaded commands are imported only here. */
async function allCommands(): Promise<CommandSpec[]> {
  const [schedule, demo, simulate, serve, describe] = await Promise.all([
    import('./schedule.js'),
    import('./demo.js'),
    import('./simulate.js'),
    import('./serve.js'),
    import('./describe.js'),
  ]);
  return [
    RUN,
    schedule.SCHEDULE,
    REPLAY,
    MIGRATE,
    STATUS,
    serve.SERVE,
    describe.DBT_SOURCES,
    describe.SCHEMA,
    demo.DEMO,
    simulate.SIMULATE,
    schedule.HEALTHCHECK,
  ];
}

export async function main(
  argv: string[],
  io: Io = { env: process.env, stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
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
      case 'serve':
        return await (await import('./serve.js')).serveCommand(rest, io);
      case 'healthcheck':
        return await (await import('./schedule.js')).healthcheckCommand(rest, io);
      case 'dbt-sources':
        return await (await import('./describe.js')).dbtSourcesCommand(rest, io);
      case 'schema':
        return await (await import('./describe.js')).schemaCommand(rest, io);
      case 'demo':
        return await (await import('./demo.js')).demoCommand(rest, io);
      case 'simulate':
        return await (await import('./simulate.js')).simulateCommand(rest, io);
      case '--version':
      case '-V':
      case 'version':
        io.stdout.write(`${PROGRAM} ${APP_VERSION}\n`);
        return 0;
      case 'help':
        // `help run` is `run --help`.
        if (rest[0] !== undefined && rest[0] !== 'help') return await main([rest[0], '--help'], io);
        io.stdout.write(`${programUsage(await allCommands())}\n`);
        return 0;
      case '--help':
      case '-h':
        io.stdout.write(`${programUsage(await allCommands())}\n`);
        return 0;
      case undefined:
        io.stderr.write(`${programUsage(await allCommands())}\n`);
        return 2;
      default:
        throw new UsageError(`unknown command "${command}"\n\n${programUsage(await allCommands())}`);
    }
  } catch (error) {
    if (error instanceof HelpRequested) {
      io.stdout.write(`${error.message}\n`);
      return 0;
    }
    // An error may quote the upstream: no ESC sequence of its reaches the terminal.
    io.stderr.write(`Error: ${stripControls(describeError(error))}\n`);
    if (readSetting(io.env, 'DEBUG', []) && error instanceof Error) io.stderr.write(`${error.stack}\n`);
    return error instanceof SyncError ? error.exitCode : 1;
  }
}

async function runCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(RUN, args);
  const fromFile = flags['from-file'];
  const request: SyncRequest = {
    source: fromFile === undefined ? { kind: 'api' } : { kind: 'file', path: fromFile },
    trigger: fromFile === undefined ? 'manual' : 'file',
    dryRun: flags['dry-run'] === true,
    allowMassDelete: flags['allow-mass-delete'] === true,
    acceptSchemaChange: flags['accept-schema-change'] === true,
    acceptChecks: flags['accept-check'] ?? [],
  };
  // A file's size is known: the progress line then shows a bar and the time left.
  const total =
    fromFile === undefined
      ? undefined
      : await stat(fromFile).then(
          (s) => (s.isFile() ? s.size : undefined),
          () => undefined,
        );
  return syncOnce(io, { api: fromFile === undefined, database: true }, request, flags.json === true, total);
}

async function replayCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(REPLAY, args);
  const request: SyncRequest = {
    source: { kind: 'replay', runId: flags.run },
    trigger: 'replay',
    dryRun: flags['dry-run'] === true,
    allowMassDelete: flags['allow-mass-delete'] === true,
    acceptSchemaChange: flags['accept-schema-change'] === true,
    acceptChecks: flags['accept-check'] ?? [],
  };
  return syncOnce(io, { api: false, database: true }, request, flags.json === true);
}

/** One run with signal handling: SIGTERM/SIGINT abort it, roll back and mark it aborted. */
async function syncOnce(
  io: Io,
  needs: ConfigNeeds,
  request: SyncRequest,
  json: boolean,
  totalBytes?: number,
): Promise<number> {
  const job = openJob(io, needs);
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    job.log.warn({ signal }, 'signal received; aborting the run');
    controller.abort(new Error(signal));
    forceExitLater(10_000);
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    await migrate(job.pool, job.config.schema, job.config.bi);
    const reporter = new RunReporter(job, { daemon: false, trigger: request.trigger });
    await reporter.start();
    const progress = terminalProgress(io.stderr, totalBytes);
    let outcome: SyncOutcome;
    try {
      outcome = await runSync(
        job.config,
        {
          pool: job.pool,
          log: job.log,
          secrets: job.secrets,
          api: await job.api({ onDownloadProgress: progress?.download }),
          signal: controller.signal,
          onProgress: progress?.update,
          onRunStarted: (run, abandoned) => reporter.runStarted(run, abandoned),
        },
        request,
      );
    } catch (error) {
      const ended = Date.now();
      progress?.done();
      await reporter.finished({ error });
      await reporter.flush(job.config.exitFlushTimeoutMs, ended);
      throw error;
    }
    // From here on, the webhook, the push and the lineage events (sent during the run) hold the
    // exit at most SYNC_EXIT_FLUSH_TIMEOUT; they go on side by side.
    const ended = Date.now();
    progress?.done();
    printOutcome(io, outcome, json);
    await reporter.finished({ outcome });
    void reporter.push();
    await reporter.flush(job.config.exitFlushTimeoutMs, ended);
    return outcome.run.status === 'succeeded' ? 0 : 1;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await job.close();
  }
}

/**
 * A one-line progress display on a terminal; nothing when stderr is not a TTY (logs stay plain
 * JSON). With the listing's size known, a bar, the share done and the time left. Any log line
 * clears it first (terminal-line.ts); the next update draws it again.
 */
function terminalProgress(
  stderr: NodeJS.WritableStream,
  totalBytes?: number,
):
  | {
      update: (p: { received: number; bytes: number }) => void;
      download: (d: DownloadProgress) => void;
      done: () => void;
    }
  | undefined {
  if ((stderr as { isTTY?: boolean }).isTTY !== true) return undefined;
  const started = Date.now();
  let last = 0;
  let download: DownloadProgress | undefined;
  return {
    update: ({ received, bytes }) => {
      const now = Date.now();
      if (now - last < 250) return;
      last = now;
      terminalLine.show(stderr, progressText({ received, bytes, totalBytes, download, elapsedMs: now - started }));
    },
    // A new download attempt starts again from 0: so does the bar.
    download: (d) => (download = d.declared === undefined ? undefined : d),
    done: () => terminalLine.clear(),
  };
}

type DownloadProgress = { received: number; declared: number | undefined };

/**
 * The progress line's text. With a file's size, the bar is the share parsed; with a download's
 * Content-Length, the share downloaded (the parse follows close behind), counted in the bytes as
 * sent, which are gzip's when the body is coded.
 */
export function progressText(p: {
  received: number;
  bytes: number;
  totalBytes?: number | undefined;
  download?: DownloadProgress | undefined;
  elapsedMs: number;
}): string {
  const mb = (n: number) => (n / 2 ** 20).toFixed(0);
  const records = `${p.received.toLocaleString('en-US')} records parsed and staged`;
  const seconds = `${(p.elapsedMs / 1000).toFixed(1)} s`;
  const bar = (share: number) => {
    const filled = Math.round(share * 24);
    const left = share > 0 && share < 1 ? ((p.elapsedMs / share) * (1 - share)) / 1000 : undefined;
    return {
      text: `[${'#'.repeat(filled)}${'.'.repeat(24 - filled)}] ${Math.floor(share * 100)}%`,
      left: left === undefined ? '' : `, about ${left.toFixed(left < 10 ? 1 : 0)} s left`,
    };
  };
  if (p.totalBytes !== undefined && p.totalBytes > 0) {
    const b = bar(Math.min(p.bytes / p.totalBytes, 1));
    return `  ${b.text}  ${records} (${mb(p.bytes)} of ${mb(p.totalBytes)} MB), ${seconds}${b.left} `;
  }
  if (p.download?.declared !== undefined) {
    const b = bar(Math.min(p.download.received / p.download.declared, 1));
    return (
      `  ${b.text} of ${mb(p.download.declared)} MB downloaded  ${records} (${mb(p.bytes)} MB), ` +
      `${seconds}${b.left} `
    );
  }
  return `  ${records} (${mb(p.bytes)} MB), ${seconds} `;
}

export function printOutcome(io: Io, outcome: SyncOutcome, json: boolean): void {
  io.stdout.write(
    json
      ? `${JSON.stringify(outcome.run)}\n`
      : `${formatSummary(outcome.run, outcome.topReasons, outcome.bi, outcome.newFields, outcome.checks)}\n`,
  );
}

async function migrateCommand(args: string[], io: Io): Promise<number> {
  parseCommand(MIGRATE, args);
  const job = openJob(io, { api: false, database: true });
  try {
    const applied = await migrate(job.pool, job.config.schema, job.config.bi);
    io.stdout.write(
      applied.length > 0
        ? `applied ${applied.join(', ')} to schema ${job.config.schema}\n`
        : `schema ${job.config.schema} is up to date\n`,
    );
    return 0;
  } finally {
    await job.close();
  }
}

/** Runs with their checks (failed ones first) and their profile, as `status --json` gives them. */
async function withChecksAndProfile(pool: Pool, runs: RunRow[]): Promise<RunRow[]> {
  const ids = runs.map((r) => String(r.id));
  const [checks, profiles] = await Promise.all([checksOfRuns(pool, ids), profilesOfRuns(pool, ids)]);
  return runs.map((r) => ({ ...r, checks: checks.get(String(r.id)) ?? [], profile: profiles.get(String(r.id)) ?? [] }));
}

async function statusCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(STATUS, args);
  const job = openJob(io, { api: false, database: true });
  try {
    await migrate(job.pool, job.config.schema, job.config.bi);
    if (flags.run !== undefined) {
      const run = await findRun(job.pool, flags.run);
      if (!run) throw new UsageError(`there is no run ${flags.run} in sync_runs`);
      const [withChecks] = await withChecksAndProfile(job.pool, [run]);
      io.stdout.write(flags.json ? `${JSON.stringify(withChecks)}\n` : `${formatRun(withChecks!)}\n`);
      return 0;
    }
    const runs: RunRow[] = await recentRuns(job.pool, Number(flags.limit));
    if (flags.json)
      io.stdout.write(`${JSON.stringify(await withChecksAndProfile(job.pool, runs))}
`);
    else {
      const checks = await checksOfRuns(
        job.pool,
        runs.map((r) => String(r.id)),
      );
      io.stdout.write(`${formatRunsTable(runs, attemptsAllowed(job.config.runRetryDelaysMs), checks)}
`);
    }
    return 0;
  } finally {
    await job.close();
  }
}
