/**
 * The status page at any age: 100,000 runs in sync_runs and 10,000 rejects in one run,
 * each page timed over HTTP on 127.0.0.1 (the server in this process, as `serve` runs it).
 *
 *   BENCH_DATABASE_URL=postgres://… node dist/bench/page-timings.js [--runs 100000] [--rejects 10000] [--times 20]
 *
 * Seeds a schema of its own (page_bench, dropped first), prints the median and the slowest of
 * each page, and exits 1 when a median is over 200 ms.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { createLogger, SecretRegistry } from '../src/log.js';
import { startMetricsServer } from '../src/observe/metrics-server.js';
import { pageHandler } from '../src/observe/page/routes.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '100000' },
    rejects: { type: 'string', default: '10000' },
    times: { type: 'string', default: '20' },
  },
});
const url = process.env.BENCH_DATABASE_URL;
if (!url) {
  process.stderr.write(
    'BENCH_DATABASE_URL: is not set (a database this benchmark may create the schema page_bench in)\n',
  );
  process.exit(2);
}
const schema = 'page_bench';
const runs = Number(values.runs);
const rejects = Number(values.rejects);

const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; DROP SCHEMA IF EXISTS ${schema}_bi CASCADE`);
await admin.end();
const pool = createPool({ databaseUrl: url, schema, max: 4 });
await migrate(pool, schema);
const seeded = Date.now();
// One run a day, most succeeded, some failed with an error, a few dry runs and replays.
await pool.query(
  `INSERT INTO sync_runs (trigger, status, dry_run, started_at, finished_at, received, rejected, duplicates,
                          inserted, updated, unchanged, deleted, restored, skipped_unchanged, bytes, error,
                          app_version, phases)
   SELECT (ARRAY['schedule','schedule','schedule','manual','replay','file'])[1 + i % 6],
          CASE WHEN i % 17 = 0 THEN 'failed' WHEN i % 101 = 0 THEN 'aborted' ELSE 'succeeded' END,
          i % 23 = 0,
          now() - ($1 - i) * interval '1 hour' ,
          now() - ($1 - i) * interval '1 hour' + (30 + i % 50) * interval '1 second',
          1000000 + i % 977, i % 13, 0, i % 100, 5000 + i % 3000, 990000, i % 7, i % 3, 990000, 250000000,
          CASE WHEN i % 17 = 0
               THEN 'the upstream answered 503 Service Unavailable after 5 attempts: <b>' || i || '</b>' END,
          '0.1.0',
          '[{"phase":"download","ms":12000},{"phase":"parse and stage","ms":15000},{"phase":"commit","ms":300}]'::jsonb
   FROM generate_series(1, $1) AS i`,
  [runs],
);
const last = (await pool.query<{ id: string }>('SELECT max(id) AS id FROM sync_runs')).rows[0]!.id;
await pool.query(
  `INSERT INTO sync_rejects (run_id, position, record_id, errors, raw)
   SELECT $1, i * 3, i::text,
          jsonb_build_array(
            jsonb_build_object('path', 'inventory_sales', 'message', 'not a decimal: "' || i || 'x"'),
            jsonb_build_object('path', 'wpi', 'message', 'is empty')),
          '{"id":' || i || ',"wpi":"","inventory_sales":"' || i || 'x","note":"'
            || repeat('<script>alert(1)</script>', 1 + i % 40) || '"}'
   FROM generate_series(1, $2) AS i`,
  [last, rejects],
);
await pool.query('ANALYZE sync_runs; ANALYZE sync_rejects');
process.stdout.write(`seeded ${runs} runs and ${rejects} rejects of run ${last} in ${Date.now() - seeded} ms\n`);

const log = createLogger({ level: 'warn', secrets: new SecretRegistry() });
const server = await startMetricsServer({
  host: '127.0.0.1',
  port: 0,
  page: pageHandler({
    pool,
    schema,
    timezone: 'Europe/Paris',
    token: undefined,
    boundHost: '127.0.0.1',
    allowedHosts: [],
    staleRule: () => ({ ms: 26 * 3_600_000, why: '' }),
    log,
  }),
  onError: () => undefined,
});
const mid = Math.floor(runs / 2);
const pages = [
  ['overview', '/'],
  ['overview, 365 runs plotted', '/?plot=365'],
  ['overview, failed only', '/?status=failed'],
  ['overview, trigger replay, deep page', `/?trigger=replay&before=${mid}`],
  ['overview, aborted, newer page', `/?status=aborted&after=${mid}`],
  [`run ${last} (10,000 rejects)`, `/runs/${last}`],
  [`run ${last}, rejects page 100`, `/runs/${last}?after=${(rejects - 100) * 3}`],
  [`run ${last}.json`, `/runs/${last}.json`],
  ['an old run', `/runs/${mid}`],
  ['a raw reject', `/runs/${last}/rejects/300/raw`],
  ['fields', '/fields'],
] as const;
let slow = false;
process.stdout.write(`\n| page | median ms | slowest ms | bytes |\n|---|---:|---:|---:|\n`);
for (const [name, path] of pages) {
  const times: number[] = [];
  let size = 0;
  for (let i = 0; i < Number(values.times) + 2; i++) {
    const started = performance.now();
    const res = await fetch(`${server.url}${path}`);
    const body = await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
    size = body.byteLength;
    if (i >= 2) times.push(performance.now() - started); // the first two warm the pool and the plans
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  if (median > 200) slow = true;
  process.stdout.write(
    `| ${name} | ${median.toFixed(1)} | ${times.at(-1)!.toFixed(1)} | ${size.toLocaleString('en-US')} |\n`,
  );
}
await server.close();
await pool.end();
process.exit(slow ? 1 : 0);
