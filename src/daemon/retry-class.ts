/**
 * Which failed runs the daemon tries again (SYNC_RUN_RETRY_DELAYS): one table, by error code, with
 * the reason for each. docs/operations.md's "Which failures are retried" is this table in words; a unit
 * test checks that every code the job raises has exactly one row.
 *
 * Retried: a cause that passes by itself (an upstream outage, a failover, a maintenance window, a
 * lock held by someone's long query). Not retried: a cause that needs a person; trying again would
 * fail the same way, or would get past a guard that exists to stop the load until someone looks.
 */
import { SyncError, UpstreamError, type ErrorCode } from '../errors.js';

export type RetryClass = 'retried' | 'needs-a-person';

export interface RetryRule {
  class: RetryClass;
  /** One line: why (printed in docs/operations.md's table). */
  why: string;
}

/** Every SyncError code. UPSTREAM, PROXY: by the error's own `retryable` (decided from the HTTP status). */
export const RETRY_BY_CODE: Readonly<Record<ErrorCode, RetryRule>> = {
  UPSTREAM: {
    class: 'retried',
    why: 'the upstream unreachable, a 5xx or 429 after the request-level retries, a body cut off; an upstream 4xx other than 408/429, or an answer that is not a listing, needs a person (the address or the upstream changed)',
  },
  PROXY: {
    class: 'retried',
    why: 'the proxy unreachable or answering 502/503/504; a proxy that refuses (407, 403) needs a person (its credentials or its rules)',
  },
  INVALID_LISTING: {
    class: 'retried',
    why: 'a listing cut short or whose envelope counts disagree with its records: usually the upstream answering mid-update',
  },
  LOCK_TIMEOUT: {
    class: 'retried',
    why: 'another session held a table lock past SYNC_LOCK_TIMEOUT_MS; its query ends',
  },
  RUN_TIMEOUT: {
    class: 'retried',
    why: 'the run deadline on a slow night; the next attempt may find the upstream or the database faster',
  },
  LOCK_LOST: {
    class: 'retried',
    why: "the run lock's connection was lost (a pooler or server restart, a failover): nothing was committed, and the retry takes the lock again",
  },
  LOGIN_REFUSED: {
    class: 'needs-a-person',
    why: 'login refused (401/403): the credentials are wrong or the account locked; retrying could lock it further',
  },
  TLS: { class: 'needs-a-person', why: "the upstream's certificate is refused: a CA, a host name or an expiry to fix" },
  CONFIG: {
    class: 'needs-a-person',
    why: 'a setting is wrong (the message names it); it stays wrong until someone changes it',
  },
  USAGE: { class: 'needs-a-person', why: 'a command-line mistake; never reaches a scheduled run' },
  HELP: { class: 'needs-a-person', why: '--help is not a run' },
  NOT_FOUND: { class: 'needs-a-person', why: 'a --from-file or --run that does not exist; never a scheduled run' },
  REJECT_THRESHOLD: {
    class: 'needs-a-person',
    why: 'too many records rejected: the guard stops the load until someone reads the rejects',
  },
  MASS_DELETE: {
    class: 'needs-a-person',
    why: 'the run would soft-delete too many rows: the guard waits for a person (or --allow-mass-delete)',
  },
  SCHEMA_CHANGE: {
    class: 'needs-a-person',
    why: 'a field vanished from the listing: the guard waits for a person (or --accept-schema-change)',
  },
  CHECK_FAILED: {
    class: 'needs-a-person',
    why: 'an error-level check failed on what the run would commit: a person looks at the data (or runs with --accept-check)',
  },
  SCHEMA_TOO_NEW: {
    class: 'needs-a-person',
    why: 'the database was migrated by a newer release: this one must be upgraded',
  },
  CATALOGUE_MISMATCH: {
    class: 'needs-a-person',
    why: 'the tables and the field catalogue disagree: someone changed the tables by hand',
  },
  LOCAL_DISK: {
    class: 'needs-a-person',
    why: 'the local disk is full, read-only or not ours: it stays so until someone frees or fixes it',
  },
  LOCK_HELD: {
    class: 'needs-a-person',
    why: 'another run holds the lock: that run does the work, and its outcome stands (the tick is skipped, not failed)',
  },
  ABORTED: {
    class: 'needs-a-person',
    why: 'SIGTERM/SIGINT stopped the run: someone is stopping the daemon (catch-up at the next start picks the slot up)',
  },
};

