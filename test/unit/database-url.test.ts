/**
 * DATABASE_URL and libpq's variables as the job reads them (src/outbound/database-url.ts), and the TLS
 * options each sslmode becomes (src/db/connection.ts); the TLS behaviour itself is tested against
 * a real server in test/integration/postgres-tls.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Connector } from '../../src/db/connection.js';
import { resolveTarget, SettingsProblem, urlPassword, urlWhere } from '../../src/outbound/database-url.js';
import { ConfigError } from '../../src/errors.js';
import { mismatch } from '../../src/db/host-search.js';

const SECRET = 'p@ss:w/rd?#%';
const URL_WITH_SECRET = `postgres://sync:${encodeURIComponent(SECRET)}@db.example.com:6543/wine`;

function problem(url: string, libpq = {}): string {
  try {
    resolveTarget(url, { libpq });
  } catch (error) {
    if (error instanceof SettingsProblem) return error.message;
    throw error;
  }
  throw new Error('expected a SettingsProblem');
}

describe('DATABASE_URL as libpq reads it', () => {
  it('takes user, password (percent-decoded), host, port and database from the URL; query parameters win', () => {
    expect(resolveTarget(URL_WITH_SECRET, {})).toMatchObject({
      hosts: [{ host: 'db.example.com', port: 6543 }],
      user: 'sync',
      password: SECRET,
      database: 'wine',
      sessionAttrs: 'any',
    });
    expect(resolveTarget('postgresql://[::1]:5433/wine', {})).toMatchObject({
      hosts: [{ host: '::1', port: 5433 }],
      user: undefined,
      password: undefined,
    });
    expect(resolveTarget('postgres:///wine?host=/var/run/postgresql&user=sync&dbname=other', {})).toMatchObject({
      hosts: [{ host: '/var/run/postgresql', port: undefined }],
      user: 'sync',
      database: 'other',
    });
  });

  it('sslmode defaults to prefer; PGSSL* apply where the URL is silent and the URL wins where it speaks', () => {
    expect(resolveTarget('postgres://h/db', {}).ssl).toMatchObject({ mode: 'prefer', modeFrom: 'default' });
    const env = { sslmode: 'verify-full', sslrootcert: '/ca.pem' };
    expect(resolveTarget('postgres://h/db', { libpq: env }).ssl).toMatchObject({
      mode: 'verify-full',
      modeFrom: 'PGSSLMODE',
      rootcert: { value: '/ca.pem', from: 'PGSSLROOTCERT' },
    });
    expect(resolveTarget('postgres://h/db?sslmode=require&sslrootcert=/mine.pem', { libpq: env }).ssl).toMatchObject({
      mode: 'require',
      modeFrom: 'DATABASE_URL',
      rootcert: { value: '/mine.pem', from: 'DATABASE_URL' },
    });
    expect(resolveTarget('postgres://h/db', { urlFile: '/run/secrets/url' }).urlVariable).toBe('DATABASE_URL_FILE');
  });

  it('sslrootcert=system makes verify-full the default and refuses weaker modes, as libpq 16', () => {
    expect(resolveTarget('postgres://h/db?sslrootcert=system', {}).ssl.mode).toBe('verify-full');
    expect(problem('postgres://h/db?sslrootcert=system&sslmode=require')).toBe(
      'sslmode= in DATABASE_URL: sslrootcert=system needs sslmode=verify-full, as in libpq (got "require")',
    );
  });

  it('refuses, naming the setting: an unknown sslmode, allow, verify-* without a root certificate, half a client certificate, a bad port', () => {
    expect(problem('postgres://h/db?sslmode=verify')).toBe(
      'sslmode= in DATABASE_URL: must be one of disable, prefer, require, verify-ca, verify-full (got "verify")',
    );
    expect(problem('postgres://h/db', { sslmode: 'allow' })).toBe(
      'PGSSLMODE: must be one of disable, prefer, require, verify-ca, verify-full (allow is not supported: use prefer, which tries TLS first) (got "allow")',
    );
    expect(problem('postgres://h/db?sslmode=verify-ca')).toContain(
      "sslmode= in DATABASE_URL: sslmode=verify-ca verifies the server's certificate against a CA: give the CA certificate with sslrootcert=/path/ca.pem in DATABASE_URL or PGSSLROOTCERT",
    );
    expect(problem('postgres://h/db?sslcert=/c.pem')).toBe(
      'DATABASE_URL: a client certificate needs both sslcert and sslkey (in the URL or PGSSLCERT and PGSSLKEY)',
    );
    expect(problem('postgres://h:99999/db')).toBe('DATABASE_URL: the port must be a number from 1 to 65535');
    expect(problem('postgres://h/db?port=0')).toBe('DATABASE_URL: the port must be a number from 1 to 65535');
    expect(problem('mysql://h/db')).toBe('DATABASE_URL: must start with postgres:// or postgresql://');
  });

  it('never echoes the URL or its password', () => {
    for (const url of [
      `${URL_WITH_SECRET}?sslmode=nope`,
      `postgres://sync:${encodeURIComponent(SECRET)}@h:notaport/db`,
    ]) {
      expect(problem(url)).not.toContain('p@ss');
      expect(problem(url)).not.toContain(encodeURIComponent(SECRET));
    }
  });
});

describe('DATABASE_URL with several hosts, as libpq reads it', () => {
  const hosts = (url: string) => resolveTarget(url, {}).hosts;

  it('takes every host in order, each with its port or the default, IPv6 in brackets', () => {
    expect(hosts('postgres://u@h1:5432,h2:5433/db')).toEqual([
      { host: 'h1', port: 5432 },
      { host: 'h2', port: 5433 },
    ]);
    expect(hosts('postgres://u@h1,h2/db')).toEqual([
      { host: 'h1', port: undefined },
      { host: 'h2', port: undefined },
    ]);
    expect(hosts('postgresql://[::1]:5433,[fe80::1],10.0.0.2:6432/db')).toEqual([
      { host: '::1', port: 5433 },
      { host: 'fe80::1', port: undefined },
      { host: '10.0.0.2', port: 6432 },
    ]);
    expect(resolveTarget(`postgres://sync:${encodeURIComponent(SECRET)}@a:1,b:2/wine`, {})).toMatchObject({
      user: 'sync',
      password: SECRET,
      database: 'wine',
    });
  });

  it("host= and port= in the query: lists that replace the URL's, one port for all hosts or one each", () => {
    expect(hosts('postgres:///db?host=a,b&port=5432,5433')).toEqual([
      { host: 'a', port: 5432 },
      { host: 'b', port: 5433 },
    ]);
    expect(hosts('postgres://x/db?host=a,b&port=6000')).toEqual([
      { host: 'a', port: 6000 },
      { host: 'b', port: 6000 },
    ]);
    expect(problem('postgres:///db?host=a,b,c&port=1,2')).toBe(
      'DATABASE_URL: 3 hosts and 2 ports: give one port for all hosts or one per host',
    );
  });

  it("target_session_attrs: libpq's six values, any by default; connect_timeout in seconds, at least 2", () => {
    expect(resolveTarget('postgres://a,b/db', {}).sessionAttrs).toBe('any');
    for (const attrs of ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby']) {
      expect(resolveTarget(`postgres://a,b/db?target_session_attrs=${attrs}`, {}).sessionAttrs).toBe(attrs);
    }
    expect(problem('postgres://a,b/db?target_session_attrs=master')).toBe(
      'target_session_attrs= in DATABASE_URL: must be one of any, read-write, read-only, primary, standby, prefer-standby (got "master")',
    );
    expect(resolveTarget('postgres://a/db?connect_timeout=1', {}).connectTimeoutMs).toBe(2000);
    expect(resolveTarget('postgres://a/db?connect_timeout=0', {}).connectTimeoutMs).toBeUndefined();
    expect(problem('postgres://a/db?connect_timeout=soon')).toBe(
      'connect_timeout= in DATABASE_URL: must be a whole number of seconds (got "soon")',
    );
  });

  it('refuses a bad host list, naming DATABASE_URL (or DATABASE_URL_FILE) and never the password', () => {
    const secret = `sync:${encodeURIComponent(SECRET)}`;
    const bad = [
      `postgres://${secret}@h1:5432,h2:port/db`,
      `postgres://${secret}@h1:5432,[::1/db`,
      `postgres://${secret}@h1:5432,h2:0/db`,
      `postgres://${secret}@h1:5432,h2:5432:1/db`,
      // An unencoded / in the password ends the authority early: its pieces are not echoed.
      'postgres://sync:pa/ss@h1,h2/db',
    ];
    const messages = bad.map((url) => problem(url));
    const hostList =
      'DATABASE_URL: the host must be host, host:port or [IPv6]:port, several separated by commas such as h1:5432,h2:5433';
    expect(messages).toEqual([
      `${hostList} (entry 2 of the host list is not)`,
      `${hostList} (entry 2 of the host list is not)`,
      'DATABASE_URL: the port must be a number from 1 to 65535',
      `${hostList} (entry 2 of the host list is not)`,
      hostList,
    ]);
    for (const m of messages) {
      expect(m).not.toContain('p@ss');
      expect(m).not.toContain(encodeURIComponent(SECRET));
      expect(m).not.toMatch(/sync|pa\/ss/);
    }
    expect(() => resolveTarget('postgres://a,b:x/db', { urlFile: '/run/secrets/url' })).toThrow(/^DATABASE_URL_FILE: /);
  });

  it('loadConfig accepts it and refuses a bad one as a configuration error naming DATABASE_URL', () => {
    const needs = { api: false, database: true };
    expect(
      loadConfig({ DATABASE_URL: 'postgres://u:dbsecret@h1:5432,h2:5433/db?target_session_attrs=read-write' }, needs)
        .database?.url,
    ).toContain('h1:5432,h2:5433');
    let error: unknown;
    try {
      loadConfig({ DATABASE_URL: 'postgres://u:dbsecret@h1:5432,h2:5433/db?target_session_attrs=writable' }, needs);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as Error).message).toContain('target_session_attrs= in DATABASE_URL: must be one of');
    expect((error as Error).message).not.toContain('dbsecret');
  });

  it('the password and the place of a several-host URL, for scrubbing and for messages', () => {
    expect(urlPassword(`postgres://sync:${encodeURIComponent(SECRET)}@h1:5432,h2:5433/db`)).toBe(SECRET);
    expect(urlPassword('postgres://h1,h2/db?password=qs')).toBe('qs');
    expect(urlWhere(`postgres://sync:${encodeURIComponent(SECRET)}@h1:5432,[::1]:5433/db`)).toBe(
      'h1:5432,[::1]:5433/db',
    );
  });
});

describe("target_session_attrs: which host suits, with libpq's meanings", () => {
  const primary = { recovery: false, read_only: false };
  const readOnlyPrimary = { recovery: false, read_only: true };
  const standby = { recovery: true, read_only: true };

  it('read-write needs a primary whose sessions write by default; primary only a primary; standby and read-only the opposites', () => {
    const table = (['any', 'read-write', 'read-only', 'primary', 'standby'] as const).map((wanted) => [
      wanted,
      mismatch(primary, wanted) ?? 'takes',
      mismatch(readOnlyPrimary, wanted) ?? 'takes',
      mismatch(standby, wanted) ?? 'takes',
    ]);
    expect(table).toEqual([
      ['any', 'takes', 'takes', 'takes'],
      [
        'read-write',
        'takes',
        'is read-only (default_transaction_read_only is on)',
        'is a standby (in recovery, read-only)',
      ],
      ['read-only', 'accepts writes', 'takes', 'takes'],
      ['primary', 'takes', 'takes', 'is a standby (in recovery)'],
      ['standby', 'is a primary (not in recovery)', 'is a primary (not in recovery)', 'takes'],
    ]);
  });
});

describe('the TLS options of each sslmode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wrs-url-'));
  const ca = join(dir, 'ca.pem');
  writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n');
  const ssl = (url: string) => {
    const attempt = new Connector({ url }).plan();
    expect(attempt.failure).toBeUndefined();
    const options = attempt.config.ssl;
    return options === false || options === undefined || options === true
      ? options
      : { ...options, checkServerIdentity: options.checkServerIdentity === undefined ? 'checked' : 'skipped' };
  };

  it('disable: none; prefer and require: encrypt without verifying; with a root certificate, the CA is verified', () => {
    expect(ssl('postgres://h/db?sslmode=disable')).toBe(false);
    expect(ssl('postgres://h/db')).toEqual({ rejectUnauthorized: false, checkServerIdentity: 'skipped' });
    expect(ssl('postgres://h/db?sslmode=require')).toEqual({
      rejectUnauthorized: false,
      checkServerIdentity: 'skipped',
    });
    expect(ssl(`postgres://h/db?sslmode=require&sslrootcert=${ca}`)).toEqual({
      rejectUnauthorized: true,
      ca: '-----BEGIN CERTIFICATE-----\n',
      checkServerIdentity: 'skipped',
    });
  });

  it("verify-ca checks the chain only; verify-full the host name too; system uses the machine's CAs", () => {
    expect(ssl(`postgres://h/db?sslmode=verify-ca&sslrootcert=${ca}`)).toEqual({
      rejectUnauthorized: true,
      ca: '-----BEGIN CERTIFICATE-----\n',
      checkServerIdentity: 'skipped',
    });
    expect(ssl(`postgres://h/db?sslmode=verify-full&sslrootcert=${ca}`)).toEqual({
      rejectUnauthorized: true,
      ca: '-----BEGIN CERTIFICATE-----\n',
      checkServerIdentity: 'checked',
    });
    expect(ssl('postgres://h/db?sslrootcert=system')).toEqual({
      rejectUnauthorized: true,
      checkServerIdentity: 'checked',
    });
  });

  it('an unreadable certificate file fails the connection with a ConfigError naming the setting', () => {
    const attempt = new Connector({
      url: 'postgres://h/db?sslmode=verify-ca',
      libpq: { sslrootcert: join(dir, 'missing.pem') },
    }).plan();
    expect(attempt.failure).toBeInstanceOf(ConfigError);
    expect(attempt.failure?.message).toBe(`PGSSLROOTCERT: cannot read ${join(dir, 'missing.pem')} (ENOENT)`);
  });
});

describe('loadConfig: the database settings', () => {
  const base = { DATABASE_URL: 'postgres://u:dbsecret@h/db' };
  const needs = { api: false, database: true };

  it("reads DATABASE_PASSWORD_FILE and libpq's variables into config.database", () => {
    const dir = mkdtempSync(join(tmpdir(), 'wrs-pw-'));
    writeFileSync(join(dir, 'pw'), 'secret\n');
    const c = loadConfig(
      {
        ...base,
        DATABASE_PASSWORD_FILE: join(dir, 'pw'),
        PGSSLMODE: 'require',
        PGSSLROOTCERT: '/ca.pem',
        PGPASSWORD: 'x',
      },
      needs,
    );
    expect(c.database).toEqual({
      url: base.DATABASE_URL,
      urlFile: undefined,
      passwordFile: join(dir, 'pw'),
      libpq: { sslmode: 'require', sslrootcert: '/ca.pem', sslcert: undefined, sslkey: undefined, password: 'x' },
    });
    expect(c.databaseUrl).toBe(base.DATABASE_URL);
  });

  it('names a bad PGSSLMODE, an unreadable DATABASE_PASSWORD_FILE and a bad sslmode in the URL, without echoing the URL', () => {
    let error: unknown;
    try {
      loadConfig(
        { DATABASE_URL: 'postgres://u:dbsecret@h/db?sslmode=verify-ca', DATABASE_PASSWORD_FILE: '/nonexistent/pw' },
        needs,
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('DATABASE_PASSWORD_FILE: cannot read /nonexistent/pw (ENOENT)');
    expect(message).toContain('sslmode= in DATABASE_URL: sslmode=verify-ca verifies');
    expect(message).not.toContain('dbsecret');
  });
});
