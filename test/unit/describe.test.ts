/** The pure parts of the one description's outputs: CHECK lists, dbt periods and forms, lineage names, settings. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { allowedValues } from '../../src/db/relations.js';
import { formFor, period } from '../../src/describe/dbt-sources.js';
import { inputDataset, postgresNamespace } from '../../src/describe/lineage-events.js';

describe('allowedValues', () => {
  it('reads the list of a one-column IN check as pg_get_constraintdef prints it, and nothing else', () => {
    expect(allowedValues("CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'it''s'::text])))")).toEqual([
      'running',
      'succeeded',
      "it's",
    ]);
    expect(allowedValues('CHECK ((attempt >= 1))')).toBeNull();
    expect(allowedValues("CHECK ((status = ANY (ARRAY['a'::text, lower('B'::text)])))")).toBeNull();
  });
});

describe('dbt', () => {
  it('writes a length of time as whole days, whole hours, or minutes rounded up', () => {
    expect(period(2 * 86_400_000)).toEqual({ count: 2, period: 'day' });
    expect(period(26 * 3_600_000)).toEqual({ count: 26, period: 'hour' });
    expect(period(90 * 60_000)).toEqual({ count: 90, period: 'minute' });
    expect(period(30_000)).toEqual({ count: 1, period: 'minute' });
  });

  it('takes the config form from dbt 1.10, the older one for 1.8 and 1.9, and nothing older', () => {
    expect(['1.10', '1.11.2', '2.0'].map(formFor)).toEqual(['config', 'config', 'config']);
    expect(['1.9', '1.8.7'].map(formFor)).toEqual(['legacy', 'legacy']);
    expect(['1.7', 'latest', ''].map(formFor)).toEqual([undefined, undefined, undefined]);
  });
});

describe('lineage names', () => {
  it('names the database postgres://host:port: its first host, never its user or password', () => {
    expect(postgresNamespace('postgres://u:p%40ss@db.example.com:6432/wine?sslmode=require')).toBe(
      'postgres://db.example.com:6432',
    );
    expect(postgresNamespace('postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write')).toBe(
      'postgres://h1:5432',
    );
    expect(postgresNamespace('postgres://[::1]/db')).toBe('postgres://[::1]:5432');
    expect(postgresNamespace('postgres:///db')).toBe('postgres://localhost:5432');
  });

  it('names the listing scheme://host:port and its path, without its query', () => {
    const db = { namespace: 'postgres://h:5432', name: 'wine' };
    expect(
      inputDataset(
        { trigger: 'manual', source: 'https://wine.example.com/api/bulk-wine-reconciliation-data?for_reporting=1' },
        db,
        'public',
        'host1',
      ),
    ).toEqual({
      namespace: 'https://wine.example.com:443',
      name: '/api/bulk-wine-reconciliation-data',
    });
    expect(inputDataset({ trigger: 'file', source: '/data/listing.json' }, db, 'public', 'host1')).toEqual({
      namespace: 'file://host1',
      name: '/data/listing.json',
    });
    expect(inputDataset({ trigger: 'replay', source: 'replay of run 3 (sha256 ab)' }, db, 'public', 'host1')).toEqual({
      namespace: 'postgres://h:5432',
      name: 'wine.public.sync_payloads',
    });
  });
});

describe('SYNC_OPENLINEAGE_*', () => {
  const base = { DATABASE_URL: 'postgres://u@localhost/db' };
  it('is off by default, and the namespace defaults to wine-recon-sync', () => {
    expect(loadConfig(base, { api: false, database: true }).openLineage).toBeUndefined();
    expect(
      loadConfig(
        { ...base, SYNC_OPENLINEAGE_URL: 'http://marquez:5000/api/v1/lineage' },
        { api: false, database: true },
      ).openLineage,
    ).toEqual({
      url: 'http://marquez:5000/api/v1/lineage',
      apiKey: undefined,
      namespace: 'wine-recon-sync',
    });
  });

  it('refuses a URL that is not http(s), naming the variable, without echoing the key', () => {
    expect(() =>
      loadConfig(
        { ...base, SYNC_OPENLINEAGE_URL: 'ftp://x', SYNC_OPENLINEAGE_API_KEY: 'sekrit-key' },
        { api: false, database: true },
      ),
    ).toThrow(/SYNC_OPENLINEAGE_URL: must be an http/);
    try {
      loadConfig(
        { ...base, SYNC_OPENLINEAGE_URL: 'ftp://x', SYNC_OPENLINEAGE_API_KEY: 'sekrit-key' },
        { api: false, database: true },
      );
    } catch (error) {
      expect((error as Error).message).not.toContain('sekrit-key');
    }
  });
});
