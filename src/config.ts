/**
 * The job's configuration, read off the settings table (settings/table.ts) from the environment
 * it is handed (process.env, by main.ts). All problems are reported together, each naming its
 * variable; no secret value is ever echoed.
 */
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from './errors.js';
import { resolveTarget, SettingsProblem, type DatabaseSettings } from './outbound/database-url.js';
import { insecureHttpProblem } from './outbound/insecure-http.js';
import { readProxyEnv, type ProxyConfig } from './outbound/proxy-env.js';
import { ChecksFileProblem, readChecksFile, type CheckRule, type ChecksSettings } from './checks/checks-file.js';
import { fileOf, readRequired, readSetting } from './settings/read.js';
import { blankToUndefined, identifier, type Env } from './settings/readers.js';
import type { SettingName, SettingValue } from './settings/table.js';

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
  /** How each new connection is made: the URL's file, the password file, libpq's PG* variables (db/connection.ts). */
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
  /** SYNC_UI_ALLOWED_HOSTS: more `Host` names (`name` or `name:port`, lower case) the page answers to. */
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

export function loadConfig(env: Env, needs: ConfigNeeds): Config {
  const problems: string[] = [];
  const read = <N extends SettingName>(name: N): SettingValue<N> => readSetting(env, name, problems);
  const schema = read('SYNC_DB_SCHEMA');
  const healthFile = read('SYNC_HEALTH_FILE');
  const healthPrivateDirs = healthFile === undefined ? privateHealthDirs(env) : [];
  // Checked whatever the command, as they always were; applied only by those that call the API.
  const transport = {
    allowInsecureHttp: read('WINE_API_ALLOW_INSECURE_HTTP'),
    timeoutMs: read('WINE_API_TIMEOUT_MS'),
    retries: read('WINE_API_RETRIES'),
    maxBytes: read('WINE_API_MAX_BYTES'),
  };
  const metricsPort = read('SYNC_METRICS_PORT');
  const metricsHost = read('SYNC_METRICS_HOST');
  const notifyUrl = read('SYNC_NOTIFY_URL');
  const notifyOn = read('SYNC_NOTIFY_ON');
  const checksFile = read('SYNC_CHECKS_FILE');
  let checkRules: CheckRule[] = [];
  if (checksFile !== undefined) {
    try {
      checkRules = readChecksFile(checksFile);
    } catch (error) {
      if (!(error instanceof ChecksFileProblem)) throw error;
      problems.push(error.message);
    }
  }
  const openLineageUrl = read('SYNC_OPENLINEAGE_URL');
  const openLineageKey = read('SYNC_OPENLINEAGE_API_KEY');
  const openLineageNamespace = read('SYNC_OPENLINEAGE_NAMESPACE');
  const config = {
    noColor: read('NO_COLOR') === true || env.TERM === 'dumb',
    schema,
    schedule: read('SYNC_SCHEDULE'),
    timezone: read('SYNC_TIMEZONE'),
    maxRejectRatio: read('SYNC_MAX_REJECT_RATIO'),
    maxDeleteRatio: read('SYNC_MAX_DELETE_RATIO'),
    archiveKeep: read('SYNC_ARCHIVE_KEEP'),
    rejectsKeep: read('SYNC_REJECTS_KEEP'),
    logLevel: read('LOG_LEVEL'),
    healthFile: healthFile ?? join(healthPrivateDirs[0]!, 'health'),
    healthPrivateDirs,
    retryBaseMs: read('WINE_API_RETRY_BASE_MS'),
    bi: {
      schema: biSchema(read('SYNC_BI_SCHEMA'), blankToUndefined(env.SYNC_BI_SCHEMA) !== undefined, schema, problems),
      scale: read('SYNC_BI_SCALE'),
    },
    lockTimeoutMs: read('SYNC_LOCK_TIMEOUT_MS'),
    extraFields: read('SYNC_EXTRA_FIELDS'),
    runTimeoutMs: read('SYNC_RUN_TIMEOUT_MS'),
    metrics: metricsPort === undefined ? undefined : { port: metricsPort, host: metricsHost },
    pushgatewayUrl: read('SYNC_PUSHGATEWAY_URL'),
    exitFlushTimeoutMs: read('SYNC_EXIT_FLUSH_TIMEOUT'),
    notify: notifyUrl === undefined ? undefined : { url: notifyUrl, ...notifyOn },
    checks: { enabled: read('SYNC_CHECKS') === 'on', file: checksFile, rules: checkRules },
    runRetryDelaysMs: read('SYNC_RUN_RETRY_DELAYS'),
    catchUp: read('SYNC_CATCH_UP'),
    ui: {
      token: read('SYNC_UI_TOKEN'),
      staleAfterMs: read('SYNC_STALE_AFTER'),
      allowedHosts: read('SYNC_UI_ALLOWED_HOSTS'),
    },
    openLineage:
      openLineageUrl === undefined
        ? undefined
        : { url: openLineageUrl, apiKey: openLineageKey, namespace: openLineageNamespace },
  };
  const databaseUrl = needs.database
    ? readRequired(env, 'DATABASE_URL', problems, 'is not set (e.g. postgres://user@host:5432/db)')
    : read('DATABASE_URL');
  const database = databaseUrl === undefined ? undefined : databaseSettings(env, databaseUrl, problems);
  const api = needs.api ? apiConfig(env, transport, problems) : undefined;
  const proxy = readProxyEnv(env, problems);
  refuseIfAny(problems);
  return { api, proxy, databaseUrl, database, ...config };
}

