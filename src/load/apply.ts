/** Applies the staged listing to the data tables: insert, update, restore, soft delete, history. */
import type { QueryResultRow } from 'pg';
import type { PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('apply.sql', ['count_live', 'classify_changes', 'insert_new', 'insert_new_history', 'update_changed', 'count_changes', 'delete_missing']);

export interface ApplyCounts {
  liveBefore: number;
  inserted: number;
  updated: number;
  restored: number;
  deleted: number;
}

/** Runs inside the caller's transaction; the caller decides to commit or roll back. */
export async function applyStaged(client: PoolClient, runId: string, log?: Logger): Promise<ApplyCounts> {
  const timed = async <R extends QueryResultRow>(name: keyof typeof SQL, params?: unknown[]) => {
    const started = Date.now();
    const result = await client.query<R>(SQL[name], params);
    log?.debug({ statement: name, rows: result.rowCount, ms: Date.now() - started }, 'statement done');
    return result;
  };
  const live = await timed<{ live: string }>('count_live');
  await timed('classify_changes');
  const counts = await timed<{ inserted: string; updated: string; restored: string }>('count_changes');
  const c = counts.rows[0]!;
  const result = {
    liveBefore: Number(live.rows[0]!.live),
    inserted: Number(c.inserted),
    updated: Number(c.updated),
    restored: Number(c.restored),
    deleted: 0,
  };
  // Statements with nothing to do are skipped: each would still scan a million rows.
  if (result.inserted > 0) {
    await timed('insert_new', [runId]);
    await timed('insert_new_history', [runId]);
  }
  if (result.updated + result.restored > 0) await timed('update_changed', [runId]);
  if (result.liveBefore > 0) result.deleted = Number((await timed<{ deleted: string }>('delete_missing', [runId])).rows[0]!.deleted);
  return result;
}
