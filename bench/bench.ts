/**
 * `npm run bench`: the sync on a realistic listing (default 1,000,000 records), served over HTTP
 * on 127.0.0.1 with gzip, against a floor measured in the same run the way acceptance measures it
 * (curl --compressed + psql \copy into a table with a primary key), before and after the syncs.
 * Each of `--runs` runs (default 3) measures a first load, an unchanged re-sync (and its WAL), a
 * 1%-changed re-sync, two all-rejected listings and, right after the first load, a first load into
 * a schema of its own of the same listing with two new fields in every record (unknown
 * members are kept; target ≤ 1.25 × the run's first load), each with its steps and how they overlapped
 * (step-overlap.ts) and the CPU of Node and of its PostgreSQL backends (backend-cpu.ts); the summary gives the
 * minimum and median and the process exits 1 when a target is missed in any run. `--scale N`
 * adds the large-listing check (scale-check.ts): N records against `--records` (`--runs 0 --scale
 * 10000000` runs only that check, against 1M). It writes the results as JSON (`--out`, default
 * bench/results/bench-N.json) and the runs as an SVG plot against the floor (`--svg`, default
 * docs/bench.svg; plot.ts). Every sync but the all-rejected ones starts on a quiet server
 * (`quietDay`).
 *
 *   BENCH_DATABASE_URL=postgres://… npm run bench [-- --records 1000000 --runs 3 --data-dir DIR]
 * Without BENCH_DATABASE_URL (or --database-url) an embedded PostgreSQL is started in a temp dir.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg, platform, release, tmpdir, totalmem, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { PACKAGE_ROOT } from '../src/io/paths.js';
import { measureFloor, rowsDifferingFromFloor } from './floor.js';
import { listingFiles, type ListingFiles } from './listing-files.js';
import { BENCH_EMAIL, BENCH_PASSWORD, startListingServer, type ListingServer } from './listing-server.js';
import { captionOf, renderBenchSvg } from './plot.js';
import {
  firstLoadRatioLines,
  profileShareLines,
  judge,
  NAMES,
  stepTable,
  summaryTable,
  targetLines,
  timeTable,
  fixtureRefusal,
  type BenchRun,
} from './report.js';
import { scaleCheck } from './scale-check.js';
import { freshSchema, measureSync, type SyncMeasure } from './sync-runner.js';

const log = (m: string) => process.stderr.write(`${m}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '1000000' },
      runs: { type: 'string', default: '3' },
      'database-url': { type: 'string' },
      'data-dir': { type: 'string' },
      scale: { type: 'string' },
      out: { type: 'string' },
      svg: { type: 'string' },
    },
  });
  const records = wholeNumber('--records', values.records, 1);
  const runs = wholeNumber('--runs', values.runs, 0);
  const scaleRecords =
    values.scale === undefined ? undefined : wholeNumber('--scale (more than --records)', values.scale, records + 1);
  // Refused before the hours of measuring: a fixture the docs quote names the commit it measured.
  const refusal = fixtureRefusal(resolve(values.out ?? ''), PACKAGE_ROOT, commit());
  if (values.out !== undefined && refusal !== undefined) {
    log(refusal);
    process.exitCode = 2;
    return;
  }
  const dataDir = values['data-dir'] ?? join(tmpdir(), 'wrs-bench-data');
  await mkdir(dataDir, { recursive: true });
  const work = await mkdtemp(join(tmpdir(), 'wrs-bench-'));
  // As root the embedded server runs as the `postgres` user (src/db/embedded.ts): it must reach its data directory.
  if (userInfo().uid === 0) await chmod(work, 0o755);
  let databaseUrl = values['database-url'] ?? process.env.BENCH_DATABASE_URL;
  let stopDb: () => Promise<void> = async () => undefined;
  if (!databaseUrl) {
    log(
      'BENCH_DATABASE_URL is not set: starting an embedded PostgreSQL ' +
        "(set it to measure against e.g. Debian's PostgreSQL 15)",
    );
    const db = await startEmbeddedPostgres({
      dataDir: join(work, 'pg'),
      port: await freePort(),
      database: 'bench',
      ephemeral: true,
    });
    databaseUrl = db.url;
    stopDb = db.stop;
  }
  const admin = new pg.Client(databaseUrl);
  await admin.connect();
  const server = await startListingServer();
  try {
    const serverVersion = (await admin.query('SHOW server_version')).rows[0].server_version as string;
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    log(
      `benchmark: ${records} records × ${runs} runs, PostgreSQL ${serverVersion}, node ${process.version}, ` +
        `load average ${load}`,
    );
    // With --runs 0 only the scale check runs, and it needs only the base listing, not its gzip.
    const base = await listingFiles(dataDir, records, 'base', { gzip: runs > 0, log });
    const listings =
      runs === 0
        ? undefined
        : {
            base,
            changed: await listingFiles(dataDir, records, 'changed', { log }),
            renamed: await listingFiles(dataDir, records, 'renamed', { log }),
            empty: await listingFiles(dataDir, 2 * records, 'empty', { log }),
            newFields: await listingFiles(dataDir, records, 'new-fields', { log }),
          };
    const env = {
      DATABASE_URL: databaseUrl,
      SYNC_DB_SCHEMA: 'bench_sync',
      WINE_API_BASE_URL: server.url,
      WINE_API_EMAIL: BENCH_EMAIL,
      WINE_API_PASSWORD: BENCH_PASSWORD,
    };
    // Read before the runs: the build measured is the checkout's state when the bench began.
    const measured = commit();
    const results: BenchRun[] = [];
    for (let i = 1; i <= runs; i++) {
      const loadAverage = Number(loadavg()[0]!.toFixed(2));
      log(`--- run ${i} of ${runs} (load average ${loadAverage})`);
      results.push({ loadAverage, ...(await benchRun(server, listings!, env, admin, databaseUrl)) });
    }
    const scale =
      scaleRecords === undefined
        ? undefined
        : await scaleCheck({
            records: scaleRecords,
            reference: base,
            dataDir,
            env: { ...env, SYNC_DB_SCHEMA: 'bench_scale' },
            admin,
            log,
          });

    const report = {
      date: new Date().toISOString(),
      commit: measured,
      machine: machine(),
      records,
      runs: results,
      postgres: serverVersion,
      node: process.version,
      uptime: uptime(),
      scale,
    };
    const out = values.out ?? join(PACKAGE_ROOT, 'bench', 'results', `bench-${records}.json`);
    await mkdir(join(out, '..'), { recursive: true });
    await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
    const svg = values.svg ?? join(PACKAGE_ROOT, 'docs', 'bench.svg');
    if (results.length > 0) {
      await mkdir(join(svg, '..'), { recursive: true });
      await writeFile(svg, renderBenchSvg({ caption: `${captionOf(report)}\n${report.uptime}`, runs: results }));
    }

    const lines = [
      `${records} records, ${runs} runs, PostgreSQL ${serverVersion}, node ${process.version}; ${report.uptime}`,
      ...(results.length === 0
        ? []
        : [
            '',
            summaryTable(results),
            '',
            timeTable(results),
            '',
            ...[NAMES.first, NAMES.newFields, NAMES.unchanged, NAMES.changed].map((name) => stepTable(results, name)),
            '',
            ...firstLoadRatioLines(results),
            '',
            ...profileShareLines(results),
            '',
            ...targetLines(results),
          ]),
      ...(scale ? ['', ...scale.lines] : []),
      '',
      `written to ${out}${results.length > 0 ? ` and ${svg}` : ''}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    const missed =
      results.some((r) => Object.values(r.targets).some((ok) => !ok)) || (scale !== undefined && !scale.ok);
    if (missed) process.exitCode = 1;
  } finally {
    await server.close();
    await admin.end();
    await stopDb();
    await rm(work, { recursive: true, force: true });
  }
}

async function benchRun(
  server: ListingServer,
  files: Record<'base' | 'changed' | 'renamed' | 'empty' | 'newFields', ListingFiles>,
  env: Record<string, string>,
  admin: pg.Client,
  databaseUrl: string,
): Promise<BenchRun> {
  const floorBefore = await measureFloor(server, files.base, databaseUrl, admin, log);
  log(`floor before: ${floorText(floorBefore)}`);
  await freshSchema(admin, env);

  const syncs: SyncMeasure[] = [];
  const sync = async (name: string, listing: ListingFiles, expect: 'succeeded' | 'failed', into = env) => {
    server.serve(listing);
    const m = await measureSync(name, ['run'], into, admin);
    const cpu = (c: { user: number; system: number } | null | undefined, none: string) =>
      c ? `${(c.user + c.system).toFixed(1)} s` : none;
    log(
      `${name}: ${m.seconds.toFixed(2)} s (steps ${m.overlap.stepsSeconds.toFixed(2)} s, ` +
        `${m.overlap.overlapSeconds.toFixed(2)} s of them overlapping), ` +
        `CPU node ${cpu(m.nodeCpu, '-')} postgres ${cpu(m.pgCpu, 'n/a')}, ` +
        `${m.maxRssMb?.toFixed(0)} MB RSS, ${m.walMb.toFixed(1)} MB WAL ` +
        `(${m.tuplesWritten} rows written to its tables, ${m.hotUpdates} of ${m.updates} data-table updates HOT, ` +
        `${m.otherTuples} in other databases meanwhile), ${m.status} ${JSON.stringify(m.counts)}\n  ` +
        `${JSON.stringify(m.stepsMs)}`,
    );
    if (m.status !== expect) throw new Error(`${name}: expected ${expect}, got ${m.status}: ${m.error}`);
    syncs.push(m);
    return m;
  };
  const differing = async (name: string, schema: string) => {
    const n = await rowsDifferingFromFloor(admin, schema);
    if (n > 0) log(`${name}: ${n} rows differ from the floor's rows`);
    return n;
  };
  // The two first loads each into an empty schema on a quiet server, so that neither pays for
  // what ran before it: the one with new fields is judged against the other.
  await quietDay(admin);
  await sync(NAMES.first, files.base, 'succeeded');
  const gzipRequested = server.takeEncodings().every((e) => /\bgzip\b/.test(e));
  const firstDiffering = await differing(NAMES.first, env.SYNC_DB_SCHEMA!);
  // The floor of the new-fields listing: what its larger body and 1M jsonb values cost a C client.
  // Its rows (extra_fields included) are then what the load with new fields must equal.
  const newFieldsFloor = await measureFloor(server, files.newFields, databaseUrl, admin, log);
  log(`floor of the new-fields listing: ${floorText(newFieldsFloor)}`);
  const withNewFields = { ...env, SYNC_DB_SCHEMA: `${env.SYNC_DB_SCHEMA}_new_fields` };
  await freshSchema(admin, withNewFields);
  await quietDay(admin);
  await sync(NAMES.newFields, files.newFields, 'succeeded', withNewFields);
  const newFieldsDiffering = await differing(NAMES.newFields, withNewFields.SYNC_DB_SCHEMA);
  const rowsWithoutNewFields = await rowsLackingNewFields(admin, withNewFields.SYNC_DB_SCHEMA);
  if (rowsWithoutNewFields > 0)
    log(`${NAMES.newFields}: ${rowsWithoutNewFields} rows lack a new field in extra_fields`);
  await admin.query(
    `DROP SCHEMA "${withNewFields.SYNC_DB_SCHEMA}" CASCADE; ` +
      `DROP SCHEMA IF EXISTS "${withNewFields.SYNC_DB_SCHEMA}_bi" CASCADE`,
  );

  await quietDay(admin);
  await sync(NAMES.unchanged, files.base, 'succeeded');
  await quietDay(admin);
  await sync(NAMES.changed, files.changed, 'succeeded');
  await sync(NAMES.renamed, files.renamed, 'failed');
  await sync(NAMES.empty, files.empty, 'failed');

  const floorAfter = await measureFloor(server, files.base, databaseUrl, admin, log);
  log(`floor after: ${floorText(floorAfter)}`);
  const run = {
    floorBefore,
    floorAfter,
    newFieldsFloor,
    floorSeconds: Math.min(floorBefore.seconds, floorAfter.seconds),
    syncs,
    gzipRequested,
    rowsDifferingFromFloor: firstDiffering + newFieldsDiffering,
    rowsWithoutNewFields,
  };
  return { ...run, targets: judge(run) };
}

/**
 * The server as a nightly run meets it after a quiet day: what autovacuum does after a bulk write
 * done (a first load's 1M rows, the floor's) and the last checkpoint over, so that the first write
 * to each page pays its full-page image in the WAL and nothing else writes meanwhile. Left to
 * itself, autovacuum woke within its minute's nap and vacuumed the first load's tables for about
 * 5 s, beside whichever sync ran then (seen beside the load with new fields, which then took
 * 1.32× the first load against 1.18× without it).
 */
