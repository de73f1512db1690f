/**
 * DATABASE_URL read as libpq reads a connection URI (sslmode, PG* variables, several hosts).
 * Rule: a leaf with no `pg` import, so config.ts checks settings with the code each connection uses.
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
export type Origin =
  'DATABASE_URL' | 'DATABASE_URL_FILE' | 'PGSSLMODE' | 'PGSSLROOTCERT' | 'PGSSLCERT' | 'PGSSLKEY' | 'default';

/**
 * libpq's target_session_attrs. `read-write`: the session accepts writes (not a hot standby, and
 * default_transaction_read_only off); `primary`: not in recovery; `prefer-standby`: a standby if
 * any host is one, else any host.
 */
export const SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const;
export type SessionAttrs = (typeof SESSION_ATTRS)[number];

/** One host of the URL's host list; undefined: libpq's default (pg's: localhost, 5432). */
export interface Endpoint {
  host: string | undefined;
  port: number | undefined;
}

export interface Target {
  /** The hosts in the order each new connection tries them (one for most URLs). */
  hosts: Endpoint[];
  sessionAttrs: SessionAttrs;
  /** connect_timeout (libpq: seconds, for each host); undefined: not set. */
  connectTimeoutMs: number | undefined;
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
  const split = splitHostList(url, urlVariable);
  let parsed: URL;
  try {
    parsed = new URL(split.rest);
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
    throw new SettingsProblem(
      `${settingName('sslmode', modeFrom, urlVariable)}: must be one of ${SSL_MODES.join(', ')}${allow} ` +
        `(got "${mode}")`,
    );
  }
  if (rootcert?.value === 'system' && mode !== 'verify-full') {
    throw new SettingsProblem(
      `${settingName('sslmode', modeFrom, urlVariable)}: sslrootcert=system needs sslmode=verify-full, as ` +
        `in libpq (got "${mode}")`,
    );
  }
  if ((mode === 'verify-ca' || mode === 'verify-full') && rootcert === undefined) {
    throw new SettingsProblem(
      `${settingName('sslmode', modeFrom, urlVariable)}: sslmode=${mode} verifies the server's certificate ` +
        `against a CA: give the CA certificate with sslrootcert=/path/ca.pem in ${urlVariable} or ` +
        `PGSSLROOTCERT (sslrootcert=system: the CAs Node.js trusts)`,
    );
  }
  const cert = pick('sslcert', 'PGSSLCERT');
  const key = pick('sslkey', 'PGSSLKEY');
  if ((cert === undefined) !== (key === undefined)) {
    throw new SettingsProblem(
      `${urlVariable}: a client certificate needs both sslcert and sslkey (in the URL or PGSSLCERT and PGSSLKEY)`,
    );
  }

