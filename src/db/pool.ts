/**
 * The database connections, set up so that values arrive exactly (numeric and bigint as text, date
 * as its text) and so that the job works through a transaction pooler (PgBouncer in
 * `pool_mode = transaction`, Supabase's and Neon's pooled addresses): a pooled server connection
 * belongs to us only for the length of one transaction, so nothing here relies on state that
 * outlives one. No startup `options` (PgBouncer refuses them), no session `SET`: every transaction
 * starts with `SET LOCAL search_path` and `lock_timeout` (begin), and `query` runs its statement in
 * a transaction of its own that does the same.
 */
import pg from 'pg';
import type { QueryResult, QueryResultRow } from 'pg';
import { Connector, type DatabaseSettings } from './connection.js';

const DATE_OID = 1082;

const exactTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    // `date` would become a JS Date at local midnight; keep 'YYYY-MM-DD' as written.
    if (oid === DATE_OID) return (value: string) => value;
    return pg.types.getTypeParser(oid, format);
  },
};

export type PoolClient = pg.PoolClient;

export interface PoolOptions {
  databaseUrl: string;
  /** How each new connection is made (config.ts's `database`); by default from databaseUrl alone. */
  connection?: DatabaseSettings;
  schema: string;
  max?: number;
  /** lock_timeout of every transaction begun here (0: none); a run's own transaction may set its own. */
  lockTimeoutMs?: number;
  onError?: (error: Error) => void;
}

export interface BeginOptions {
  /**
   * Transaction modes after BEGIN, e.g. `ISOLATION LEVEL REPEATABLE READ READ ONLY` (a constant, never outside text).
   */
  mode?: string;
  /** This transaction's lock_timeout, instead of the pool's. */
  lockTimeoutMs?: number;
  /**
   * This transaction's idle_in_transaction_session_timeout: a run's transactions wait idle while
   * the listing downloads, bounded by SYNC_RUN_TIMEOUT_MS rather than by a shorter server default.
   */
  idleTimeoutMs?: number;
}

/** The backend of each client's current transaction, as begin() read it (see backendPid). */
const backends = new WeakMap<PoolClient, number>();

export class Pool {
  private readonly pg: pg.Pool;
  private readonly connector: Connector;
  private readonly setSchema: string;
  /** Connected clients, until their connection has closed. */
  private readonly open = new Set<pg.PoolClient>();

  constructor(private readonly options: PoolOptions) {
    // The connection settings are read afresh for each new connection (connection.ts).
    this.connector = new Connector(options.connection ?? { url: options.databaseUrl });
    this.pg = new pg.Pool({
      Client: this.connector.Client as unknown as new () => pg.ClientBase,
      max: options.max ?? 6,
      application_name: 'wine-recon-sync',
      types: exactTypes,
      connectionTimeoutMillis: 30_000,
    });
    // An idle client losing its connection must not crash the daemon.
    this.pg.on('error', (error) => options.onError?.(error));
    this.pg.on('connect', (client) => {
      this.open.add(client);
      client.once('end', () => this.open.delete(client));
      // A connection that fails while checked out (the run lock's, held idle for a whole run, whose
      // server process an administrator ends) would otherwise crash the process with an unhandled
      // 'error' event: its next query rejects with the error instead, and an idle one's failure is
      // reported through the pool's 'error' above.
      client.on('error', () => undefined);
    });
    this.setSchema = `SET LOCAL search_path TO ${quoteIdent(options.schema)}`;
  }

  get schema(): string {
    return this.options.schema;
  }

  /**
   * One statement (or a script of statements without parameters) in a transaction of its own, on
   * the schema's search_path. Three round trips instead of one: used for the audit rows, the
   * rejects and other short work, never per record.
   */
  // `any` rows by default, as pg's own query().
  async query<R extends QueryResultRow = any>(text: string, values?: unknown[]): Promise<QueryResult<R>> {
    return this.transaction((client) => client.query<R>(text, values));
  }

  /** A connection for work of several statements; its work goes between begin() and COMMIT or ROLLBACK. */
  connect(): Promise<PoolClient> {
    return this.connector.connect(this.pg);
  }

  /**
   * BEGIN on `client`, with this transaction's search_path and lock_timeout, in one round trip.
   * Returns the server process of the transaction: through a transaction pooler the connection's
   * own BackendKeyData names the pooler's process, not the server's, and pg_cancel_backend or
   * pg_stat_activity need the server's.
   */
  async begin(client: PoolClient, options: BeginOptions = {}): Promise<number> {
    const lockTimeoutMs = options.lockTimeoutMs ?? this.options.lockTimeoutMs;
    const script = [
      options.mode ? `BEGIN ${options.mode}` : 'BEGIN',
      this.setSchema,
      ...(lockTimeoutMs === undefined ? [] : [`SET LOCAL lock_timeout = ${Math.trunc(lockTimeoutMs)}`]),
      ...(options.idleTimeoutMs === undefined
        ? []
        : [`SET LOCAL idle_in_transaction_session_timeout = ${Math.trunc(options.idleTimeoutMs)}`]),
      'SELECT pg_backend_pid() AS pid',
    ].join('; ');
    const results = (await client.query(script)) as unknown as QueryResult<{ pid: number }>[];
    const pid = results.at(-1)!.rows[0]!.pid;
    backends.set(client, pid);
    return pid;
  }

  /** Runs `work` in a transaction on a client of its own; rolls back on any error. */
  async transaction<T>(work: (client: PoolClient) => Promise<T>, options: BeginOptions = {}): Promise<T> {
    const client = await this.connector.connect(this.pg);
    let broken: Error | undefined;
    try {
      await this.begin(client, options);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      broken = await client.query('ROLLBACK').then(
        () => undefined,
        (rollbackError: unknown) => rollbackError as Error,
      );
      throw error;
    } finally {
      backends.delete(client);
      // A connection whose rollback failed is in an unknown state: closed, not reused.
      client.release(broken);
    }
  }

  /**
   * Resolves once every connection has closed. pg's own end() resolves when its clients are told to
   * end, before their sockets close: a server stopped right after (the demo's embedded one) would
   * still find them, and their "terminating connection" would be logged as a failure.
   */
  async end(): Promise<void> {
    const closing = [...this.open].map((client) => new Promise((resolve) => client.once('end', resolve)));
    await this.pg.end();
    await Promise.all(closing);
  }
}

export function createPool(options: PoolOptions): Pool {
  return new Pool(options);
}

/**
 * The server process of `client`'s current transaction (0 before begin()): for pg_cancel_backend and pg_stat_activity.
 */
export function backendPid(client: PoolClient): number {
  return backends.get(client) ?? 0;
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
