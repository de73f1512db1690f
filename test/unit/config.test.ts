import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

const API = {
  WINE_API_BASE_URL: 'https://wine.example.com/',
  WINE_API_EMAIL: 'a@b.c',
  WINE_API_PASSWORD: 'pa55word-secret',
  DATABASE_URL: 'postgres://u:dbsecret@h/db',
};
const needs = { api: true, database: true };

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig(API, needs);
    expect(c).toMatchObject({
      schema: 'public',
      schedule: '0 3 * * *',
      timezone: 'UTC',
      maxRejectRatio: 0.05,
      maxDeleteRatio: 0.2,
      archiveKeep: 30,
      logLevel: 'info',
    });
    expect(c.api).toMatchObject({
      baseUrl: 'https://wine.example.com',
      loginUrl: 'https://wine.example.com/api/login',
      listingUrl: 'https://wine.example.com/api/bulk-wine-reconciliation-data?for_reporting=1',
      timeoutMs: 120000,
      retries: 5,
      tokenField: undefined,
    });
  });

  it('names every bad variable in one message, exit code 2, without echoing secrets', () => {
    const error = errorOf(() =>
      loadConfig(
        {
          ...API,
          WINE_API_PASSWORD: '',
          SYNC_SCHEDULE: '61 * * * *',
          SYNC_TIMEZONE: 'Mars/Base',
          SYNC_MAX_REJECT_RATIO: '2',
          WINE_API_RETRIES: 'many',
        },
        needs,
      ),
    );
    expect(error.exitCode).toBe(2);
    for (const name of [
      'WINE_API_PASSWORD',
      'SYNC_SCHEDULE',
      'SYNC_TIMEZONE',
      'SYNC_MAX_REJECT_RATIO',
      'WINE_API_RETRIES',
    ])
      expect(error.message).toContain(name);
    expect(error.message).not.toContain('dbsecret');
  });

  it('requires DATABASE_URL and the API settings only when the command needs them', () => {
    expect(errorOf(() => loadConfig({}, needs)).message).toMatch(
      /DATABASE_URL[\s\S]*WINE_API_BASE_URL|WINE_API_BASE_URL[\s\S]*DATABASE_URL/,
    );
    expect(loadConfig({}, { api: false, database: false }).api).toBeUndefined();
  });

  it('refuses http:// to a non-loopback host unless WINE_API_ALLOW_INSECURE_HTTP=true', () => {
    expect(errorOf(() => loadConfig({ ...API, WINE_API_BASE_URL: 'http://wine.example.com' }, needs)).message).toMatch(
      /WINE_API_BASE_URL: http:\/\/ to wine\.example\.com/,
    );
    expect(
      loadConfig({ ...API, WINE_API_BASE_URL: 'http://wine.example.com', WINE_API_ALLOW_INSECURE_HTTP: 'true' }, needs)
        .api?.baseUrl,
    ).toBe('http://wine.example.com');
    expect(loadConfig({ ...API, WINE_API_BASE_URL: 'http://127.0.0.1:8080' }, needs).api?.baseUrl).toBe(
      'http://127.0.0.1:8080',
    );
    expect(loadConfig({ ...API, WINE_API_BASE_URL: 'http://localhost:8080' }, needs).api?.baseUrl).toBe(
      'http://localhost:8080',
    );
  });

  it('reads WINE_API_MAX_BYTES in bytes or KiB/MiB/GiB, 2 GiB by default, naming the variable on a bad value', () => {
    expect(loadConfig(API, needs).api?.maxBytes).toBe(2 * 1024 ** 3);
    expect(loadConfig({ ...API, WINE_API_MAX_BYTES: '512MiB' }, needs).api?.maxBytes).toBe(512 * 1024 ** 2);
    expect(loadConfig({ ...API, WINE_API_MAX_BYTES: '1000' }, needs).api?.maxBytes).toBe(1000);
    for (const bad of ['2GB', '-1', '0', '1.5GiB', 'lots']) {
      expect(errorOf(() => loadConfig({ ...API, WINE_API_MAX_BYTES: bad }, needs)).message).toMatch(
        /WINE_API_MAX_BYTES: must be/,
      );
    }
  });

  it('keeps the default health file in a directory of its own user, not under a fixed name in the shared TMPDIR', () => {
    const dir = join(tmpdir(), `wine-recon-sync-${process.getuid?.() ?? 'user'}`);
    expect(loadConfig(API, needs)).toMatchObject({
      healthFile: join(dir, 'health'),
      healthPrivateDirs: [dir, expect.stringMatching(/\/wine-recon-sync$/)],
    });
    expect(loadConfig({ ...API, XDG_CACHE_HOME: '/home/x/.cache' }, needs).healthPrivateDirs).toEqual([
      dir,
      '/home/x/.cache/wine-recon-sync',
    ]);
    expect(loadConfig({ ...API, HOME: '/home/y' }, needs).healthPrivateDirs).toEqual([
      dir,
      '/home/y/.cache/wine-recon-sync',
    ]);
    expect(loadConfig({ ...API, SYNC_HEALTH_FILE: '/run/wrs/health' }, needs)).toMatchObject({
      healthFile: '/run/wrs/health',
      healthPrivateDirs: [],
    });
  });

  it('accepts a separate login address and 6-field schedules', () => {
    const c = loadConfig(
      {
        ...API,
        WINE_API_LOGIN_URL: 'https://auth.example.com/api/login',
        SYNC_SCHEDULE: '*/10 * * * * *',
        SYNC_TIMEZONE: 'Australia/Adelaide',
      },
      needs,
    );
    expect(c.api?.loginUrl).toBe('https://auth.example.com/api/login');
    expect(c.schedule).toBe('*/10 * * * * *');
  });

  it('reads secrets from *_FILE variables', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    writeFileSync(join(dir, 'pw'), 'from-file-password\n');
    const c = loadConfig({ ...API, WINE_API_PASSWORD: undefined, WINE_API_PASSWORD_FILE: join(dir, 'pw') }, needs);
    expect(c.api?.password).toBe('from-file-password');
    expect(errorOf(() => loadConfig({ ...API, WINE_API_PASSWORD_FILE: join(dir, 'pw') }, needs)).message).toContain(
      'set either WINE_API_PASSWORD or WINE_API_PASSWORD_FILE',
    );
    expect(
      errorOf(() =>
        loadConfig({ ...API, WINE_API_PASSWORD: undefined, WINE_API_PASSWORD_FILE: join(dir, 'missing') }, needs),
      ).message,
    ).toContain('WINE_API_PASSWORD_FILE: cannot read');
  });

  it('rejects a schema name that is not a plain identifier', () => {
    expect(errorOf(() => loadConfig({ ...API, SYNC_DB_SCHEMA: 'x"; drop' }, needs)).message).toContain(
      'SYNC_DB_SCHEMA',
    );
  });

  it('reads the monitoring settings: timeouts, metrics, Pushgateway, notifications', () => {
    const c = loadConfig(API, needs);
    expect(c).toMatchObject({
      lockTimeoutMs: 60000,
      runTimeoutMs: 7200000,
      metrics: undefined,
      pushgatewayUrl: undefined,
      notify: undefined,
    });
    const on = loadConfig(
      {
        ...API,
        SYNC_METRICS_PORT: '9464',
        SYNC_PUSHGATEWAY_URL: 'http://pg:9091',
        SYNC_NOTIFY_URL: 'https://hooks.example.com/T/B/secret',
        SYNC_NOTIFY_ON: 'all',
      },
      needs,
    );
    expect(on).toMatchObject({
      metrics: { port: 9464, host: '127.0.0.1' },
      pushgatewayUrl: 'http://pg:9091',
      notify: { url: 'https://hooks.example.com/T/B/secret', on: 'all' },
    });
    const error = errorOf(() =>
      loadConfig(
        {
          ...API,
          SYNC_LOCK_TIMEOUT_MS: '-1',
          SYNC_RUN_TIMEOUT_MS: '99999999999',
          SYNC_METRICS_PORT: '70000',
          SYNC_NOTIFY_URL: 'ftp://x/secret-path',
          SYNC_NOTIFY_ON: 'sometimes',
        },
        needs,
      ),
    );
    for (const name of [
      'SYNC_LOCK_TIMEOUT_MS',
      'SYNC_RUN_TIMEOUT_MS',
      'SYNC_METRICS_PORT',
      'SYNC_NOTIFY_URL',
      'SYNC_NOTIFY_ON',
    ])
      expect(error.message).toContain(name);
    expect(error.message).not.toContain('secret-path');
  });

  describe('BI views settings', () => {
    it('defaults to <SYNC_DB_SCHEMA>_bi and 10 fractional digits', () => {
      expect(loadConfig(API, needs).bi).toEqual({ schema: 'public_bi', scale: 10 });
      expect(loadConfig({ ...API, SYNC_DB_SCHEMA: 'wine' }, needs).bi).toEqual({ schema: 'wine_bi', scale: 10 });
      expect(loadConfig({ ...API, SYNC_BI_SCHEMA: 'reporting', SYNC_BI_SCALE: '0' }, needs).bi).toEqual({
        schema: 'reporting',
        scale: 0,
      });
      expect(loadConfig({ ...API, SYNC_BI_SCALE: '20' }, needs).bi.scale).toBe(20);
    });

    it.each(['21', '-1', '1.5', 'ten', '1e1', '100'])(
      'SYNC_BI_SCALE=%s is a configuration error naming the variable',
      (scale) => {
        const error = errorOf(() => loadConfig({ ...API, SYNC_BI_SCALE: scale }, needs));
        expect(error.exitCode).toBe(2);
        expect(error.message).toMatch(/SYNC_BI_SCALE: must be a whole number from 0 to 20/);
      },
    );

    it.each([
      [{ SYNC_BI_SCHEMA: 'Bad-Name' }, /SYNC_BI_SCHEMA: must be a lower-case SQL identifier/],
      [{ SYNC_BI_SCHEMA: 'public' }, /SYNC_BI_SCHEMA: must differ from SYNC_DB_SCHEMA/],
      [{ SYNC_DB_SCHEMA: 'a'.repeat(62) }, /SYNC_BI_SCHEMA: the default "a+_bi" is too long; set SYNC_BI_SCHEMA/],
    ])('a bad BI schema is named: %o', (env, message) => {
      const error = errorOf(() => loadConfig({ ...API, ...env }, needs));
      expect(error.exitCode).toBe(2);
      expect(error.message).toMatch(message);
    });
  });
});

