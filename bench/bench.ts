/**
 * `npm run bench`: the sync against N simulated records (default 1,000,000), measured against a
 * floor taken in the same run on the same machine and server:
 *   floor = download of the listing + COPY of the same rows into a table with its primary key.
 * Reports wall time, ratio to the floor, rows/s, peak RSS, WAL bytes for a first load, an
 * unchanged re-sync and a 1%-changed re-sync; a first load at N/10 for the memory comparison;
 * and a naive per-row upsert on a sample. Prints a table and writes JSON to bench/results/.
 *
 *   npm run bench [-- --records 1000000] [-- --database-url postgres://…]
 * Without --database-url (or BENCH_DATABASE_URL) an embedded PostgreSQL is started in a temp dir.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, createReadStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { PACKAGE_ROOT } from '../src/paths.js';

const BIN = join(PACKAGE_ROOT, 'bin', 'wine-recon-sync');
const PROBE = join(PACKAGE_ROOT, 'dist', 'bench', 'rss-probe.js');
const NAIVE_SAMPLE = 10_000;

interface Measure {
  name: string;
  records: number;
  seconds: number;
  maxRssMb?: number;
  walMb?: number;
  counts?: Record<string, unknown>;
  phasesMs?: Record<string, number>;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { records: { type: 'string', default: '1000000' }, 'database-url': { type: 'string' }, out: { type: 'string' } },
  });
  const records = Number(values.records);
  const small = Math.max(1, Math.round(records / 10));
  const work = await mkdtemp(join(tmpdir(), 'wrs-bench-'));
  await chmod(work, 0o755);
  let databaseUrl = values['database-url'] ?? process.env.BENCH_DATABASE_URL;
  let stopDb: () => Promise<void> = async () => undefined;
  if (!databaseUrl) {
    const db = await startEmbeddedPostgres({ dataDir: join(work, 'pg'), port: await freePort(), database: 'bench', ephemeral: true });
    databaseUrl = db.url;
    stopDb = db.stop;
  }
  const admin = new pg.Client(databaseUrl);
  await admin.connect();
  const serverVersion = (await admin.query('SHOW server_version')).rows[0].server_version;
  const results: Measure[] = [];
  const log = (m: string) => process.stderr.write(`${m}\n`);
  try {
    log(`benchmark: ${records} records, PostgreSQL ${serverVersion}, node ${process.version}`);

    // Floor, part 1: the download alone.
    let sim = await startSim(records, 0);
    const token = await login(sim.url);
    const download = await timed(() => downloadOnce(sim.url, token));
    log(`download: ${download.seconds.toFixed(2)} s`);

    // The sync: first load, unchanged re-sync, then 1% changed.
    const schema = 'bench_main';
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    const env = { DATABASE_URL: databaseUrl, SYNC_DB_SCHEMA: schema, WINE_API_BASE_URL: sim.url, WINE_API_EMAIL: 'demo@example.com', WINE_API_PASSWORD: 'demo-password', LOG_LEVEL: 'warn' };
    await runCli(['migrate'], env);
    results.push(await syncRun('first load', records, env, admin));
    results.push(await syncRun('unchanged re-sync', records, env, admin));
    await sim.stop();
    sim = await startSim(records, Math.round(records / 100));
    results.push(await syncRun('1% changed re-sync', records, { ...env, WINE_API_BASE_URL: sim.url }, admin));
    await sim.stop();

    // Floor, part 2: COPY of the same rows into a table with its primary key.
    const rowsFile = join(work, 'rows.copy');
    const cols = 'id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales, vintage_forecast, vintage_make, first_sale';
    await pipeline(admin.query(copyTo(`COPY (SELECT ${cols} FROM ${schema}.bulk_wine_reconciliation) TO STDOUT`)), createWriteStream(rowsFile));
    await admin.query(`DROP TABLE IF EXISTS bench_floor; CREATE TABLE bench_floor (id bigint PRIMARY KEY, wpi text NOT NULL, inventory_bulk_wine numeric, inventory_finished_goods numeric, inventory_sales numeric, vintage_forecast numeric, vintage_make numeric, first_sale date)`);
    const copy = await timed(() => pipeline(createReadStream(rowsFile), admin.query(copyFrom(`COPY bench_floor (${cols}) FROM STDIN`))));
    await admin.query('DROP TABLE bench_floor');
    const floor = download.seconds + copy.seconds;
    log(`copy into an indexed table: ${copy.seconds.toFixed(2)} s; floor ${floor.toFixed(2)} s`);

    // Memory at a tenth of the size, for the "flat" check.
    sim = await startSim(small, 0);
    await admin.query('DROP SCHEMA IF EXISTS bench_small CASCADE');
    const smallEnv = { ...env, SYNC_DB_SCHEMA: 'bench_small', WINE_API_BASE_URL: sim.url };
    await runCli(['migrate'], smallEnv);
    results.push(await syncRun('first load (1/10 size)', small, smallEnv, admin));
    await sim.stop();

    // A naive script: one INSERT … ON CONFLICT per row, each its own transaction.
    const naive = await naiveUpsert(admin, rowsFile);
    const naiveFull = (naive.seconds / NAIVE_SAMPLE) * records;

    const first = results[0]!;
    const report = {
      date: new Date().toISOString(),
      records,
      postgres: serverVersion,
      node: process.version,
      floor: { seconds: floor, downloadSeconds: download.seconds, copySeconds: copy.seconds },
      runs: results.map((r) => ({ ...r, ratioToFloor: r.records === records ? r.seconds / floor : undefined, rowsPerSecond: r.records / r.seconds })),
      naive: { sampleRows: NAIVE_SAMPLE, sampleSeconds: naive.seconds, extrapolatedSeconds: naiveFull, speedup: naiveFull / first.seconds },
      targets: {
        firstLoadRatio: first.seconds / floor <= 2.5,
        unchangedRatio: results[1]!.seconds / floor <= 2.5,
        changedRatio: results[2]!.seconds / floor <= 2.5,
        peakRssUnder250Mb: (first.maxRssMb ?? Infinity) <= 250,
        rssFlat: (first.maxRssMb ?? Infinity) <= 1.5 * (results[3]!.maxRssMb ?? 0),
        unchangedWalUnder5Mb: (results[1]!.walMb ?? Infinity) < 5,
        fiftyTimesNaive: naiveFull / first.seconds >= 50,
      },
    };
    printTable(report);
    const outDir = join(PACKAGE_ROOT, 'bench', 'results');
    await mkdir(outDir, { recursive: true });
    const out = values.out ?? join(outDir, `bench-${records}.json`);
    await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
    log(`written to ${out}`);
    if (Object.values(report.targets).some((ok) => !ok)) process.exitCode = 1;
  } finally {
    await admin.end();
    await stopDb();
    await rm(work, { recursive: true, force: true });
  }
}

async function syncRun(name: string, records: number, env: Record<string, string>, admin: pg.Client): Promise<Measure> {
  const walBefore = (await admin.query('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn;
  const started = process.hrtime.bigint();
  const { stdout, stderr, maxRssBytes } = await runCli(['run', '--json'], { ...env, LOG_LEVEL: 'debug' }, true);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const wal = (await admin.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint AS bytes', [walBefore])).rows[0].bytes;
  const run = JSON.parse(stdout);
  if (run.status !== 'succeeded') throw new Error(`${name}: run ${run.status}: ${run.error}`);
  const m: Measure = {
    name,
    records,
    seconds,
    maxRssMb: maxRssBytes === undefined ? undefined : maxRssBytes / 2 ** 20,
    walMb: Number(wal) / 2 ** 20,
    counts: { inserted: run.inserted, updated: run.updated, unchanged: run.unchanged, deleted: run.deleted },
    phasesMs: phases(stderr),
  };
  process.stderr.write(`${name}: ${seconds.toFixed(2)} s, ${m.maxRssMb?.toFixed(0)} MB RSS, ${m.walMb?.toFixed(1)} MB WAL ${JSON.stringify(m.counts)}\n  ${JSON.stringify(m.phasesMs)}\n`);
  return m;
}

/** Step durations from the run's debug log: where the time goes. */
function phases(stderr: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; ms?: number; statement?: string };
    if (entry.ms === undefined) continue;
    const name = entry.statement ?? entry.msg;
    if (name && name !== 'sync finished') out[name] = entry.ms;
  }
  return out;
}

