/**
 * Valid records go into a temporary staging table through COPY (text format), streamed with
 * backpressure; set-based SQL then applies them (apply.ts).
 */
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type { PoolClient } from '../db/pool.js';
import { loadStatements, timedQuery } from '../db/statements.js';
import type { Logger } from '../log.js';
import { EXTRA_COLUMN, KNOWN_FIELDS } from '../fields.js';

const SQL = loadStatements('load/apply.sql', [
  'create_staging',
  'analyze_staging',
  'remove_duplicates',
  'remove_positions',
]);

/**
 * The staging table's COPY columns, in order: the one definition that both COPY writers follow
 * (copyLine in transform/copy-line.ts, and the byte-level CopyWriter in transform/record-copy.ts,
 * which write KNOWN_FIELDS and extra_fields in this order too). The fingerprint is two int32 halves,
 * then the number of the record's shape (fingerprints/shapes.ts; null: none).
 */
export const STAGING_COLUMNS = [
  'position',
  ...KNOWN_FIELDS,
  EXTRA_COLUMN,
  'raw_offset',
  'raw_length',
  'hash_hi',
  'hash_lo',
  'shape',
] as const;
const COPY_STAGING = `COPY staging_records (${STAGING_COLUMNS.join(', ')}) FROM STDIN`;

export interface DuplicateRow {
  position: string;
  record_id: string;
  raw_offset: string;
  raw_length: number;
}

/** Creates the staging table and streams `lines` (COPY text) into it; returns once all are in. */
export async function stageRows(
  client: PoolClient,
  lines: AsyncIterable<string | Buffer>,
  signal?: AbortSignal,
): Promise<void> {
  await client.query(SQL.create_staging);
  const copy = client.query(copyFrom(COPY_STAGING));
  await pipeline(lines, copy, signal ? { signal } : {});
}

export async function analyzeStaging(client: PoolClient, log?: Logger): Promise<void> {
  await timedQuery(client, 'analyze_staging', SQL.analyze_staging, undefined, log);
}

/** Keeps the last record of each id; returns the earlier ones, for sync_rejects. */
export async function removeDuplicates(client: PoolClient, log?: Logger): Promise<DuplicateRow[]> {
  return (await timedQuery<DuplicateRow>(client, 'remove_duplicates', SQL.remove_duplicates, undefined, log)).rows;
}

/**
 * Removes staged records by position (earlier copies of an id that the unchanged-record shortcut settled); returned for
 * sync_rejects.
 */
export async function removeStagedPositions(client: PoolClient, positions: number[]): Promise<DuplicateRow[]> {
  if (positions.length === 0) return [];
  return (await client.query<DuplicateRow>(SQL.remove_positions, [positions])).rows;
}