describe('the daemon retry and catch-up settings', () => {
  it('retries after 5m, 15m and 45m and catches up by default', () => {
    const c = loadConfig(API, needs);
    expect(c.runRetryDelaysMs).toEqual([300_000, 900_000, 2_700_000]);
    expect(c.catchUp).toBe(true);
  });

  it('reads durations, none, and SYNC_CATCH_UP=false', () => {
    expect(loadConfig({ ...API, SYNC_RUN_RETRY_DELAYS: '30s, 5m,2h' }, needs).runRetryDelaysMs).toEqual([
      30_000, 300_000, 7_200_000,
    ]);
    expect(loadConfig({ ...API, SYNC_RUN_RETRY_DELAYS: 'none' }, needs).runRetryDelaysMs).toEqual([]);
    expect(loadConfig({ ...API, SYNC_CATCH_UP: 'false' }, needs).catchUp).toBe(false);
  });

  it('refuses a bad delay, naming the variable', () => {
    for (const bad of ['5', '5x', '0s', '5m,,1h', 'never', '-5m']) {
      expect(errorOf(() => loadConfig({ ...API, SYNC_RUN_RETRY_DELAYS: bad }, needs)).message, bad).toContain(
        'SYNC_RUN_RETRY_DELAYS: must be none, or durations',
      );
    }
    expect(errorOf(() => loadConfig({ ...API, SYNC_CATCH_UP: 'maybe' }, needs)).message).toContain('SYNC_CATCH_UP');
  });

  it('takes retry beside failure or all in SYNC_NOTIFY_ON', () => {
    const url = { SYNC_NOTIFY_URL: 'https://hooks.example.com/x' };
    expect(loadConfig({ ...API, ...url }, needs).notify).toMatchObject({ on: 'failure', retries: false });
    expect(loadConfig({ ...API, ...url, SYNC_NOTIFY_ON: 'retry' }, needs).notify).toMatchObject({
      on: 'failure',
      retries: true,
    });
    expect(loadConfig({ ...API, ...url, SYNC_NOTIFY_ON: 'all,retry' }, needs).notify).toMatchObject({
      on: 'all',
      retries: true,
    });
    expect(errorOf(() => loadConfig({ ...API, ...url, SYNC_NOTIFY_ON: 'sometimes' }, needs)).message).toContain(
      'SYNC_NOTIFY_ON',
    );
  });
});