function runCli(args: string[], env: Record<string, string>, probe = false): Promise<{ stdout: string; stderr: string; maxRssBytes?: number }> {
  return new Promise((resolve, reject) => {
    // Launched as users launch it (the bin script and its shebang's node flags); the probe rides in NODE_OPTIONS.
    const childEnv = { PATH: process.env.PATH ?? '', ...env, ...(probe ? { NODE_OPTIONS: `--import=${PROBE}` } : {}) };
    const child = spawn(BIN, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let probeOut = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdio[3]!.on('data', (d) => (probeOut += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`wine-recon-sync ${args.join(' ')} exited ${code}: ${stdout}\n${stderr.slice(-2000)}`));
      resolve({ stdout, stderr, maxRssBytes: probeOut ? JSON.parse(probeOut).maxRssBytes : undefined });
    });
  });
}

interface Sim {
  url: string;
  stop(): Promise<void>;
}

/** The simulator in a process of its own, so its work does not count against the sync. */
async function startSim(records: number, change: number): Promise<Sim> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'simulate', '--port', String(port), '--records', String(records), '--change', String(change)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('listening') && resolve());
    child.on('exit', (code) => reject(new Error(`simulator exited ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function login(base: string): Promise<string> {
  const res = await fetch(`${base}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-requested-with': 'XMLHttpRequest', service_app: 'mobile' },
    body: JSON.stringify({ email: 'demo@example.com', password: 'demo-password' }),
  });
  return ((await res.json()) as { data: { access_token: string } }).data.access_token;
}

