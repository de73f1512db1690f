/**
 * `demo`: the whole job on embedded defaults. A simulated upstream, an embedded PostgreSQL under
 * .data/ (unless DATABASE_URL is set), two syncs with upstream changes in between, the summaries,
 * and how to connect with psql.
 */
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.js';
import { migrate } from './db/migrate.js';
import { newApi, openContext, type Io } from './context.js';
import { formatSummary } from './report.js';
import { PACKAGE_ROOT } from './paths.js';
import { runSync } from './sync.js';
import { startSimulator } from './simulator/server.js';

const DEMO_RECORDS = 3000;

export async function demoCommand(_args: string[], io: Io): Promise<number> {
  const out = (line = '') => io.stdout.write(`${line}\n`);
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = io.env.DATABASE_URL;
  if (!databaseUrl) {
    const port = Number(io.env.DEMO_PG_PORT ?? 54329);
    const dataDir = io.env.DEMO_DATA_DIR ?? join(PACKAGE_ROOT, '.data', 'postgres');
    out(`starting an embedded PostgreSQL on 127.0.0.1:${port} (data in ${dataDir})...`);
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
    const api = newApi(ctx);
    const deps = { pool: ctx.pool, log: ctx.log, api };
    out('\n1. first sync: every record is new');
    const first = await runSync(ctx.config, deps, { source: { kind: 'api' }, trigger: 'demo' });
    out(formatSummary(first.run, first.topReasons, first.bi, first.newFields));

    simulator.mutate({ change: 60, remove: 25, add: 40 });
    out('\n2. the upstream changed 60 records, removed 25 and added 40; second sync:');
    const second = await runSync(ctx.config, deps, { source: { kind: 'api' }, trigger: 'demo' });
    out(formatSummary(second.run, second.topReasons, second.bi, second.newFields));
    ok = first.run.status === 'succeeded' && second.run.status === 'succeeded';
  } finally {
    await ctx.close();
    await simulator.close();
  }

  const schema = ctx.config.schema;
  out('\nexplore the result:');
  out(`  psql "${redactPassword(databaseUrl)}"${embedded ? '   (password: postgres)' : ''}`);
  out(`  SELECT * FROM ${schema}.bulk_wine_reconciliation_current LIMIT 10;`);
  out(`  SELECT id, valid_from, valid_to, inventory_sales FROM ${schema}.bulk_wine_reconciliation_history WHERE valid_to IS NOT NULL LIMIT 10;`);
  out(`  SELECT id, status, received, inserted, updated, unchanged, deleted FROM ${schema}.sync_runs ORDER BY id DESC;`);
  if (embedded) {
    if ((io.stdout as { isTTY?: boolean }).isTTY === true) {
      out('\nthe embedded PostgreSQL keeps running so you can connect; press Ctrl-C to stop it.');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
    } else {
      out('\n(the embedded PostgreSQL is stopped now; its data stays: run `npm run demo` again to start it)');
    }
    await embedded.stop();
  }
  return ok ? 0 : 1;
}

function redactPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '';
    return u.toString().replace(/:@/, '@');
  } catch {
    return url;
  }
}
