/**
 * Every environment variable the job reads, declared once: how it is read, its default, what it
 * means. config.ts reads the configuration off this table, the commands' --help names its entries,
 * and docs/configuration.md is written from it (`npm run docs:configuration`; a test compares).
 */
import { z } from 'zod';
import { BI_SCALE_RULE, isBiScale } from '../fields.js';
import { isCronExpression } from '../schedule/cron-schedule.js';
import * as r from './readers.js';

/** The sections of docs/configuration.md, in order, with their headings. */
export const GROUPS = {
  upstream: 'The upstream API',
  network: 'Proxies and certificates',
  database: 'The database',
  schema: 'Schemas',
  load: 'Runs and loads',
  daemon: 'The daemon',
  page: 'The status page',
  reporting: 'Reports: metrics, webhooks, lineage',
  output: 'Logs and output',
  tools: 'The demo and the simulator',
} as const;
export type Group = keyof typeof GROUPS;

export interface Setting<T> {
  group: Group;
  reader: r.Reader<T>;
  /** As written in the environment, and read like a value that was set; without one the value is undefined. */
  default?: string | undefined;
  /** What the docs show as the default when it is not one value ("required for API runs", a derived value). */
  defaultText?: string;
  /** Markdown, one paragraph; links are relative to docs/. */
  description: string;
  /** The value (for a URL: the credentials it holds) never appears in a message, a log line or a table. */
  secret?: boolean;
  /** NAME_FILE names a file holding the value (Docker and Kubernetes secrets). */
  file?: boolean;
}

/** Keeps the reader's value type and whether there is a default, for `readSetting`'s result. */
const setting = <T, const D extends string | undefined = undefined>(s: Setting<T> & { default?: D }) =>
  s as Setting<T> & { default: D };

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const cron: r.Reader<string> = {
  ...r.zodReader(
    'a cron expression: 5 fields, or 6 with seconds first',
    z.string().refine(isCronExpression, 'is not a valid cron expression (5 fields, or 6 with seconds first)'),
  ),
  trusted: (raw) => raw,
};
const biScale = r.zodReader(
  'a whole number from 0 to 20',
  z
    .string()
    .trim()
    .regex(/^\d{1,2}$/, BI_SCALE_RULE)
    .transform(Number)
    .refine(isBiScale, BI_SCALE_RULE),
);
const namespace = r.zodReader(
  'text, 1 to 200 characters',
  z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
);

