/**
 * The staged listing against the data tables: classify the changes, then insert, update, restore, soft delete, with
 * history.
 */
import type { QueryResult, QueryResultRow } from 'pg';
import type { PoolClient } from '../db/pool.js';
import { LATE_COLUMNS } from '../fields.js';
import type { Logger } from '../log.js';
import { loadStatements, timedQuery } from '../db/statements.js';
import { analyzeStaging } from './staging.js';

const SQL = loadStatements('load/apply.sql', [
  'is_empty',
  'insert_all',
  'create_changes',
  'classify_changes',
  'insert_new',
  'close_versions',
  'update_changed',
  'count_changes',
  'delete_missing',
  'any_kept',
  'clear_kept',
  'mark_kept',
  'late_cutoffs',
  'backfill_late',
  'planner_off',
  'planner_restore',
]);

/**
 * With at most this share of the live rows to compare, and at most FEW_MISSING live ids absent
 * from the listing, classify_changes looks each record up by id instead of reading the whole table.
 */
const LOOKUP_SHARE = 0.02;
const FEW_MISSING = 100;

export interface ChangeCounts {
  /** The table was empty: every staged record is inserted as it is, without a comparison. */
  initialLoad: boolean;
  liveBefore: number;
  inserted: number;
  updated: number;
  restored: number;
  deleted: number;
  /** Rows filled in place with late columns they could not store (LATE_COLUMNS): not versioned, not updated. */
  backfilled: number;
}

type Timed = <R extends QueryResultRow>(name: keyof typeof SQL, params?: unknown[]) => Promise<QueryResult<R>>;

function timer(client: PoolClient, log?: Logger): Timed {
  return (name, params) => timedQuery(client, name, SQL[name], params, log);
}

/**
 * Compares the staged records with their rows, and takes the live ids the listing did not have
 * (`missing`) as deletions: what a run would insert, update, restore, delete. `staged` and
 * `liveBefore` are the caller's counts, for an initial load (an empty table) that needs no
 * comparison; `compared` is how many were staged to be compared (not skipped as unchanged). One
 * statement for every run, whether or not the shortcut skipped records.
 */
export async function classifyChanges(
  client: PoolClient,
  {
    staged,
    compared,
    liveBefore,
    missing,
  }: { staged: number; compared: number; liveBefore: number; missing: string[] },
  log?: Logger,
): Promise<ChangeCounts> {
  const timed = timer(client, log);
  if (liveBefore === 0 && (await timed<{ empty: boolean }>('is_empty')).rows[0]!.empty) {
    return { initialLoad: true, liveBefore: 0, inserted: staged, updated: 0, restored: 0, deleted: 0, backfilled: 0 };
  }
  // Statistics only matter for the join plan; an initial load reads the staging table once, in order.
  await analyzeStaging(client, log);
  // The partial index holds the marked rows only. Right after a first load the table has no
  // statistics, and the planner, taking most rows for marked, would read all of them to find none.
  const anyKept = await withPlannerOff(client, ['enable_seqscan'], () => timed<{ any: boolean }>('any_kept'));
  if (anyKept.rows[0]!.any) await timed('clear_kept');
  await timed('create_changes');
  const cutoffs = (await timed<{ cutoffs: string[] }>('late_cutoffs', [LATE_COLUMNS.map((c) => c.since)])).rows[0]!
    .cutoffs;
  // A few changed records (a nightly re-sync: most were skipped as unchanged) are looked up by id.
  // The planner prices each lookup as a read from disk and reads the whole table instead, but the
  // run has just read every live row in id order (the shortcut's copy_live_out): their pages are in memory.
  // A few missing ids too: without hash joins, each is checked against every staged record.
  const few = compared <= liveBefore * LOOKUP_SHARE && missing.length <= FEW_MISSING;
  await withPlannerOff(client, few ? ['enable_hashjoin', 'enable_mergejoin'] : [], () =>
    timed('classify_changes', [missing, cutoffs]),
  );
  const c = (
    await timed<{ inserted: string; updated: string; restored: string; deleted: string; backfilled: string }>(
      'count_changes',
    )
  ).rows[0]!;
  return {
    initialLoad: false,
    liveBefore,
    inserted: Number(c.inserted),
    updated: Number(c.updated),
    restored: Number(c.restored),
    deleted: Number(c.deleted),
    backfilled: Number(c.backfilled),
  };
}

/**
 * Runs `statement` with the planner's methods `off` for it alone, then sets them back as they were
 * (SET LOCAL: the run's transaction holds them otherwise).
 */
async function withPlannerOff<R>(client: PoolClient, off: string[], statement: () => Promise<R>): Promise<R> {
  if (off.length === 0) return statement();
  const was = (await client.query<{ name: string; setting: string }>(SQL.planner_off, [off])).rows;
  const result = await statement();
  await client.query(SQL.planner_restore, [was.map((w) => w.name), was.map((w) => w.setting)]);
  return result;
}

/** Applies the classified changes inside the caller's transaction; the caller commits or rolls back. */
export async function applyChanges(
  client: PoolClient,
  runId: string,
  counts: ChangeCounts,
  log?: Logger,
): Promise<void> {
  const timed = timer(client, log);
  if (counts.initialLoad) {
    await timed('insert_all', [runId]);
    return;
  }
  // Statements with nothing to do are skipped: each would still scan the change table.
  if (counts.inserted > 0) await timed('insert_new', [runId]);
  if (counts.updated + counts.deleted > 0) await timed('close_versions');
  if (counts.updated + counts.restored > 0) await timed('update_changed', [runId]);
  if (counts.deleted > 0) await timed('delete_missing', [runId]);
  if (counts.backfilled > 0) await timed('backfill_late');
}

/**
 * Live rows whose id this run rejected and had no valid record of: kept as their last valid
 * version and marked with the run (rejected_in_run); returns how many. After the changes are
 * applied and their fingerprints saved: the fingerprints of these rows are dropped.
 */
export async function keepRejected(client: PoolClient, runId: string, ids: string[], log?: Logger): Promise<number> {
  if (ids.length === 0) return 0;
  return Number((await timer(client, log)<{ kept: string }>('mark_kept', [runId, ids])).rows[0]!.kept);
}
