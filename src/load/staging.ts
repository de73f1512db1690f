/**
 * Valid records go into a temporary staging table through COPY (text format), streamed with
 * backpressure; set-based SQL then applies them (apply.ts).
 */
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type { PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { Row } from '../row.js';
import { loadStatements, timedQuery } from './statements.js';

const SQL = loadStatements('apply.sql', ['create_staging', 'copy_staging', 'analyze_staging', 'remove_duplicates']);

export interface DuplicateRow {
  position: string;
  record_id: string;
  raw_offset: string;
  raw_length: number;
}

/** One COPY text line (tab separated, `\N` for null, newline terminated). */
export function copyLine(position: number, row: Row, rawOffset: number, rawLength: number, hash: string): string {
  return `${position}\t${row.id}\t${copyText(row.wpi)}\t${nullable(row.inventory_bulk_wine)}\t${nullable(row.inventory_finished_goods)}\t${nullable(
    row.inventory_sales,
  )}\t${nullable(row.vintage_forecast)}\t${nullable(row.vintage_make)}\t${nullable(row.first_sale)}\t${rawOffset}\t${rawLength}\t${hash}\n`;
}

/** The last two COPY fields of a record without a fingerprint. */
export const NO_HASH = '\\N\t\\N';

function nullable(value: string | null): string {
  return value === null ? '\\N' : value;
}

const COPY_SPECIAL = /[\\\t\n\r]/;
/** Text-format COPY escaping: backslash, tab, newline and carriage return. */
function copyText(value: string): string {
  if (!COPY_SPECIAL.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/** Creates the staging table and streams `lines` (COPY text) into it; returns once all are in. */
export async function stageRows(client: PoolClient, lines: AsyncIterable<string | Buffer>, signal?: AbortSignal): Promise<void> {
  await client.query(SQL.create_staging);
  const copy = client.query(copyFrom(SQL.copy_staging));
  await pipeline(lines, copy, signal ? { signal } : {});
}

export async function analyzeStaging(client: PoolClient, log?: Logger): Promise<void> {
  await timedQuery(client, 'analyze_staging', SQL.analyze_staging, undefined, log);
}

/** Keeps the last record of each id; returns the earlier ones, for sync_rejects. */
export async function removeDuplicates(client: PoolClient, log?: Logger): Promise<DuplicateRow[]> {
  return (await timedQuery<DuplicateRow>(client, 'remove_duplicates', SQL.remove_duplicates, undefined, log)).rows;
}
