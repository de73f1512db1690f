/**
 * The floor, measured the way acceptance measures it: the listing downloaded with
 * `curl --compressed` (gzip when the server offers it), plus `psql \copy` of the same rows into a
 * table with a primary key. Without curl or psql on PATH it says so and measures the same steps
 * from Node (http download, pg-copy-streams COPY).
 */
import { spawnSync, execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { get } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { ListingFiles } from './listing-files.js';
import type { ListingServer } from './listing-server.js';

const run = promisify(execFile);
const TABLE = 'bench_floor.bulk_wine_reconciliation';
const COLUMNS =
  'id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales, vintage_forecast, vintage_make, first_sale, extra_fields';

export interface Floor {
  seconds: number;
  downloadSeconds: number;
  copySeconds: number;
  tools: string;
}

export function available(program: string): boolean {
  return spawnSync(program, ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function measureFloor(
  server: ListingServer,
  files: ListingFiles,
  databaseUrl: string,
  admin: pg.Client,
  log: (m: string) => void,
): Promise<Floor> {
  const curl = available('curl');
  const psql = available('psql');
  if (!curl) log('curl is not on PATH: the floor download is measured with node:http instead');
  if (!psql) log('psql is not on PATH: the floor COPY is measured with pg-copy-streams instead');
  server.serve(files);
  const url = `${server.url}/api/bulk-wine-reconciliation-data?for_reporting=1`;
  const headers = { serviceapp: 'mobile', authorization: `Bearer ${server.token()}` };
  const downloadSeconds = await seconds(() => (curl ? curlDownload(url, headers) : nodeDownload(url, headers)));

  await admin.query(`DROP SCHEMA IF EXISTS bench_floor CASCADE; CREATE SCHEMA bench_floor;
    CREATE TABLE ${TABLE} (id bigint PRIMARY KEY, wpi text NOT NULL,
      inventory_bulk_wine numeric, inventory_finished_goods numeric,
      inventory_sales numeric, vintage_forecast numeric, vintage_make numeric, first_sale date, extra_fields jsonb)`);
  const tsv = files.rowsTsv!;
  const copySeconds = await seconds(() => (psql ? psqlCopy(databaseUrl, tsv) : nodeCopy(admin, tsv)));
  server.takeEncodings();
  return {
    seconds: downloadSeconds + copySeconds,
    downloadSeconds,
    copySeconds,
    tools: `${curl ? 'curl --compressed' : 'node:http'} + ${psql ? 'psql \\copy' : 'pg-copy-streams'}`,
  };
}

/**
 * Rows of the floor's table (the last floor measured) that differ from the sync's table: 0 when the sync loaded exactly
 * the same rows.
 */
export async function rowsDifferingFromFloor(admin: pg.Client, schema: string): Promise<number> {
  // Whole rows as text: numerics compare digit for digit (1.50 and 1.5 would be equal as numbers).
  const { rows } = await admin.query(`SELECT count(*)::int AS n
    FROM ${TABLE} f FULL JOIN (SELECT ${COLUMNS} FROM "${schema}".bulk_wine_reconciliation) s ON s.id = f.id
    WHERE f::text IS DISTINCT FROM s::text`);
  return rows[0].n;
}

async function curlDownload(url: string, headers: Record<string, string>): Promise<void> {
  const args = ['--compressed', '--fail', '--silent', '--show-error', '--output', '/dev/null'];
  for (const [name, value] of Object.entries(headers)) args.push('--header', `${name}: ${value}`);
  await run('curl', [...args, url]);
}

function nodeDownload(url: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      res.on('data', () => undefined);
      res.on('end', resolve);
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function psqlCopy(databaseUrl: string, tsv: string): Promise<void> {
  await run('psql', [
    databaseUrl,
    '--quiet',
    '--no-psqlrc',
    '--set',
    'ON_ERROR_STOP=1',
    '--command',
    `\\copy ${TABLE} (${COLUMNS}) FROM '${tsv}'`,
  ]);
}

async function nodeCopy(admin: pg.Client, tsv: string): Promise<void> {
  await pipeline(
    createReadStream(tsv, { highWaterMark: 1 << 20 }),
    admin.query(copyFrom(`COPY ${TABLE} (${COLUMNS}) FROM STDIN`)),
  );
}

async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - started) / 1e9;
}
