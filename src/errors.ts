/**
 * One base error with a stable `code` and an exit code; subclasses name the failure.
 * Code branches on classes or codes, never on message text.
 */
export type ErrorCode =
  | 'CONFIG'
  | 'USAGE'
  | 'HELP'
  | 'UPSTREAM'
  | 'TLS'
  | 'PROXY'
  | 'LOGIN_REFUSED'
  | 'INVALID_LISTING'
  | 'REJECT_THRESHOLD'
  | 'MASS_DELETE'
  | 'SCHEMA_CHANGE'
  | 'LOCK_HELD'
  | 'ABORTED'
  | 'NOT_FOUND'
  | 'LOCK_TIMEOUT'
  | 'RUN_TIMEOUT'
  | 'LOCAL_DISK'
  | 'CATALOGUE_MISMATCH'
  | 'SCHEMA_TOO_NEW'
  | 'LOCK_LOST'
  | 'CHECK_FAILED';

export class SyncError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: number;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.exitCode = options?.exitCode ?? 1;
  }
}

/** Bad or missing configuration: exit 2, the message names each variable. */
export class ConfigError extends SyncError {
  constructor(message: string) {
    super('CONFIG', message, { exitCode: 2 });
  }
}

/** Bad command line: exit 2. */
export class UsageError extends SyncError {
  constructor(message: string) {
    super('USAGE', message, { exitCode: 2 });
  }
}

/** `--help`/`-h`: not a failure; the message is the usage text, printed on stdout, exit 0. */
export class HelpRequested extends SyncError {
  constructor(usage: string) {
    super('HELP', usage, { exitCode: 0 });
  }
}

/**
 * A mistake in what the user asked for, found before any run row is written (a --from-file that
 * cannot be read, a --run without a payload): exit 2, no run recorded, nobody notified.
 */
export class SourceError extends SyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('NOT_FOUND', message, { exitCode: 2, cause: options?.cause });
  }
}

/** Usage, configuration and source mistakes (exit 2): the user's to fix, not a failed run. */
export function isUsageMistake(error: unknown): boolean {
  return error instanceof SyncError && error.exitCode === 2;
}

/** The upstream API failed; `retryable` tells the retry loop whether another attempt may help. */
export class UpstreamError extends SyncError {
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    options: { retryable: boolean; status?: number; retryAfterMs?: number; cause?: unknown; code?: ErrorCode },
  ) {
    super(options.code ?? 'UPSTREAM', message, { cause: options.cause });
    this.retryable = options.retryable;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The listing document is unusable as a whole (not JSON, truncated, envelope counts disagree). */
export class InvalidListingError extends SyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_LISTING', message, options);
  }
}

/** A guard refused the run: too many rejects, too many deletions, or a field gone from the listing. */
export class GuardError extends SyncError {
  constructor(code: 'REJECT_THRESHOLD' | 'MASS_DELETE' | 'SCHEMA_CHANGE', message: string) {
    super(code, message);
  }
}

/**
 * An error-level check failed on what the run would commit (checks/evaluate.ts): refused before the
 * commit, until a run with --accept-check NAME. A person must look: never retried.
 */
export class CheckFailedError extends SyncError {
  constructor(message: string) {
    super('CHECK_FAILED', message);
  }
}

/** Another run holds the advisory lock: exit 3. */
export class LockHeldError extends SyncError {
  constructor(message: string) {
    super('LOCK_HELD', message, { exitCode: 3 });
  }
}

/** SIGTERM/SIGINT stopped the run. */
export class AbortedError extends SyncError {
  constructor(message = 'run aborted by a signal; nothing was committed') {
    super('ABORTED', message);
  }
}

/** A statement waited longer than SYNC_LOCK_TIMEOUT_MS for a lock; the message names the table and who held it. */
export class LockTimeoutError extends SyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LOCK_TIMEOUT', message, options);
  }
}

/** The run took longer than SYNC_RUN_TIMEOUT_MS and was stopped. */
export class RunTimeoutError extends SyncError {
  constructor(limitMs: number) {
    super('RUN_TIMEOUT', `run stopped after SYNC_RUN_TIMEOUT_MS=${limitMs} ms; nothing was committed`);
  }
}

/** The local disk refused a write (full, read-only, no permission): another attempt would fail the same way. */
export class LocalDiskError extends SyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LOCAL_DISK', message, options);
  }
}

/**
 * The database was migrated by a newer release than this one (a rollback): refused at start,
 * before any run row is written, changing nothing (exit 2).
 */
export class SchemaTooNewError extends SyncError {
  constructor(message: string) {
    super('SCHEMA_TOO_NEW', message, { exitCode: 2 });
  }
}

/** The migrated tables and the field catalogue (src/fields.ts) disagree; each problem names its field. */
export class CatalogueMismatchError extends SyncError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super('CATALOGUE_MISMATCH', `field catalogue and database disagree: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

const DATABASE_HINTS: Record<string, string> = {
  ECONNREFUSED: 'nothing listens there',
  ENOTFOUND: 'unknown host',
  ETIMEDOUT: 'connection timed out',
  '28P01': 'password authentication failed',
  '28000': 'the server refused this user',
  '3D000': 'the database does not exist',
};

/** The message of any thrown value, for people: database connection failures name DATABASE_URL. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const hint = typeof code === 'string' && !(error instanceof SyncError) ? DATABASE_HINTS[code] : undefined;
  return hint ? `cannot use the database at DATABASE_URL (${hint}): ${error.message}` : error.message;
}
