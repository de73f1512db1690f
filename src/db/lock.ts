/**
 * One run at a time per database and schema: a session-level advisory lock held by the run's
 * own connection, so a killed process releases it with its connection.
 */
import type { Pool, PoolClient } from './pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('db/lock.sql', ['try_run_lock', 'release_run_lock', 'migrate_lock', 'cancel_backend']);

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

/** The server process of a connection (pg keeps it from the BackendKeyData message). */
export function backendPid(client: PoolClient): number {
  return (client as unknown as { processID?: number }).processID ?? 0;
}

/** Cancels the statement `client` is executing, from another connection of `pool`; never throws. */
export async function cancelStatement(pool: Pool, client: PoolClient): Promise<void> {
  const pid = backendPid(client);
  if (pid) await pool.query(SQL.cancel_backend, [pid]).catch(() => undefined);
}
