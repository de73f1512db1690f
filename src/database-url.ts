/**
 * DATABASE_URL read as libpq reads a connection URI, and the TLS settings it asks for, with
 * libpq's PG* variables where the URL says nothing. Parsed here rather than by pg-connection-string:
 * that one reads `sslmode=require` as verify-full (psql, pgjdbc and dbt encrypt without verifying)
 * and prints a deprecation warning on stderr. A shared leaf with no `pg` import: config.ts checks the
 * settings at start with the same code that each new connection uses (db/connection.ts).
 */

export const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** What config.ts read: the URL's source and libpq's variables (none is read from process.env here). */
export interface DatabaseSettings {
  /** DATABASE_URL's value as read at start (from DATABASE_URL_FILE when that is set). */
  url: string;
  /** DATABASE_URL_FILE: read again for each new connection, so that a rotated URL needs no restart. */
  urlFile?: string | undefined;
  /** DATABASE_PASSWORD_FILE: read again for each new connection; overrides the URL's password. */
  passwordFile?: string | undefined;
  /** PGSSLMODE, PGSSLROOTCERT, PGSSLCERT, PGSSLKEY, PGPASSWORD: used where the URL does not say. */
  libpq?: LibpqEnv;
}

export interface LibpqEnv {
  sslmode?: string | undefined;
  sslrootcert?: string | undefined;
  sslcert?: string | undefined;
  sslkey?: string | undefined;
  password?: string | undefined;
}

/** Where a setting came from, as a person would change it. */
export type Origin = 'DATABASE_URL' | 'DATABASE_URL_FILE' | 'PGSSLMODE' | 'PGSSLROOTCERT' | 'PGSSLCERT' | 'PGSSLKEY' | 'default';

export interface Target {
  host: string | undefined;
  port: number | undefined;
  user: string | undefined;
  password: string | undefined;
  database: string | undefined;
  applicationName: string | undefined;
  options: string | undefined;
  channelBinding: boolean;
  /** The variable that holds the URL: DATABASE_URL or DATABASE_URL_FILE. */
  urlVariable: 'DATABASE_URL' | 'DATABASE_URL_FILE';
  ssl: {
    mode: SslMode;
    modeFrom: Origin;
    /** A file, or 'system' (the CAs Node.js trusts, as libpq 16 trusts the system's), or undefined. */
    rootcert: { value: string; from: Origin } | undefined;
    cert: { value: string; from: Origin } | undefined;
    key: { value: string; from: Origin } | undefined;
  };
}

/** A mistake in the settings; the message names the variable or URL parameter, never a secret. */
export class SettingsProblem extends Error {}

/** The connection target of `url` with libpq's variables; throws SettingsProblem. */
export function resolveTarget(url: string, settings: Pick<DatabaseSettings, 'urlFile' | 'libpq'>): Target {
  const urlVariable = settings.urlFile ? 'DATABASE_URL_FILE' : 'DATABASE_URL';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The text is not echoed: it may hold a password.
    throw new SettingsProblem(`${urlVariable}: is not a URL such as postgres://user@host:5432/db`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new SettingsProblem(`${urlVariable}: must start with postgres:// or postgresql://`);
  }
  const query = parsed.searchParams;
  const param = (name: string) => blankToUndefined(query.get(name) ?? undefined);
  const env = settings.libpq ?? {};
  const pick = (name: 'sslmode' | 'sslrootcert' | 'sslcert' | 'sslkey', variable: Origin) => {
    const fromUrl = param(name);
    if (fromUrl !== undefined) return { value: fromUrl, from: urlVariable as Origin };
    const fromEnv = blankToUndefined(env[name]);
    return fromEnv === undefined ? undefined : { value: fromEnv, from: variable };
  };

  const rootcert = pick('sslrootcert', 'PGSSLROOTCERT');
  const givenMode = pick('sslmode', 'PGSSLMODE');
  // libpq 16: sslrootcert=system makes verify-full the default, and refuses anything weaker.
  const mode = givenMode?.value ?? (rootcert?.value === 'system' ? 'verify-full' : 'prefer');
  const modeFrom = givenMode?.from ?? 'default';
  if (!(SSL_MODES as readonly string[]).includes(mode)) {
    const allow = mode === 'allow' ? ' (allow is not supported: use prefer, which tries TLS first)' : '';
    throw new SettingsProblem(`${settingName('sslmode', modeFrom, urlVariable)}: must be one of ${SSL_MODES.join(', ')}${allow} (got "${mode}")`);
  }
  if (rootcert?.value === 'system' && mode !== 'verify-full') {
    throw new SettingsProblem(`${settingName('sslmode', modeFrom, urlVariable)}: sslrootcert=system needs sslmode=verify-full, as in libpq (got "${mode}")`);
  }
  if ((mode === 'verify-ca' || mode === 'verify-full') && rootcert === undefined) {
    throw new SettingsProblem(
      `${settingName('sslmode', modeFrom, urlVariable)}: sslmode=${mode} verifies the server's certificate against a CA: give the CA certificate with sslrootcert=/path/ca.pem in ${urlVariable} or PGSSLROOTCERT (sslrootcert=system: the CAs Node.js trusts)`,
    );
  }
  const cert = pick('sslcert', 'PGSSLCERT');
  const key = pick('sslkey', 'PGSSLKEY');
  if ((cert === undefined) !== (key === undefined)) {
    throw new SettingsProblem(`${urlVariable}: a client certificate needs both sslcert and sslkey (in the URL or PGSSLCERT and PGSSLKEY)`);
  }

  const portText = param('port') ?? (parsed.port || undefined);
  const port = portText === undefined ? undefined : Number(portText);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    throw new SettingsProblem(`${urlVariable}: the port must be a number from 1 to 65535`);
  }
  const channelBinding = param('channel_binding');
  return {
    host: param('host') ?? (blankToUndefined(decode(parsed.hostname).replace(/^\[(.*)\]$/, '$1'))),
    port,
    user: param('user') ?? blankToUndefined(decode(parsed.username)),
    password: param('password') ?? blankToUndefined(decode(parsed.password)),
    database: param('dbname') ?? blankToUndefined(decode(parsed.pathname.replace(/^\//, ''))),
    applicationName: param('application_name'),
    options: param('options'),
    // pg offers SCRAM channel binding but cannot insist on it: `require` and `prefer` both ask for it.
    channelBinding: channelBinding === 'require' || channelBinding === 'prefer',
    urlVariable,
    ssl: { mode: mode as SslMode, modeFrom, rootcert, cert, key },
  };
}

/** How to name a setting in a message: `sslmode= in DATABASE_URL`, `PGSSLMODE`, or both for a default. */
export function settingName(name: string, from: Origin, urlVariable: string): string {
  if (from === 'default') return `${name} (libpq's default; set ${name}= in ${urlVariable} or PG${name.toUpperCase()})`;
  if (from === 'DATABASE_URL' || from === 'DATABASE_URL_FILE') return `${name}= in ${from}`;
  return from;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function blankToUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}