/** The upstream's addresses and credentials, for a command that calls it. */
function apiConfig(
  env: Env,
  transport: Pick<ApiConfig, 'allowInsecureHttp' | 'timeoutMs' | 'retries' | 'maxBytes'>,
  problems: string[],
): ApiConfig | undefined {
  const address = (url: string | undefined, name: 'WINE_API_BASE_URL' | 'WINE_API_LOGIN_URL') => {
    const insecure = url === undefined ? undefined : insecureHttpProblem(new URL(url), transport.allowInsecureHttp);
    if (insecure !== undefined) problems.push(`${name}: ${insecure}`);
    return insecure === undefined ? url : undefined;
  };
  const baseUrl = address(
    readRequired(env, 'WINE_API_BASE_URL', problems, 'is not set (e.g. https://wine.example.com)'),
    'WINE_API_BASE_URL',
  );
  // A login URL that was set and refused is reported, and the configuration refused with it.
  const loginUrl =
    address(readSetting(env, 'WINE_API_LOGIN_URL', problems), 'WINE_API_LOGIN_URL') ??
    (baseUrl && `${baseUrl}/api/login`);
  const email = readRequired(env, 'WINE_API_EMAIL', problems, 'is not set (or set WINE_API_EMAIL_FILE)');
  const password = readRequired(env, 'WINE_API_PASSWORD', problems, 'is not set (or set WINE_API_PASSWORD_FILE)');
  const tokenField = readSetting(env, 'WINE_API_TOKEN_FIELD', problems);
  if (!baseUrl || !loginUrl || email === undefined || password === undefined) return undefined;
  const listingUrl = `${baseUrl}/api/bulk-wine-reconciliation-data?for_reporting=1`;
  return { baseUrl, loginUrl, listingUrl, email, password, tokenField, ...transport };
}

/**
 * The default heartbeat's own directories. Not a fixed name in the shared $TMPDIR: another user
 * could make it first, or forge a heartbeat there.
 */
function privateHealthDirs(env: Env): string[] {
  const cache = blankToUndefined(env.XDG_CACHE_HOME) ?? join(blankToUndefined(env.HOME) ?? homedir(), '.cache');
  return [join(tmpdir(), `wine-recon-sync-${process.getuid?.() ?? 'user'}`), join(cache, 'wine-recon-sync')];
}

function refuseIfAny(problems: string[]): void {
  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** SYNC_BI_SCHEMA, by default `<SYNC_DB_SCHEMA>_bi`; never the data schema itself. */
function biSchema(given: string | undefined, wasSet: boolean, schema: string, problems: string[]): string {
  const name = given ?? `${schema}_bi`;
  // A value that was set and refused is reported already.
  if (given === undefined && wasSet) return name;
  if (given === undefined && !identifier.safeParse(name).success) {
    problems.push(`SYNC_BI_SCHEMA: the default "${name}" is too long; set SYNC_BI_SCHEMA`);
  } else if (name === schema) {
    problems.push(`SYNC_BI_SCHEMA: must differ from SYNC_DB_SCHEMA (got "${name}")`);
  }
  return name;
}

/** The demo's embedded PostgreSQL, when DATABASE_URL is not set. */
export function loadDemoSettings(env: Env): { pgPort: number; dataDir: string | undefined } {
  const problems: string[] = [];
  const settings = {
    pgPort: readSetting(env, 'DEMO_PG_PORT', problems),
    dataDir: readSetting(env, 'DEMO_DATA_DIR', problems),
  };
  refuseIfAny(problems);
  return settings;
}

/**
 * DATABASE_URL's companions: its file and DATABASE_PASSWORD_FILE (both read again for each new
 * connection, checked here once), and libpq's variables, which apply where the URL does not say.
 */
function databaseSettings(env: Env, url: string, problems: string[]): DatabaseSettings | undefined {
  const settings: DatabaseSettings = {
    url,
    urlFile: fileOf(env, 'DATABASE_URL'),
    passwordFile: readSetting(env, 'DATABASE_PASSWORD_FILE', problems),
    libpq: {
      sslmode: readSetting(env, 'PGSSLMODE', problems),
      sslrootcert: readSetting(env, 'PGSSLROOTCERT', problems),
      sslcert: readSetting(env, 'PGSSLCERT', problems),
      sslkey: readSetting(env, 'PGSSLKEY', problems),
      password: readSetting(env, 'PGPASSWORD', problems),
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
