/** Applies the staged listing to the data tables: insert, update, restore, soft delete, history. */
import type { PoolClient } from '../db/pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('apply.sql', ['count_live', 'classify_changes', 'insert_new', 'update_changed', 'count_changes', 'delete_missing']);

export interface ApplyCounts {
  liveBefore: number;
  inserted: number;
  updated: number;
  restored: number;
  deleted: number;
}

/** Runs inside the caller's transaction; the caller decides to commit or roll back. */
export async function applyStaged(client: PoolClient, runId: string): Promise<ApplyCounts> {
  const live = await client.query<{ live: string }>(SQL.count_live);
  await client.query(SQL.classify_changes);
  const counts = await client.query<{ inserted: string; updated: string; restored: string }>(SQL.count_changes);
  await client.query(SQL.insert_new, [runId]);
  await client.query(SQL.update_changed, [runId]);
  const deleted = await client.query<{ deleted: string }>(SQL.delete_missing, [runId]);
  const c = counts.rows[0]!;
  return {
    liveBefore: Number(live.rows[0]!.live),
    inserted: Number(c.inserted),
    updated: Number(c.updated),
    restored: Number(c.restored),
    deleted: Number(deleted.rows[0]!.deleted),
  };
}