/**
 * Database errors that are not SyncErrors, by SQLSTATE or by Node's system error code. Class 08
 * (connection exception) is retried as a whole; everything named here is by its code.
 */
export const RETRY_BY_DATABASE_CODE: Readonly<Record<string, RetryRule>> = {
  '57P01': { class: 'retried', why: "an administrator's shutdown (admin_shutdown), a restart or a failover" },
  '57P02': { class: 'retried', why: "the server's crash recovery (crash_shutdown)" },
  '57P03': { class: 'retried', why: 'the server cannot accept connections yet (starting up, in recovery)' },
  '25006': {
    class: 'retried',
    why: 'a read-only transaction: the connection reached a standby after a failover; the next one finds the primary',
  },
  '55P03': { class: 'retried', why: 'a lock not available (lock_timeout): another session held a table lock' },
  '40001': {
    class: 'retried',
    why: 'a serialization failure: the same work succeeds once the other transaction is gone',
  },
  '40P01': { class: 'retried', why: 'a deadlock: one side was chosen to fail; the retry goes through' },
  '53300': { class: 'retried', why: 'too many connections: others end theirs' },
  '58000': { class: 'retried', why: 'a system error at the server (an I/O error during a failover)' },
  ECONNREFUSED: { class: 'retried', why: 'nothing listens at the database address yet (restart, failover)' },
  ECONNRESET: { class: 'retried', why: 'the connection was cut mid-run' },
  ETIMEDOUT: { class: 'retried', why: 'the database did not answer in time' },
  EPIPE: { class: 'retried', why: 'the connection was cut mid-run' },
  EHOSTUNREACH: { class: 'retried', why: 'no route to the database host (a network outage)' },
  ENETUNREACH: { class: 'retried', why: 'no network to the database host' },
  EAI_AGAIN: { class: 'retried', why: 'a DNS lookup that may answer on the next try' },
  '28P01': { class: 'needs-a-person', why: 'the database refused the password: a secret to fix' },
  '28000': { class: 'needs-a-person', why: 'the database refused this user (pg_hba.conf)' },
  '3D000': { class: 'needs-a-person', why: 'the database does not exist' },
  '42501': { class: 'needs-a-person', why: 'a privilege is missing (the message gives the GRANT)' },
  '53100': { class: 'needs-a-person', why: "the database server's disk is full" },
  ENOTFOUND: { class: 'needs-a-person', why: 'the database host name does not exist: DATABASE_URL is wrong' },
};

/** Any other error: one not foreseen, such as pg's "Connection terminated unexpectedly", which has no code. */
export const RETRY_OTHERWISE: RetryRule = {
  class: 'retried',
  why: 'a failure not foreseen above (pg reports a connection ended by the server without a code): it may pass, and retries are few and end at the next slot',
};

/** The rule for `error`, as thrown by runSync (or recorded as a run's failure). */
export function retryRule(error: unknown): RetryRule {
  if (error instanceof SyncError) {
    const rule = RETRY_BY_CODE[error.code];
    // UpstreamError says itself whether another attempt may help (the HTTP status decides).
    if (error instanceof UpstreamError && (error.code === 'UPSTREAM' || error.code === 'PROXY') && !error.retryable) {
      return { class: 'needs-a-person', why: rule.why };
    }
    return rule;
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    const rule = RETRY_BY_DATABASE_CODE[code];
    if (rule) return rule;
    if (code.startsWith('08'))
      return { class: 'retried', why: 'a connection exception (SQLSTATE class 08): the connection failed or was lost' };
  }
  return RETRY_OTHERWISE;
}

/** A Retry-After the upstream gave with the failure (ms from when it was read), if any. */
export function retryAfterOf(error: unknown): number | undefined {
  return error instanceof UpstreamError ? error.retryAfterMs : undefined;
}