  const hosts = endpoints(
    param('host')?.split(',') ?? split.hosts,
    param('port')?.split(',') ?? split.ports,
    urlVariable,
  );
  const sessionAttrs = param('target_session_attrs') ?? 'any';
  if (!(SESSION_ATTRS as readonly string[]).includes(sessionAttrs)) {
    throw new SettingsProblem(
      `target_session_attrs= in ${urlVariable}: must be one of ${SESSION_ATTRS.join(', ')} (got "${sessionAttrs}")`,
    );
  }
  const timeoutText = param('connect_timeout');
  const timeout = timeoutText === undefined ? undefined : Number(timeoutText);
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout >= 0)) {
    throw new SettingsProblem(
      `connect_timeout= in ${urlVariable}: must be a whole number of seconds (got "${timeoutText}")`,
    );
  }
  const channelBinding = param('channel_binding');
  return {
    hosts,
    sessionAttrs: sessionAttrs as SessionAttrs,
    // libpq: 0 waits for ever, and less than 2 s counts as 2 s.
    connectTimeoutMs: timeout === undefined || timeout === 0 ? undefined : Math.max(timeout, 2) * 1000,
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

/** The URL's password (percent-decoded), for scrubbing from messages; undefined when none or unreadable. */
export function urlPassword(url: string): string | undefined {
  try {
    const parsed = new URL(splitHostList(url, 'DATABASE_URL').rest);
    return (
      blankToUndefined(parsed.searchParams.get('password') ?? undefined) ?? blankToUndefined(decode(parsed.password))
    );
  } catch {
    return undefined;
  }
}

/** `h1:5432,h2:5433/db` of a URL: where it points, never its user or password; undefined when unreadable. */
export function urlWhere(url: string): string | undefined {
  try {
    const { rest, hosts, ports } = splitHostList(url, 'DATABASE_URL');
    const path = new URL(rest).pathname;
    const list = hosts
      .map((h, i) => endpointText({ host: blankToUndefined(h), port: undefined }) + (ports[i] ? `:${ports[i]}` : ''))
      .join(',');
    return `${list}${path}`;
  } catch {
    return undefined;
  }
}

/** How to name a setting in a message: `sslmode= in DATABASE_URL`, `PGSSLMODE`, or both for a default. */
export function settingName(name: string, from: Origin, urlVariable: string): string {
  if (from === 'default') return `${name} (libpq's default; set ${name}= in ${urlVariable} or PG${name.toUpperCase()})`;
  if (from === 'DATABASE_URL' || from === 'DATABASE_URL_FILE') return `${name}= in ${from}`;
  return from;
}

/**
 * The URL with its host list replaced by one placeholder host (for `new URL`), and the list itself:
 * `h1:5432,[::1]:5433,h3` as names and ports, in order. The user info ends at the authority's last
 * `@`, as WHATWG's parser reads it. Bad entries are not echoed: a password with an unencoded `/`
 * ends the authority early, and its pieces would land in the host list.
 */
function splitHostList(url: string, urlVariable: string): { rest: string; hosts: string[]; ports: string[] } {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(url);
  if (m === null) return { rest: url, hosts: [''], ports: [''] };
  const [, scheme, authority, tail] = m as unknown as [string, string, string, string];
  const at = authority.lastIndexOf('@');
  const userinfo = authority.slice(0, at + 1);
  const hosts: string[] = [];
  const ports: string[] = [];
  authority
    .slice(at + 1)
    .split(',')
    .forEach((entry, i, all) => {
      const e = /^\[([0-9a-f:.%a-z]*)\](?::(\d*))?$/i.exec(entry) ?? /^([^:[\]]*)(?::(\d*))?$/.exec(entry);
      if (e === null) {
        const which = all.length > 1 ? ` (entry ${i + 1} of the host list is not)` : '';
        throw new SettingsProblem(
          `${urlVariable}: the host must be host, host:port or [IPv6]:port, several separated by commas ` +
            `such as h1:5432,h2:5433${which}`,
        );
      }
      hosts.push(decode(e[1]!));
      ports.push(e[2] ?? '');
    });
  return { rest: `${scheme}${userinfo}host${tail}`, hosts, ports };
}

/** Host names and ports paired as libpq pairs them: one port for every host, or one port per host. */
function endpoints(names: string[], ports: string[], urlVariable: string): Endpoint[] {
  if (ports.length !== 1 && ports.length !== names.length) {
    throw new SettingsProblem(
      `${urlVariable}: ${names.length} hosts and ${ports.length} ports: give one port for all hosts or one per host`,
    );
  }
  return names.map((name, i) => {
    const portText = blankToUndefined(ports.length === 1 ? ports[0] : ports[i]);
    const port = portText === undefined ? undefined : Number(portText);
    if (port !== undefined && !(/^\d+$/.test(portText!) && port > 0 && port < 65536)) {
      throw new SettingsProblem(`${urlVariable}: the port must be a number from 1 to 65535`);
    }
    return { host: blankToUndefined(name.trim()), port };
  });
}

/** `host:port`, `[::1]:5433`, as a person reads it in a message (libpq's defaults when unset). */
export function endpointText(endpoint: Endpoint): string {
  const host = endpoint.host ?? 'localhost';
  const shown = host.includes(':') ? `[${host}]` : host;
  return endpoint.port === undefined ? shown : `${shown}:${endpoint.port}`;
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
