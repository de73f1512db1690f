/** Where the demo keeps its data, and which of the shell's settings it leaves out. */
import { describe, expect, it } from 'vitest';
import { demoDataDir, demoEnv, heldDatabaseSettings } from '../../src/cli/demo-target.js';

describe("the demo's data directory", () => {
  it('is DEMO_DATA_DIR when set', () => {
    expect(demoDataDir({ DEMO_DATA_DIR: '/srv/demo/pg', XDG_DATA_HOME: '/x', HOME: '/home/a' })).toBe('/srv/demo/pg');
  });

  it('else in XDG_DATA_HOME, else in ~/.local/share (a relative XDG_DATA_HOME is ignored)', () => {
    expect(demoDataDir({ XDG_DATA_HOME: '/data/a', HOME: '/home/a' })).toBe('/data/a/wine-recon-sync/postgres');
    expect(demoDataDir({ HOME: '/home/a' })).toBe('/home/a/.local/share/wine-recon-sync/postgres');
    expect(demoDataDir({ XDG_DATA_HOME: 'rel/data', HOME: '/home/a' })).toBe(
      '/home/a/.local/share/wine-recon-sync/postgres',
    );
  });
});

describe("the demo's environment", () => {
  const shell = {
    DATABASE_URL: 'postgres://prod@db.example.com/wine',
    DATABASE_URL_FILE: '',
    DATABASE_PASSWORD_FILE: '/run/secrets/db',
    SYNC_DB_SCHEMA: 'production',
    PGSSLMODE: 'verify-full',
    LOG_LEVEL: 'debug',
  };

  it('names the database settings the shell holds', () => {
    expect(heldDatabaseSettings(shell)).toEqual([
      'DATABASE_URL',
      'DATABASE_PASSWORD_FILE',
      'SYNC_DB_SCHEMA',
      'PGSSLMODE',
    ]);
  });

  it('for its own server: none of them, only its URL', () => {
    expect(demoEnv(shell, 'postgres://postgres:pw@127.0.0.1:54329/wine', false)).toEqual({
      DATABASE_URL: 'postgres://postgres:pw@127.0.0.1:54329/wine',
      LOG_LEVEL: 'debug',
    });
  });

  it('for the database --database-url names: the URL given, with the schema and password file of the shell', () => {
    expect(demoEnv(shell, 'postgres://me@127.0.0.1/scratch', true)).toEqual({
      ...shell,
      DATABASE_URL: 'postgres://me@127.0.0.1/scratch',
      DATABASE_URL_FILE: undefined,
    });
  });
});
