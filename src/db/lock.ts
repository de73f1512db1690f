/**
 * One run at a time per database and schema: a transaction-level advisory lock held by a
 * transaction of its own for the whole run. Rule: never a session-level lock (transaction poolers).
 */
import { SyncError } from '../errors.js';
import { backendPid, type Pool, type PoolClient } from './pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('db/lock.sql', ['try_run_lock', 'lock_alive', 'migrate_lock', 'cancel_backend']);

export class RunLock {
  private constructor(private readonly client: PoolClient) {}

  /**
   * The lock, or undefined when another run holds it. Its transaction waits idle for the whole
   * run: `idleTimeoutMs` (the run's deadline and some) replaces a shorter server setting.
   */
  static async acquire(pool: Pool, schema: string, idleTimeoutMs: number): Promise<RunLock | undefined> {
    const client = await pool.connect();
    try {
      await pool.begin(client, { idleTimeoutMs });
      const { rows } = await client.query<{ locked: boolean }>(SQL.try_run_lock, [schema]);
      if (rows[0]?.locked === true) return new RunLock(client);
      await client.query('ROLLBACK');
      client.release();
      return undefined;
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
  }

  /** Throws when the lock's connection is gone (and with it the lock): the run must not commit. */
  async check(): Promise<void> {
    try {
      await this.client.query(SQL.lock_alive);
    } catch (error) {
      throw new SyncError(
        'LOCK_LOST',
        `the run lock's connection to the database was lost (${(error as Error).message}), so another run ` +
          `may have started: nothing was committed`,
        { cause: error },
      );
    }
  }

  /** Ends the lock's transaction; a connection that cannot roll back is closed, which releases it too. */
  async release(): Promise<void> {
    const failed = await this.client.query('ROLLBACK').then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    this.client.release(failed);
  }
}

/** Waits for any other migrator of this schema; held until the caller's transaction ends. */
export async function migrateLock(client: PoolClient, schema: string): Promise<void> {
  await client.query(SQL.migrate_lock, [schema]);
}

/** Cancels the statement `client` is executing, from another connection of `pool`; never throws. */
export async function cancelStatement(pool: Pool, client: PoolClient): Promise<void> {
  const pid = backendPid(client);
  if (pid) await pool.query(SQL.cancel_backend, [pid]).catch(() => undefined);
}