async function quietDay(admin: pg.Client): Promise<void> {
  await admin.query('VACUUM (ANALYZE)');
  await admin.query('CHECKPOINT');
}

/** A flag's whole number, at least `min`; anything else stops the bench before it generates or measures. */
function wholeNumber(flag: string, value: string, min: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min)
    throw new Error(`${flag} must be a whole number of at least ${min}, got "${value}"`);
  return Number(value);
}

function uptime(): string {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average ${loadavg().join(' ')}`;
  }
}

/** The commit measured, with `+changes` when tracked files differ from it; undefined outside a git checkout. */
function commit(): string | undefined {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: PACKAGE_ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const changed = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: PACKAGE_ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return changed === '' ? head : `${head}+changes`;
  } catch {
    return undefined;
  }
}

/** The machine, as the results table in docs/performance.md names it. */
function floorText(floor: { seconds: number; downloadSeconds: number; copySeconds: number }): string {
  const [all, download, copy] = [floor.seconds, floor.downloadSeconds, floor.copySeconds].map((x) => x.toFixed(2));
  return `${all} s (download ${download} + copy ${copy})`;
}

function machine(): string {
  const cores = cpus();
  const gib = Math.round(totalmem() / 2 ** 30);
  return `${cores.length} × ${cores[0]?.model.trim() ?? 'unknown CPU'}, ${gib} GiB, ${platform()} ${release()}`;
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

await main();

/**
 * Rows whose extra_fields lacks one of the two fields every record of the new-fields listing has (a null value still
 * counts as kept).
 */
async function rowsLackingNewFields(admin: pg.Client, schema: string): Promise<number> {
  const { rows } = await admin.query(
    `SELECT count(*)::int AS n FROM "${schema}".bulk_wine_reconciliation
    WHERE NOT coalesce(extra_fields ?& array['inventory_in_transit', 'cellar_note'], false)`,
  );
  return rows[0].n;
}
