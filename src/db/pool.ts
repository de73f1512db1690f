/** The pg pool, set up so that values arrive exactly: numeric and bigint as text, date as its text. */
import pg from 'pg';

const DATE_OID = 1082;

const exactTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    // `date` would become a JS Date at local midnight; keep 'YYYY-MM-DD' as written.
    if (oid === DATE_OID) return (value: string) => value;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export interface PoolOptions {
  databaseUrl: string;
  schema: string;
  max?: number;
  /** lock_timeout of every statement (migrations, audit); the run's transaction sets its own too. */
  lockTimeoutMs?: number;
  onError?: (error: Error) => void;
}

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.max ?? 4,
    application_name: 'wine-recon-sync',
    types: exactTypes,
    // Every table is in SYNC_DB_SCHEMA; unqualified names in sql/ resolve there.
    options: `-c search_path=${quoteIdent(options.schema)}${options.lockTimeoutMs === undefined ? '' : ` -c lock_timeout=${options.lockTimeoutMs}`}`,
    connectionTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the daemon.
  pool.on('error', (error) => options.onError?.(error));
  return pool;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * A statement with `{{name}}` placeholders for identifiers (a schema, a database), which SQL
 * parameters cannot stand for: each is substituted quoted, so no name can change the statement.
 */
export function withIdentifiers(sql: string, names: Record<string, string>): string {
  return sql.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const name = names[key];
    if (name === undefined) throw new Error(`no identifier given for {{${key}}}`);
    return quoteIdent(name);
  });
}

/** Runs `work` in a transaction on a client of its own; rolls back on any error. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
