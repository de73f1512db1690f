/**
 * A first load's COPY straight into bulk_wine_reconciliation while the listing is parsed. Rule: the
 * run decides it before the COPY starts, in its transaction and under its lock (docs/internals.md).
 */
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type { PoolClient } from '../db/pool.js';
import { loadStatements, timedQuery } from '../db/statements.js';
import type { Logger } from '../log.js';
import { countBiRoundingSettled } from './bi-rounding.js';
import { stageRows, type DuplicateRow } from './staging.js';

const SQL = loadStatements('load/first_load.sql', ['marks', 'copy_rows', 'settle_copies', 'write_winners']);
const APPLY = loadStatements('load/apply.sql', ['is_empty']);

/** What every row of a first load carries, read once in the run's transaction. */
export interface FirstLoadMarks {
  /** The run's transaction id: the xmin of every row it inserts. */
  xmin: number;
  /** The tab-led columns after a row's fields (first_seen_at, changed_at, run_id) and the newline. */
  rowSuffix: string;
}

/** When the table has no row at all (soft-deleted ones included): what a first load needs; otherwise undefined. */
export async function firstLoadMarks(
  client: PoolClient,
  runId: string,
  log?: Logger,
): Promise<FirstLoadMarks | undefined> {
  const empty = (await timedQuery<{ empty: boolean }>(client, 'is_empty', APPLY.is_empty, undefined, log)).rows[0]!
    .empty;
  if (!empty) return undefined;
  const marks = (await client.query<{ xmin: string; now: string }>(SQL.marks)).rows[0]!;
  return { xmin: Number(marks.xmin), rowSuffix: `\t${marks.now}\t${marks.now}\t${runId}\n` };
}

/** Streams `lines` (transform/copy-line.ts rowLine's form) into bulk_wine_reconciliation; returns once all are in. */
export async function copyRows(
  client: PoolClient,
  lines: AsyncIterable<string | Buffer>,
  signal?: AbortSignal,
): Promise<void> {
  await pipeline(lines, client.query(copyFrom(SQL.copy_rows)), signal ? { signal } : {});
}

/**
 * The copies set aside (a file of staging lines, `path`) against the copies already in the table
 * (`inTable`: their id and listing position): the last copy of each id wins and is written. Returns
 * the losers set aside (for sync_rejects), the ids whose winner was written, so a copy in the
 * table of one of them lost, and what writing the winners changed in the BI rounding count at
 * scale `biScale` (the rows of those ids counted before and after: the table's copies were counted
 * as they were written). staging_records is left holding the winners written.
 */
export async function settleSetAside(
  client: PoolClient,
  {
    runId,
    path,
    inTable,
    biScale,
  }: { runId: string; path: string; inTable: ReadonlyArray<{ id: string; position: number }>; biScale: number },
  log?: Logger,
): Promise<{ losers: DuplicateRow[]; written: Set<string>; biChange: { rounded: number; overflow: number } }> {
  const started = Date.now();
  await stageRows(client, createReadStream(path));
  log?.debug({ statement: 'copy_set_aside', ms: Date.now() - started }, 'statement done');
  const ids = inTable.map((c) => c.id);
  const positions = inTable.map((c) => c.position);
  const losers = (await timedQuery<DuplicateRow>(client, 'settle_copies', SQL.settle_copies, [ids, positions], log))
    .rows;
  const before = await countBiRoundingSettled(client, biScale, log);
  const written = (await timedQuery<{ id: string }>(client, 'write_winners', SQL.write_winners, [runId], log)).rows;
  const after = await countBiRoundingSettled(client, biScale, log);
  const biChange = { rounded: after.rounded - before.rounded, overflow: after.overflow - before.overflow };
  return { losers, written: new Set(written.map((r) => r.id)), biChange };
}