/** Floor: the listing read from the socket and thrown away (node's http, no parsing). */
function downloadOnce(base: string, token: string): Promise<void> {
  return new Promise((resolve, reject) => {
    get(`${base}/api/bulk-wine-reconciliation-data?for_reporting=1`, { headers: { serviceapp: 'mobile', authorization: `Bearer ${token}` } }, (res) => {
      res.on('data', () => undefined);
      res.on('end', resolve);
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function naiveUpsert(admin: pg.Client, rowsFile: string): Promise<{ seconds: number }> {
  await admin.query(`DROP TABLE IF EXISTS bench_naive; CREATE TABLE bench_naive (id bigint PRIMARY KEY, wpi text NOT NULL, inventory_bulk_wine numeric, inventory_finished_goods numeric, inventory_sales numeric, vintage_forecast numeric, vintage_make numeric, first_sale date)`);
  const rows: string[][] = [];
  let carry = '';
  for await (const chunk of createReadStream(rowsFile, { encoding: 'utf8' })) {
    const lines = (carry + chunk).split('\n');
    carry = lines.pop() ?? '';
    for (const line of lines) {
      rows.push(line.split('\t'));
      if (rows.length >= NAIVE_SAMPLE) break;
    }
    if (rows.length >= NAIVE_SAMPLE) break;
  }
  const sql = `INSERT INTO bench_naive VALUES ($1,$2,$3,$4,$5,$6,$7,$8)
    ON CONFLICT (id) DO UPDATE SET wpi = EXCLUDED.wpi, inventory_bulk_wine = EXCLUDED.inventory_bulk_wine, inventory_finished_goods = EXCLUDED.inventory_finished_goods,
    inventory_sales = EXCLUDED.inventory_sales, vintage_forecast = EXCLUDED.vintage_forecast, vintage_make = EXCLUDED.vintage_make, first_sale = EXCLUDED.first_sale`;
  const result = await timed(async () => {
    for (const row of rows) await admin.query(sql, row.map((v) => (v === '\\N' ? null : v)));
  });
  await admin.query('DROP TABLE bench_naive');
  return result;
}

async function timed(fn: () => Promise<unknown>): Promise<{ seconds: number }> {
  const started = process.hrtime.bigint();
  await fn();
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function printTable(report: {
  records: number;
  floor: { seconds: number; downloadSeconds: number; copySeconds: number };
  runs: Array<Measure & { ratioToFloor?: number; rowsPerSecond: number }>;
  naive: { extrapolatedSeconds: number; speedup: number };
  targets: Record<string, boolean>;
}): void {
  const f = (n: number | undefined, d = 2) => (n === undefined ? '-' : n.toFixed(d));
  const lines = [
    `| run | records | wall s | × floor | rows/s | peak RSS MB | WAL MB |`,
    `|---|---:|---:|---:|---:|---:|---:|`,
    `| floor: download + COPY into indexed table | ${report.records} | ${f(report.floor.seconds)} (${f(report.floor.downloadSeconds)} + ${f(report.floor.copySeconds)}) | 1.00 | ${Math.round(report.records / report.floor.seconds)} | - | - |`,
    ...report.runs.map((r) => `| ${r.name} | ${r.records} | ${f(r.seconds)} | ${f(r.ratioToFloor)} | ${Math.round(r.rowsPerSecond)} | ${f(r.maxRssMb, 0)} | ${f(r.walMb, 1)} |`),
    `| naive per-row upsert (extrapolated from ${NAIVE_SAMPLE}) | ${report.records} | ${f(report.naive.extrapolatedSeconds, 0)} | - | ${Math.round(report.records / report.naive.extrapolatedSeconds)} | - | - |`,
    '',
    `speedup over the naive upsert: ${f(report.naive.speedup, 0)}×`,
    `targets: ${Object.entries(report.targets).map(([k, ok]) => `${k} ${ok ? 'met' : 'MISSED'}`).join(', ')}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
