/**
 * DATABASE_URL and libpq's variables as the job reads them (src/database-url.ts), and the TLS
 * options each sslmode becomes (src/db/connection.ts); the TLS behaviour itself is tested against
 * a real server in test/integration/postgres-tls.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Connector } from '../../src/db/connection.js';
import { resolveTarget, SettingsProblem } from '../../src/database-url.js';
import { ConfigError } from '../../src/errors.js';

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
    expect(resolveTarget(URL_WITH_SECRET, {})).toMatchObject({ host: 'db.example.com', port: 6543, user: 'sync', password: SECRET, database: 'wine' });
    expect(resolveTarget('postgresql://[::1]:5433/wine', {})).toMatchObject({ host: '::1', port: 5433, user: undefined, password: undefined });
    expect(resolveTarget('postgres:///wine?host=/var/run/postgresql&user=sync&dbname=other', {})).toMatchObject({ host: '/var/run/postgresql', user: 'sync', database: 'other' });
  });

  it('sslmode defaults to prefer; PGSSL* apply where the URL is silent and the URL wins where it speaks', () => {
    expect(resolveTarget('postgres://h/db', {}).ssl).toMatchObject({ mode: 'prefer', modeFrom: 'default' });
    const env = { sslmode: 'verify-full', sslrootcert: '/ca.pem' };
    expect(resolveTarget('postgres://h/db', { libpq: env }).ssl).toMatchObject({ mode: 'verify-full', modeFrom: 'PGSSLMODE', rootcert: { value: '/ca.pem', from: 'PGSSLROOTCERT' } });
    expect(resolveTarget('postgres://h/db?sslmode=require&sslrootcert=/mine.pem', { libpq: env }).ssl).toMatchObject({ mode: 'require', modeFrom: 'DATABASE_URL', rootcert: { value: '/mine.pem', from: 'DATABASE_URL' } });
    expect(resolveTarget('postgres://h/db', { urlFile: '/run/secrets/url' }).urlVariable).toBe('DATABASE_URL_FILE');
  });

  it('sslrootcert=system makes verify-full the default and refuses weaker modes, as libpq 16', () => {
    expect(resolveTarget('postgres://h/db?sslrootcert=system', {}).ssl.mode).toBe('verify-full');
    expect(problem('postgres://h/db?sslrootcert=system&sslmode=require')).toBe('sslmode= in DATABASE_URL: sslrootcert=system needs sslmode=verify-full, as in libpq (got "require")');
  });

  it('refuses, naming the setting: an unknown sslmode, allow, verify-* without a root certificate, half a client certificate, a bad port', () => {
    expect(problem('postgres://h/db?sslmode=verify')).toBe('sslmode= in DATABASE_URL: must be one of disable, prefer, require, verify-ca, verify-full (got "verify")');
    expect(problem('postgres://h/db', { sslmode: 'allow' })).toBe('PGSSLMODE: must be one of disable, prefer, require, verify-ca, verify-full (allow is not supported: use prefer, which tries TLS first) (got "allow")');
    expect(problem('postgres://h/db?sslmode=verify-ca')).toContain('sslmode= in DATABASE_URL: sslmode=verify-ca verifies the server\'s certificate against a CA: give the CA certificate with sslrootcert=/path/ca.pem in DATABASE_URL or PGSSLROOTCERT');
    expect(problem('postgres://h/db?sslcert=/c.pem')).toBe('DATABASE_URL: a client certificate needs both sslcert and sslkey (in the URL or PGSSLCERT and PGSSLKEY)');
    expect(problem('postgres://h:99999/db')).toBe('DATABASE_URL: is not a URL such as postgres://user@host:5432/db');
    expect(problem('postgres://h/db?port=0')).toBe('DATABASE_URL: the port must be a number from 1 to 65535');
    expect(problem('mysql://h/db')).toBe('DATABASE_URL: must start with postgres:// or postgresql://');
  });

  it('never echoes the URL or its password', () => {
    for (const url of [`${URL_WITH_SECRET}?sslmode=nope`, `postgres://sync:${encodeURIComponent(SECRET)}@h:notaport/db`]) {
      expect(problem(url)).not.toContain('p@ss');
      expect(problem(url)).not.toContain(encodeURIComponent(SECRET));
    }
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
    return options === false || options === undefined || options === true ? options : { ...options, checkServerIdentity: options.checkServerIdentity === undefined ? 'checked' : 'skipped' };
  };

  it('disable: none; prefer and require: encrypt without verifying; with a root certificate, the CA is verified', () => {
    expect(ssl('postgres://h/db?sslmode=disable')).toBe(false);
    expect(ssl('postgres://h/db')).toEqual({ rejectUnauthorized: false, checkServerIdentity: 'skipped' });
    expect(ssl('postgres://h/db?sslmode=require')).toEqual({ rejectUnauthorized: false, checkServerIdentity: 'skipped' });
    expect(ssl(`postgres://h/db?sslmode=require&sslrootcert=${ca}`)).toEqual({ rejectUnauthorized: true, ca: '-----BEGIN CERTIFICATE-----\n', checkServerIdentity: 'skipped' });
  });

  it('verify-ca checks the chain only; verify-full the host name too; system uses the machine\'s CAs', () => {
    expect(ssl(`postgres://h/db?sslmode=verify-ca&sslrootcert=${ca}`)).toEqual({ rejectUnauthorized: true, ca: '-----BEGIN CERTIFICATE-----\n', checkServerIdentity: 'skipped' });
    expect(ssl(`postgres://h/db?sslmode=verify-full&sslrootcert=${ca}`)).toEqual({ rejectUnauthorized: true, ca: '-----BEGIN CERTIFICATE-----\n', checkServerIdentity: 'checked' });
    expect(ssl('postgres://h/db?sslrootcert=system')).toEqual({ rejectUnauthorized: true, checkServerIdentity: 'checked' });
  });

  it('an unreadable certificate file fails the connection with a ConfigError naming the setting', () => {
    const attempt = new Connector({ url: 'postgres://h/db?sslmode=verify-ca', libpq: { sslrootcert: join(dir, 'missing.pem') } }).plan();
    expect(attempt.failure).toBeInstanceOf(ConfigError);
    expect(attempt.failure?.message).toBe(`PGSSLROOTCERT: cannot read ${join(dir, 'missing.pem')} (ENOENT)`);
  });
});

describe('loadConfig: the database settings', () => {
  const base = { DATABASE_URL: 'postgres://u:dbsecret@h/db' };
  const needs = { api: false, database: true };

  it('reads DATABASE_PASSWORD_FILE and libpq\'s variables into config.database', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wrs-pw-'));
    writeFileSync(join(dir, 'pw'), 'secret\n');
    const c = loadConfig({ ...base, DATABASE_PASSWORD_FILE: join(dir, 'pw'), PGSSLMODE: 'require', PGSSLROOTCERT: '/ca.pem', PGPASSWORD: 'x' }, needs);
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
      loadConfig({ DATABASE_URL: 'postgres://u:dbsecret@h/db?sslmode=verify-ca', DATABASE_PASSWORD_FILE: '/nonexistent/pw' }, needs);
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
