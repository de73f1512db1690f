/**
 * One run at a time per database and schema: a session-level advisory lock held by the run's
 * own connection, so a killed process releases it with its connection.
 */
import type { PoolClient } from './pool.js';

const RUN_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended('wine-recon-sync:run:' || $1, 0)) AS locked";
const RUN_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended('wine-recon-sync:run:' || $1, 0))";
export const MIGRATE_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('wine-recon-sync:migrate:' || $1, 0))";

export async function tryRunLock(client: PoolClient, schema: string): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(RUN_LOCK_SQL, [schema]);
  return rows[0]?.locked === true;
}

export async function releaseRunLock(client: PoolClient, schema: string): Promise<void> {
  await client.query(RUN_UNLOCK_SQL, [schema]);
}
