/** The staged listing against the data tables: classify the changes, then insert, update, restore, soft delete, with history. */
import type { QueryResult, QueryResultRow } from 'pg';
import type { PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('apply.sql', ['count_live', 'classify_changes', 'insert_new', 'update_changed', 'count_changes', 'delete_missing']);

export interface ChangeCounts {
  liveBefore: number;
  inserted: number;
  updated: number;
  restored: number;
  deleted: number;
}

type Timed = <R extends QueryResultRow>(name: keyof typeof SQL, params?: unknown[]) => Promise<QueryResult<R>>;

function timer(client: PoolClient, log?: Logger): Timed {
  return async (name, params) => {
    const started = Date.now();
    const result = await client.query(SQL[name], params);
    log?.debug({ statement: name, rows: result.rowCount, ms: Date.now() - started }, 'statement done');
    return result;
  };
}

/** Compares the staged listing with the table: what a run would insert, update, restore, delete. */
export async function classifyStaged(client: PoolClient, log?: Logger): Promise<ChangeCounts> {
  const timed = timer(client, log);
  const live = await timed<{ live: string }>('count_live');
  await timed('classify_changes');
  const c = (await timed<{ inserted: string; updated: string; restored: string; deleted: string }>('count_changes')).rows[0]!;
  return {
    liveBefore: Number(live.rows[0]!.live),
    inserted: Number(c.inserted),
    updated: Number(c.updated),
    restored: Number(c.restored),
    deleted: Number(c.deleted),
  };
}

/** Applies the classified changes inside the caller's transaction; the caller commits or rolls back. */
export async function applyChanges(client: PoolClient, runId: string, counts: ChangeCounts, log?: Logger): Promise<void> {
  const timed = timer(client, log);
  // Statements with nothing to do are skipped: each would still scan the change table.
  if (counts.inserted > 0) await timed('insert_new', [runId]);
  if (counts.updated + counts.restored > 0) await timed('update_changed', [runId]);
  if (counts.deleted > 0) await timed('delete_missing', [runId]);
}