export const SETTINGS = {
  WINE_API_BASE_URL: setting({
    group: 'upstream',
    reader: r.apiUrl,
    defaultText: 'required for API runs',
    description: 'the upstream, e.g. `https://wine.example.com`',
  }),
  WINE_API_LOGIN_URL: setting({
    group: 'upstream',
    reader: r.apiUrl,
    defaultText: '`{WINE_API_BASE_URL}/api/login`',
    description: 'a different login address (the upstream documents its login with `http`, its listing with `https`)',
  }),
  WINE_API_EMAIL: setting({
    group: 'upstream',
    reader: r.text,
    defaultText: 'required for API runs',
    description: 'the login e-mail',
    file: true,
  }),
  WINE_API_PASSWORD: setting({
    group: 'upstream',
    reader: r.text,
    defaultText: 'required for API runs',
    description: 'the login password',
    secret: true,
    file: true,
  }),
  WINE_API_TOKEN_FIELD: setting({
    group: 'upstream',
    reader: r.dotPath,
    defaultText: 'auto-detect',
    description: 'where the token is in the login response, e.g. `data.access_token`',
  }),
  WINE_API_TIMEOUT_MS: setting({
    group: 'upstream',
    reader: r.count(1),
    default: '120000',
    description: 'whole-request timeout for the listing',
  }),
  WINE_API_RETRIES: setting({
    group: 'upstream',
    reader: r.count(1),
    default: '5',
    description: 'attempts for retryable failures of one request',
  }),
  WINE_API_RETRY_BASE_MS: setting({
    group: 'upstream',
    reader: r.count(0),
    default: '1000',
    description: 'first retry delay of a request; each further one doubles (with jitter, capped at 60 s)',
  }),
  WINE_API_MAX_BYTES: setting({
    group: 'upstream',
    reader: r.byteSize,
    default: '2GiB',
    description:
      'largest listing accepted, decoded; a larger one fails the run without a retry. The default is several times a million-record listing ([Performance](performance.md)): room to grow, while an endless or decompression-bomb body stops long before it fills the spool disk',
  }),
  WINE_API_ALLOW_INSECURE_HTTP: setting({
    group: 'upstream',
    reader: r.bool,
    default: 'false',
    description: 'allow `http://` to a host other than loopback (credentials in clear text)',
  }),

  HTTPS_PROXY: setting({
    group: 'network',
    reader: r.proxyUrl,
    defaultText: 'none',
    description:
      'the proxy for `https://` upstream calls, through CONNECT ([Proxies](operations.md#proxies)); `https_proxy` also works',
    secret: true,
  }),
  HTTP_PROXY: setting({
    group: 'network',
    reader: r.proxyUrl,
    defaultText: 'none',
    description: 'the proxy for `http://` upstream calls, which it is sent in absolute form; `http_proxy` also works',
    secret: true,
  }),
  NO_PROXY: setting({
    group: 'network',
    reader: r.noProxy,
    defaultText: 'none',
    description: 'hosts reached without the proxy, as curl reads them; `no_proxy` also works',
  }),
  NODE_EXTRA_CA_CERTS: setting({
    group: 'network',
    reader: r.nodeFile,
    defaultText: 'none',
    description:
      'extra trusted certificate authorities, in PEM ([Private certificate authorities](operations.md#private-certificate-authorities))',
  }),

  DATABASE_URL: setting({
    group: 'database',
    reader: r.postgresUrl,
    defaultText: 'required except for `demo`',
    description:
      'the target PostgreSQL: `postgres://user@host:5432/db?sslmode=verify-full&sslrootcert=/ca.pem` ([Your PostgreSQL](postgresql.md)); its `_FILE` is read again for each new connection. Several hosts with `target_session_attrs` follow a primary through a failover: `postgres://user@db1:5432,db2:5432/db?target_session_attrs=read-write` ([Several hosts](postgresql.md#several-hosts-following-a-primary-through-a-failover))',
    secret: true,
    file: true,
  }),
  DATABASE_PASSWORD_FILE: setting({
    group: 'database',
    reader: r.secretFile,
    defaultText: 'none',
    description:
      "a file holding the database password, read again for each new connection (rotated secrets); overrides the URL's",
  }),
  PGSSLMODE: setting({
    group: 'database',
    reader: r.text,
    defaultText: '`prefer`',
    description: "libpq's `sslmode`, where `DATABASE_URL` does not say (`require` encrypts without verifying)",
  }),
  PGSSLROOTCERT: setting({
    group: 'database',
    reader: r.text,
    defaultText: 'none',
    description: "libpq's `sslrootcert`, where `DATABASE_URL` does not say (`system`: the system's authorities)",
  }),
  PGSSLCERT: setting({
    group: 'database',
    reader: r.text,
    defaultText: 'none',
    description: "libpq's `sslcert`, where `DATABASE_URL` does not say",
  }),
  PGSSLKEY: setting({
    group: 'database',
    reader: r.text,
    defaultText: 'none',
    description: "libpq's `sslkey`, where `DATABASE_URL` does not say",
  }),
  PGPASSWORD: setting({
    group: 'database',
    reader: r.text,
    defaultText: 'none',
    description: "libpq's password, where `DATABASE_URL` does not give one",
    secret: true,
  }),

  SYNC_DB_SCHEMA: setting({
    group: 'schema',
    reader: r.sqlIdentifier,
    default: 'public',
    description: 'the schema holding every table (created if missing)',
  }),
  SYNC_BI_SCHEMA: setting({
    group: 'schema',
    reader: r.sqlIdentifier,
    defaultText: '`<SYNC_DB_SCHEMA>_bi`',
    description:
      'the schema of the views made for BI drivers ([Connect your BI tool](bi.md)); must differ from `SYNC_DB_SCHEMA`',
  }),
  SYNC_BI_SCALE: setting({
    group: 'schema',
    reader: biScale,
    default: '10',
    description: 'fractional digits S of the decimals in the BI views, `numeric(28, S)`',
  }),

  SYNC_MAX_REJECT_RATIO: setting({
    group: 'load',
    reader: r.ratio,
    default: '0.05',
    description: 'a run fails when more than this share of records is rejected',
  }),
  SYNC_MAX_DELETE_RATIO: setting({
    group: 'load',
    reader: r.ratio,
    default: '0.2',
    description: 'a run that would soft-delete more than this share of live rows is refused',
  }),
  SYNC_ARCHIVE_KEEP: setting({
    group: 'load',
    reader: r.count(0),
    default: '30',
    description: 'payloads kept in `sync_payloads` (`0`: archive off)',
  }),
  SYNC_REJECTS_KEEP: setting({
    group: 'load',
    reader: r.count(1),
    default: '30',
    description:
      'the rejects (`sync_rejects`) of this many newest runs are kept, whatever their status; older ones are deleted after each run',
  }),
  SYNC_EXTRA_FIELDS: setting({
    group: 'load',
    reader: r.oneOf(['keep', 'drop'], 'must be keep or drop'),
    default: 'keep',
    description:
      "`keep`: a record's fields that this version does not know are kept in `extra_fields` and shown in the BI views; `drop`: they are not loaded (their names are still recorded)",
  }),
  SYNC_CHECKS: setting({
    group: 'load',
    reader: r.oneOf(['on', 'off'], 'must be on or off'),
    default: 'on',
    description: "`off`: no [checks](checks.md) before the commit (the run's profile is still stored)",
  }),
  SYNC_CHECKS_FILE: setting({
    group: 'load',
    reader: r.nonEmpty,
    defaultText: 'none',
    description:
      "a YAML file that changes the checks' thresholds and severities, turns checks off, and adds rules on values ([checks.md](checks.md))",
  }),
  SYNC_LOCK_TIMEOUT_MS: setting({
    group: 'load',
    reader: r.count(0),
    default: '60000',
    description:
      'longest wait of a statement for a table lock; then the run fails naming the blocking sessions (`0`: no limit)',
  }),
  SYNC_RUN_TIMEOUT_MS: setting({
    group: 'load',
    reader: r.timerMs,
    default: '7200000',
    description: 'a run taking longer is stopped like SIGTERM and marked `failed`',
  }),

  SYNC_SCHEDULE: setting({
    group: 'daemon',
    reader: cron,
    default: '0 3 * * *',
    description: 'when the daemon runs',
  }),
  SYNC_TIMEZONE: setting({
    group: 'daemon',
    reader: r.timeZone,
    default: 'UTC',
    description: 'the time zone of the schedule',
  }),
  SYNC_RUN_RETRY_DELAYS: setting({
    group: 'daemon',
    reader: r.retryDelays,
    default: '5m,15m,45m',
    description:
      'the daemon tries a failed run again after each of these waits in turn, when its cause may pass ([which failures](operations.md#which-failures-are-retried)); never once the next scheduled slot has come; `none`: no retries. A chain has 1 + this many attempts, as `status`, `/healthz` and the status page count them',
  }),
  SYNC_CATCH_UP: setting({
    group: 'daemon',
    reader: r.bool,
    default: 'true',
    description:
      "the daemon runs once at start (trigger `catch-up`) when no run of its own has succeeded since the schedule's most recent slot and that slot's chain has not ended ([catch-up](operations.md#catch-up-at-start)); `false`: it waits for the next slot",
  }),
  SYNC_HEALTH_FILE: setting({
    group: 'daemon',
    reader: r.nonEmpty,
    defaultText: '`$TMPDIR/wine-recon-sync-<uid>/health`',
    description:
      "the daemon's heartbeat file, read by `healthcheck` (run it as the daemon's user); the default's directory is made 0700; when another user owns it or can open it, `$XDG_CACHE_HOME/wine-recon-sync/health` (`~/.cache`) is used instead",
  }),
  SYNC_METRICS_PORT: setting({
    group: 'daemon',
    reader: r.port,
    defaultText: 'off',
    description:
      '`schedule` serves `/metrics`, `/healthz` and the status page on this port ([Monitoring](monitoring.md))',
  }),
  SYNC_METRICS_HOST: setting({
    group: 'daemon',
    reader: r.nonEmpty,
    default: '127.0.0.1',
    description: 'the interface of `SYNC_METRICS_PORT`',
  }),

  SYNC_UI_TOKEN: setting({
    group: 'page',
    reader: r.token,
    defaultText: 'off',
    description:
      'guards every page of the status page (Bearer, or Basic with the token as the password); required to serve it beyond loopback, and for its run-now button',
    secret: true,
    file: true,
  }),
  SYNC_UI_ALLOWED_HOSTS: setting({
    group: 'page',
    reader: r.hostList,
    default: '',
    defaultText: 'loopback names',
    description:
      'the `Host` names the status page answers to besides its own, for a reverse proxy in front ([security model](operations.md#security-model))',
  }),
  SYNC_STALE_AFTER: setting({
    group: 'page',
    reader: r.duration,
    defaultText: '`26h` for `serve`; the schedule for `schedule`',
    description: 'the status page says "late" when the last successful load is older',
  }),

  SYNC_PUSHGATEWAY_URL: setting({
    group: 'reporting',
    reader: r.outboundUrl,
    defaultText: 'off',
    description: '`run` and `replay` push their metrics to this Prometheus Pushgateway, job `wine_recon_sync`',
    secret: true,
  }),
  SYNC_EXIT_FLUSH_TIMEOUT: setting({
    group: 'reporting',
    reader: r.timerDuration,
    default: '10s',
    description:
      'after a run of `run` or `replay` has finished, how long webhooks, OpenLineage events and the Pushgateway together may hold its exit; what is undelivered then is logged once',
  }),
  SYNC_NOTIFY_URL: setting({
    group: 'reporting',
    reader: r.outboundUrl,
    defaultText: 'off',
    description: 'a chat webhook receiving a JSON POST on failed or aborted runs and on recovery',
    secret: true,
    file: true,
  }),
  SYNC_NOTIFY_ON: setting({
    group: 'reporting',
    reader: r.notifyEvents,
    default: 'failure,check',
    description:
      '`failure`: failed and aborted runs and recovery; `check`: a run that committed although some of its [checks](checks.md) failed (one message naming each); `all`: a message for every run; `retry`: also each failed attempt that the daemon will retry, which is otherwise told only when it gives up',
  }),
  SYNC_OPENLINEAGE_URL: setting({
    group: 'reporting',
    reader: r.outboundUrl,
    defaultText: 'off',
    description:
      "the full endpoint receiving the runs' OpenLineage events ([OpenLineage](dbt-and-lineage.md#openlineage-run-events))",
    secret: true,
  }),
  SYNC_OPENLINEAGE_API_KEY: setting({
    group: 'reporting',
    reader: r.text,
    defaultText: 'none',
    description: 'sent as `Authorization: Bearer …` with each event',
    secret: true,
    file: true,
  }),
  SYNC_OPENLINEAGE_NAMESPACE: setting({
    group: 'reporting',
    reader: namespace,
    default: 'wine-recon-sync',
    description: '`job.namespace` of the events',
  }),

  LOG_LEVEL: setting({
    group: 'output',
    reader: r.oneOf(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(', ')}`),
    default: 'info',
    description: "pino's level of the log on stderr",
  }),
  NO_COLOR: setting({
    group: 'output',
    reader: r.flag,
    defaultText: 'unset',
    description: 'pretty logs on a terminal without colours (so does `TERM=dumb`)',
  }),
  DEBUG: setting({
    group: 'output',
    reader: r.flag,
    defaultText: 'unset',
    description: "stack traces: after a command's error message, and in the errors the log records",
  }),

  DEMO_PG_PORT: setting({
    group: 'tools',
    reader: r.port,
    default: '54329',
    description: "the port of the demo's embedded PostgreSQL (when `DATABASE_URL` is not set)",
  }),
  DEMO_DATA_DIR: setting({
    group: 'tools',
    reader: r.text,
    defaultText: '`$XDG_DATA_HOME/wine-recon-sync/postgres`, else `~/.local/share/wine-recon-sync/postgres`',
    description: "the data directory of the demo's embedded PostgreSQL; its log is written beside it",
  }),
  SIMULATOR_EMAIL: setting({
    group: 'tools',
    reader: r.text,
    defaultText: "the simulator's own",
    description: '`simulate`: the e-mail its login accepts',
  }),
  SIMULATOR_PASSWORD: setting({
    group: 'tools',
    reader: r.text,
    defaultText: "the simulator's own",
    description: '`simulate`: the password its login accepts',
    secret: true,
  }),
} as const;

export type SettingName = keyof typeof SETTINGS;
export type SettingValue<N extends SettingName> = (typeof SETTINGS)[N] extends Setting<infer T> & { default: infer D }
  ? D extends string
    ? T
    : T | undefined
  : never;

/** The settings of one group, in the table's order. */
export function settingsIn(group: Group): SettingName[] {
  return (Object.keys(SETTINGS) as SettingName[]).filter((name) => SETTINGS[name].group === group);
}
