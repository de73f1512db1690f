/**
 * One run at a time per database and schema: a session-level advisory lock held by the run's
 * own connection, so a killed process releases it with its connection.
 */
import type { PoolClient } from './pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('db/lock.sql', ['try_run_lock', 'release_run_lock', 'migrate_lock']);

export async function tryRunLock(client: PoolClient, schema: string): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(SQL.try_run_lock, [schema]);
  return rows[0]?.locked === true;
}

export async function releaseRunLock(client: PoolClient, schema: string): Promise<void> {
  await client.query(SQL.release_run_lock, [schema]);
}

/** Waits for any other migrator of this schema; held until the caller's transaction ends. */
export async function migrateLock(client: PoolClient, schema: string): Promise<void> {
  await client.query(SQL.migrate_lock, [schema]);
}
