/** Shared test plumbing: a schema of one's own in the test database, the CLI as a child process, in-process runs. */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { WineApi } from '../../src/extract/http/api.js';
import { createLogger, SecretRegistry, type Logger } from '../../src/log.js';
import { runSync, type SyncOutcome, type SyncRequest } from '../../src/run/sync.js';
import type { Simulator } from '../../src/simulator/server.js';

export const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'wine-recon-sync');

export interface TestDb {
  url: string;
  schema: string;
  pool: Pool;
  /** Rows of a query run in the test schema. */
  rows<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/** A fresh, migrated schema in the test database; dropped on close. */
export async function createTestDb(label: string): Promise<TestDb> {
  const url = inject('databaseUrl');
  const schema = `t_${label.replace(/[^a-z0-9]/g, '_')}_${randomBytes(3).toString('hex')}`;
  const pool = createPool({ databaseUrl: url, schema, max: 6 });
  await migrate(pool, schema);
  return {
    url,
    schema,
    pool,
    rows: async (sql, params) => (await pool.query(sql, params)).rows,
    close: async () => {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_bi" CASCADE`);
      await pool.end();
    },
  };
}

export function syncEnv(db: TestDb, sim?: Simulator, extra: Record<string, string> = {}): Record<string, string> {
  return { ...jobEnv(db.url, db.schema, sim), ...extra };
}

/**
 * The job's settings for a database URL and schema of the test's own (a pooler, a pair of servers), with `sim` as the
 * upstream.
 */
export function jobEnv(databaseUrl: string, schema: string, sim?: Simulator): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    SYNC_DB_SCHEMA: schema,
    WINE_API_RETRY_BASE_MS: '20',
    LOG_LEVEL: 'info',
    // A test's daemon starts between two slots of the default schedule, so catch-up would add a run
    // at start that a test of something else does not expect; the catch-up tests turn it on.
    SYNC_CATCH_UP: 'false',
    ...(sim ? { WINE_API_BASE_URL: sim.url, WINE_API_EMAIL: sim.email, WINE_API_PASSWORD: sim.password } : {}),
  };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  pid: number;
  result: Promise<CliResult>;
  kill(signal: NodeJS.Signals): void;
  /** Resolves when stderr has printed a line matching `pattern`. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

/** Starts the built CLI (bin/wine-recon-sync, or `bin`) with only the given environment (plus PATH). */
export function startCli(args: string[], env: Record<string, string>, bin = BIN): CliProcess {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const stderrLines = new PassThrough();
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    stderrLines.write(d);
  });
  const result = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return {
    pid: child.pid!,
    result,
    kill: (signal) => child.kill(signal),
    waitForLog: (pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const line = stderr.split('\n').find((l) => pattern.test(l));
          if (line !== undefined) {
            clearTimeout(timer);
            stderrLines.off('data', check);
            resolve(line);
          }
        };
        const timer = setTimeout(
          () => reject(new Error(`no log line matching ${pattern} within ${timeoutMs} ms; stderr:\n${stderr}`)),
          timeoutMs,
        );
        stderrLines.on('data', check);
        check();
      }),
  };
}

export async function runCli(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
  bin = BIN,
): Promise<CliResult> {
  const cli = startCli(args, env, bin);
  const timer = setTimeout(() => cli.kill('SIGKILL'), timeoutMs);
  const result = await cli.result;
  clearTimeout(timer);
  return result;
}

/** In-process runs (faster than a child process) with the log lines captured. */
export interface InProcess {
  config: Config;
  log: Logger;
  logs: string[];
  api: WineApi | undefined;
  run(request?: Partial<SyncRequest>, signal?: AbortSignal): Promise<SyncOutcome>;
}

export function inProcess(env: Record<string, string>): InProcess {
  const config = loadConfig(env, { api: env.WINE_API_BASE_URL !== undefined, database: true });
  const secrets = new SecretRegistry();
  const logs: string[] = [];
  const sink = new PassThrough();
  sink.on('data', (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean)));
  const log = createLogger({ level: 'debug', secrets, destination: sink });
  const api = config.api
    ? new WineApi(config.api, log, secrets, { retryBaseMs: config.retryBaseMs, proxy: config.proxy })
    : undefined;
  const pool = createPool({
    databaseUrl: config.databaseUrl!,
    connection: config.database,
    schema: config.schema,
    max: 4,
  });
  const ctx: InProcess = {
    config,
    log,
    logs,
    api,
    // The pool stays open for the next run of this context; closeInProcessPools() ends it.
    run: (request = {}, signal) =>
      runSync(config, { pool, log, api, signal }, { source: { kind: 'api' }, trigger: 'manual', ...request }),
  };
  pools.push(pool);
  return ctx;
}

const pools: Pool[] = [];
/** Closes the pools opened by inProcess(); the fixture (fixture.ts) calls it at teardown. */
export async function closeInProcessPools(): Promise<void> {
  await Promise.all(pools.splice(0).map((p) => p.end()));
}

/** Polls `check` every 50 ms until it is true; throws after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'wrs-test-'));
}

/** Every data column of a table, ordered by id, as text: what a BI tool would read. */
export async function tableText(
  db: TestDb,
  table = 'bulk_wine_reconciliation',
): Promise<Array<Record<string, string | null>>> {
  return db.rows(
    `SELECT id::text, wpi, inventory_bulk_wine::text, inventory_finished_goods::text, inventory_sales::text,
            vintage_forecast::text, vintage_make::text, first_sale::text, deleted_at IS NOT NULL AS deleted
     FROM ${table} ORDER BY id`,
  );
}
