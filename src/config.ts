/**
 * The only reader of process.env. Every variable is checked with zod; all problems are
 * reported together, each naming its variable, and no secret value is ever echoed.
 */
import { readFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { BI_SCALE_RULE, isBiScale } from './fields.js';
import { resolveTarget, SettingsProblem, type DatabaseSettings } from './outbound/database-url.js';
import { readProxyEnv, type ProxyConfig } from './outbound/proxy-env.js';
import { isCronExpression } from './schedule/cron-schedule.js';
import { ChecksFileProblem, readChecksFile, type CheckRule, type ChecksSettings } from './checks/checks-file.js';
import {
  biSchema,
  blankToUndefined,
  bool,
  byteSize,
  count,
  duration,
  hostList,
  httpUrl,
  isTimeZone,
  notifyEvents,
  outboundUrl,
  ratio,
  retryDelays,
  secret,
  setting,
  timerDuration,
  type Env,
} from './settings/readers.js';

export interface ApiConfig {
  baseUrl: string;
  loginUrl: string;
  listingUrl: string;
  email: string;
  password: string;
  tokenField: string | undefined;
  timeoutMs: number;
  retries: number;
  /** WINE_API_ALLOW_INSECURE_HTTP: applied to every redirect hop too. */
  allowInsecureHttp: boolean;
  /** WINE_API_MAX_BYTES: the decoded listing may not be larger. */
  maxBytes: number;
}

/** Outbound proxy for upstream calls, from the environment as curl reads it (see proxy-env.ts). */
export type { ProxyConfig } from './outbound/proxy-env.js';

export interface Config {
  api: ApiConfig | undefined;
  proxy: ProxyConfig;
  /** NO_COLOR (non-empty) or TERM=dumb: pretty logs without colours. */
  noColor: boolean;
  /** DATABASE_URL as read at start (from DATABASE_URL_FILE when that is set). */
  databaseUrl: string | undefined;
  /**
   * How each new connection is made: the URL's file, the password file, libpq's PG* variables (src/db/connection.ts).
   */
  database: DatabaseSettings | undefined;
  schema: string;
  schedule: string;
  timezone: string;
  maxRejectRatio: number;
  maxDeleteRatio: number;
  archiveKeep: number;
  /** The rejects (sync_rejects) of this many newest runs are kept; older ones are pruned after each run. */
  rejectsKeep: number;
  logLevel: string;
  /** SYNC_HEALTH_FILE; when it is not set, the default heartbeat in the first of healthPrivateDirs (for messages). */
  healthFile: string;
  /**
   * The default health file's own directories, in order: `$TMPDIR/wine-recon-sync-<uid>`, then
   * `$XDG_CACHE_HOME/wine-recon-sync` (`~/.cache`), for when another user made the first one
   * (observe/health.ts, heartbeatFile). Empty when SYNC_HEALTH_FILE is set.
   */
  healthPrivateDirs: string[];
  /** First retry delay; later ones double (tests shorten it). */
  retryBaseMs: number;
  /** The views made for BI drivers: their schema and the fractional digits of their decimals. */
  bi: BiSettings;
  /** Longest wait of a statement for a lock (0: no limit). */
  lockTimeoutMs: number;
  /** A record's fields that the catalogue does not know: kept in extra_fields, or dropped (SYNC_EXTRA_FIELDS). */
  extraFields: 'keep' | 'drop';
  /** A run taking longer is stopped like SIGTERM and marked failed. */
  runTimeoutMs: number;
  /** `schedule` serves /metrics and /healthz here when set. */
  metrics: { port: number; host: string } | undefined;
  /** `run`/`replay` push their metrics here when set (may embed basic-auth credentials). */
  pushgatewayUrl: string | undefined;
  /** After a run, the longest that webhook, lineage and push hold `run`'s exit (SYNC_EXIT_FLUSH_TIMEOUT). */
  exitFlushTimeoutMs: number;
  /**
   * Webhook notifications when set; the URL is a secret. `retries`: also a failed attempt that the
   * daemon will retry (SYNC_NOTIFY_ON=retry), which is otherwise told only when the daemon gives up.
   */
  notify: { url: string; on: 'failure' | 'all'; retries: boolean; checks: boolean } | undefined;
  /** The checks every run makes before it commits (SYNC_CHECKS, SYNC_CHECKS_FILE; checks/). */
  checks: ChecksSettings;
  /** The daemon's waits before retrying a failed run, one per retry (SYNC_RUN_RETRY_DELAYS; empty: none). */
  runRetryDelaysMs: readonly number[];
  /** The daemon runs once at start when the schedule's most recent slot's chain has not ended (SYNC_CATCH_UP). */
  catchUp: boolean;
  /** The status page (src/observe/page/). */
  ui: UiSettings;
  /** OpenLineage run events (src/observe/lineage.ts) when SYNC_OPENLINEAGE_URL is set. */
  openLineage: OpenLineageSettings | undefined;
}

export interface OpenLineageSettings {
  /** The full endpoint: Marquez, OpenMetadata and DataHub each have their own path. */
  url: string;
  /** Sent as `Authorization: Bearer`; a secret. */
  apiKey: string | undefined;
  /** job.namespace of every event. */
  namespace: string;
}

export interface UiSettings {
  /** SYNC_UI_TOKEN(_FILE): guards every page; without it the page is served on loopback only. */
  token: string | undefined;
  /** SYNC_STALE_AFTER in ms when set; else the daemon judges by its schedule and `serve` by DEFAULT_STALE_AFTER_MS. */
  staleAfterMs: number | undefined;
  /**
   * SYNC_UI_ALLOWED_HOSTS: `Host` names (`name` or `name:port`, lower case) the page answers to besides its own, behind
   * a reverse proxy.
   */
  allowedHosts: string[];
}

/** Without a schedule to judge by: a daily run plus two hours for it to finish. */
export const DEFAULT_STALE_AFTER_MS = 26 * 3_600_000;

export interface BiSettings {
  schema: string;
  /** S in numeric(BI_PRECISION, S): a whole number from 0 to MAX_BI_SCALE (src/fields.ts). */
  scale: number;
}

export interface ConfigNeeds {
  /** The run talks to the upstream API: base URL and credentials are required. */
  api: boolean;
  /** DATABASE_URL is required (every command but demo and simulate). */
  database: boolean;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const DEFAULT_TIMEZONE = 'UTC';
const DEFAULT_SCHEDULE = '0 3 * * *';
const DEFAULT_RUN_RETRY_DELAYS = '5m,15m,45m';

export function loadConfig(env: Env, needs: ConfigNeeds): Config {
  const problems: string[] = [];
  const value = <T>(name: string, schema: z.ZodType<T>, fallback: string): T => {
    const raw = blankToUndefined(env[name]) ?? fallback;
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    problems.push(`${name}: ${parsed.error.issues[0]?.message ?? 'invalid'} (got "${raw}")`);
    return schema.parse(fallback);
  };

  const identifier = z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier of at most 63 characters');
  const schema = value('SYNC_DB_SCHEMA', identifier, 'public');
  const bi = {
    schema: biSchema(env, schema, identifier, problems),
    scale: value(
      'SYNC_BI_SCALE',
      z
        .string()
        .trim()
        .regex(/^\d{1,2}$/, BI_SCALE_RULE)
        .transform(Number)
        .refine(isBiScale, BI_SCALE_RULE),
      '10',
    ),
  };
  // Only a value that is set is checked (the defaults are valid): the first time zone check sets up
  // ICU's time zones and the cron check loads croner, both paid at every command's start-up.
  const timezone = setting(env, 'SYNC_TIMEZONE')
    ? value('SYNC_TIMEZONE', z.string().refine(isTimeZone, 'is not an IANA time zone'), DEFAULT_TIMEZONE)
    : DEFAULT_TIMEZONE;
  const schedule = setting(env, 'SYNC_SCHEDULE')
    ? value(
        'SYNC_SCHEDULE',
        z.string().refine(isCronExpression, 'is not a valid cron expression (5 fields, or 6 with seconds first)'),
        DEFAULT_SCHEDULE,
      )
    : DEFAULT_SCHEDULE;
  const maxRejectRatio = value('SYNC_MAX_REJECT_RATIO', ratio, '0.05');
  const maxDeleteRatio = value('SYNC_MAX_DELETE_RATIO', ratio, '0.2');
  const archiveKeep = value('SYNC_ARCHIVE_KEEP', count(0), '30');
  const rejectsKeep = value('SYNC_REJECTS_KEEP', count(1), '30');
  const logLevel = value(
    'LOG_LEVEL',
    z.enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` }),
    'info',
  );
  const timeoutMs = value('WINE_API_TIMEOUT_MS', count(1), '120000');
  const retries = value('WINE_API_RETRIES', count(1), '5');
  // Not a fixed name in the shared $TMPDIR: another user could make it first, or forge a heartbeat there.
  const healthPrivateDirs = setting(env, 'SYNC_HEALTH_FILE')
    ? []
    : [
        join(tmpdir(), `wine-recon-sync-${process.getuid?.() ?? 'user'}`),
        join(
          blankToUndefined(env.XDG_CACHE_HOME) ?? join(blankToUndefined(env.HOME) ?? homedir(), '.cache'),
          'wine-recon-sync',
        ),
      ];
  const healthFile =
    healthPrivateDirs.length === 0
      ? value('SYNC_HEALTH_FILE', z.string().min(1), 'unused')
      : join(healthPrivateDirs[0]!, 'health');
  const retryBaseMs = value('WINE_API_RETRY_BASE_MS', count(0), '1000');
  const allowInsecure = value('WINE_API_ALLOW_INSECURE_HTTP', bool, 'false');
  // Several times the largest listing known: room to grow, but not a disk's worth of endless body.
  const maxBytes = value('WINE_API_MAX_BYTES', byteSize, '2GiB');
  const lockTimeoutMs = value('SYNC_LOCK_TIMEOUT_MS', count(0), '60000');
  const extraFields = value('SYNC_EXTRA_FIELDS', z.enum(['keep', 'drop'], { message: 'must be keep or drop' }), 'keep');
  // A longer Node.js timer would fire at once.
  const runTimeoutMs = value(
    'SYNC_RUN_TIMEOUT_MS',
    count(1).max(2_147_483_647, 'must be at most 2147483647 (24.8 days)'),
    '7200000',
  );
  const metricsPort =
    blankToUndefined(env.SYNC_METRICS_PORT) === undefined
      ? undefined
      : value('SYNC_METRICS_PORT', count(1).max(65535, 'must be at most 65535'), '9464');
  const metricsHost = value('SYNC_METRICS_HOST', z.string().min(1), '127.0.0.1');
  const pushgatewayUrl = outboundUrl(blankToUndefined(env.SYNC_PUSHGATEWAY_URL), 'SYNC_PUSHGATEWAY_URL', problems);
  const exitFlushTimeoutMs = timerDuration(env, 'SYNC_EXIT_FLUSH_TIMEOUT', '10s', problems);
  const notifyUrl = outboundUrl(secret(env, 'SYNC_NOTIFY_URL', problems), 'SYNC_NOTIFY_URL', problems);
  const uiToken = secret(env, 'SYNC_UI_TOKEN', problems);
  if (uiToken !== undefined && uiToken.length < 16)
    problems.push('SYNC_UI_TOKEN: must be at least 16 characters (e.g. openssl rand -hex 24)');
  const staleAfter = blankToUndefined(env.SYNC_STALE_AFTER);
  const staleAfterMs = staleAfter === undefined ? undefined : duration(staleAfter, 'SYNC_STALE_AFTER', problems);
  const allowedHosts = hostList(env, 'SYNC_UI_ALLOWED_HOSTS', problems);
  const openLineageUrl = outboundUrl(blankToUndefined(env.SYNC_OPENLINEAGE_URL), 'SYNC_OPENLINEAGE_URL', problems);
  const openLineageKey = secret(env, 'SYNC_OPENLINEAGE_API_KEY', problems);
  const openLineageNamespace = value(
    'SYNC_OPENLINEAGE_NAMESPACE',
    z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    'wine-recon-sync',
  );
  const notifyOn = value('SYNC_NOTIFY_ON', notifyEvents, 'failure,check');
  const checksOn = value('SYNC_CHECKS', z.enum(['on', 'off'], { message: 'must be on or off' }), 'on');
  const checksFile = blankToUndefined(env.SYNC_CHECKS_FILE);
  let checkRules: CheckRule[] = [];
  if (checksFile !== undefined) {
    try {
      checkRules = readChecksFile(checksFile);
    } catch (error) {
      if (!(error instanceof ChecksFileProblem)) throw error;
      problems.push(error.message);
    }
  }
  const runRetryDelaysMs = retryDelays(
    blankToUndefined(env.SYNC_RUN_RETRY_DELAYS) ?? DEFAULT_RUN_RETRY_DELAYS,
    problems,
  );
  const catchUp = value('SYNC_CATCH_UP', bool, 'true');

  const databaseUrl = secret(env, 'DATABASE_URL', problems);
  if (needs.database && databaseUrl === undefined)
    problems.push('DATABASE_URL: is not set (e.g. postgres://user@host:5432/db)');
  else if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL: must start with postgres:// or postgresql://');
  }
  const database = databaseUrl === undefined ? undefined : databaseSettings(env, databaseUrl, problems);

  let api: ApiConfig | undefined;
  if (needs.api) {
    const baseUrl = httpUrl(env, 'WINE_API_BASE_URL', allowInsecure, problems);
    const loginUrl =
      blankToUndefined(env.WINE_API_LOGIN_URL) === undefined
        ? baseUrl && `${baseUrl}/api/login`
        : httpUrl(env, 'WINE_API_LOGIN_URL', allowInsecure, problems);
    const email = secret(env, 'WINE_API_EMAIL', problems);
    const password = secret(env, 'WINE_API_PASSWORD', problems);
    if (email === undefined) problems.push('WINE_API_EMAIL: is not set (or set WINE_API_EMAIL_FILE)');
    if (password === undefined) problems.push('WINE_API_PASSWORD: is not set (or set WINE_API_PASSWORD_FILE)');
    const tokenField = blankToUndefined(env.WINE_API_TOKEN_FIELD);
    if (tokenField !== undefined && !/^[^.\s]+(\.[^.\s]+)*$/.test(tokenField)) {
      problems.push(`WINE_API_TOKEN_FIELD: must be a dot path such as data.access_token (got "${tokenField}")`);
    }
    if (baseUrl && loginUrl && email !== undefined && password !== undefined) {
      api = {
        baseUrl,
        loginUrl,
        listingUrl: `${baseUrl}/api/bulk-wine-reconciliation-data?for_reporting=1`,
        email,
        password,
        tokenField,
        timeoutMs,
        retries,
        allowInsecureHttp: allowInsecure,
        maxBytes,
      };
    }
  }

  const proxy = readProxyEnv(env, problems);
  const noColor = blankToUndefined(env.NO_COLOR) !== undefined || env.TERM === 'dumb';

  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  return {
    api,
    proxy,
    noColor,
    databaseUrl,
    database,
    schema,
    schedule,
    timezone,
    maxRejectRatio,
    maxDeleteRatio,
    archiveKeep,
    rejectsKeep,
    logLevel,
    healthFile,
    healthPrivateDirs,
    retryBaseMs,
    bi,
    lockTimeoutMs,
    extraFields,
    runTimeoutMs,
    metrics: metricsPort === undefined ? undefined : { port: metricsPort, host: metricsHost },
    pushgatewayUrl,
    exitFlushTimeoutMs,
    notify: notifyUrl === undefined ? undefined : { url: notifyUrl, ...notifyOn },
    checks: { enabled: checksOn === 'on', file: checksFile, rules: checkRules },
    runRetryDelaysMs,
    catchUp,
    ui: { token: uiToken, staleAfterMs, allowedHosts },
    openLineage:
      openLineageUrl === undefined
        ? undefined
        : { url: openLineageUrl, apiKey: openLineageKey, namespace: openLineageNamespace },
  };
}

/**
 * DATABASE_URL's companions: its file and DATABASE_PASSWORD_FILE (both read again for each new
 * connection, checked here once), and libpq's variables, which apply where the URL does not say.
 */
function databaseSettings(env: Env, url: string, problems: string[]): DatabaseSettings | undefined {
  const passwordFile = blankToUndefined(env.DATABASE_PASSWORD_FILE);
  if (passwordFile !== undefined) {
    try {
      if (readFileSync(passwordFile, 'utf8').replace(/\r?\n$/, '') === '')
        problems.push(`DATABASE_PASSWORD_FILE: the file ${passwordFile} is empty`);
    } catch (error) {
      problems.push(
        `DATABASE_PASSWORD_FILE: cannot read ${passwordFile} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  const settings: DatabaseSettings = {
    url,
    urlFile: blankToUndefined(env.DATABASE_URL_FILE),
    passwordFile,
    libpq: {
      sslmode: blankToUndefined(env.PGSSLMODE),
      sslrootcert: blankToUndefined(env.PGSSLROOTCERT),
      sslcert: blankToUndefined(env.PGSSLCERT),
      sslkey: blankToUndefined(env.PGSSLKEY),
      password: blankToUndefined(env.PGPASSWORD),
    },
  };
  try {
    resolveTarget(url, settings);
  } catch (error) {
    if (!(error instanceof SettingsProblem)) throw error;
    problems.push(error.message);
  }
  return settings;
}
