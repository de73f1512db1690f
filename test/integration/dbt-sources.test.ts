/**
 * `dbt-sources` through the CLI against a real PostgreSQL: the file passes dbt's published JSON
 * Schemas, names every column that exists and none that does not, and its freshness SQL, run the
 * way dbt-postgres wraps it, answers the last successful non-dry run.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';
import { dbtPropertiesSchema } from '../support/json-schemas.js';

interface Column {
  name: string;
  description?: string;
  data_type: string;
  quote?: boolean;
  data_tests?: unknown[];
}
interface Table {
  name: string;
  description?: string;
  columns: Column[];
  freshness?: { warn_after: unknown; error_after: unknown };
  loaded_at_field?: string;
}
interface Source {
  name: string;
  schema: string;
  loader: string;
  quoting: Record<string, boolean>;
  config?: { freshness: { warn_after: unknown; error_after: unknown }; loaded_at_query: string };
  tables: Table[];
}
interface Properties {
  version: number;
  sources: Source[];
}

const fx = useSyncFixture('dbt_sources', { simulator: { records: 12 } });
const bi = () => `${fx.db.schema}_bi`;
const dbtSources = async (args: string[] = [], env: Record<string, string> = {}) => {
  const r = await runCli(['dbt-sources', ...args], { ...fx.env, ...env });
  expect(r.code, r.stderr).toBe(0);
  return { text: r.stdout, doc: parse(r.stdout) as Properties };
};
const run = async (...args: string[]) => {
  const r = await runCli(['run', '--json', ...args], fx.env);
  return {
    code: r.code,
    run: JSON.parse(r.stdout) as { id: number; status: string; finished_at: string; dry_run: boolean },
  };
};

/**
 * dbt-postgres's collect_freshness_custom_sql (dbt-adapters, default__collect_freshness_custom_sql),
 * current_timestamp() being now().
 */
const customSqlFreshness = (loadedAtQuery: string) => `with source_query as (
    ${loadedAtQuery}
  )
  select
    (select * from source_query) as max_loaded_at,
    now() as snapshotted_at`;
/** dbt-postgres's collect_freshness (default__collect_freshness) for a loaded_at_field, no filter. */
const fieldFreshness = (field: string, relation: string) => `select
      max(${field}) as max_loaded_at,
      now() as snapshotted_at
    from ${relation}`;

const loadedAt = async (sql: string) => {
  const [row] = await fx.db.rows<{ max_loaded_at: Date | null; snapshotted_at: Date }>(sql);
  return row!.max_loaded_at?.toISOString() ?? null;
};

/** The columns of a relation as information_schema lists them, in order. */
const columnsOf = async (schema: string, table: string) =>
  (
    await fx.db.rows<{ column_name: string }>(
      'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
      [schema, table],
    )
  ).map((r) => r.column_name);

let current: Properties;
let legacy: Properties;

beforeAll(async () => {
  // The BI views are installed by migrate (and every run), with the settings.
  const migrated = await runCli(['migrate'], fx.env);
  expect(migrated.code, migrated.stderr).toBe(0);
  current = (await dbtSources(['--exact'])).doc;
  legacy = (await dbtSources(['--exact', '--dbt-version', '1.9'])).doc;
});

describe('the properties file', () => {
  it('passes dbt-jsonschema: the latest_fusion schema (dbt 1.10+) for the default form, the latest one for --dbt-version 1.9', () => {
    expect(dbtPropertiesSchema('latest-fusion')(current)).toEqual([]);
    expect(dbtPropertiesSchema('latest')(legacy)).toEqual([]);
    // Each form is the one its schema knows: the older schema has no config.loaded_at_query.
    expect(current.sources[0]!.config!.loaded_at_query).toMatch(/^select max/);
    expect(legacy.sources[0]!.config).toBeUndefined();
    expect(
      dbtPropertiesSchema('latest-fusion')({ version: 2, sources: [{ name: 'x', config: { loaded_at_query: 1 } }] }),
    ).not.toEqual([]);
  });

  it('has the source wine_recon for the BI schema, loader wine-recon-sync, and wine_recon_exact with --exact', () => {
    expect(current.version).toBe(2);
    expect(current.sources.map((s) => [s.name, s.schema, s.loader])).toEqual([
      ['wine_recon', bi(), 'wine-recon-sync'],
      ['wine_recon_exact', fx.db.schema, 'wine-recon-sync'],
    ]);
    expect(current.sources[0]!.quoting).toEqual({ schema: true, identifier: true });
  });

  it('names every relation of the BI schema and every column of each, in the database order, and nothing else', async () => {
    const relations = await fx.db.rows<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [bi()],
    );
    const biSource = current.sources[0]!;
    expect(biSource.tables.map((t) => t.name).sort()).toEqual(relations.map((r) => r.table_name));
    for (const source of [...current.sources, ...legacy.sources]) {
      for (const table of source.tables)
        expect(
          table.columns.map((c) => c.name),
          `${source.schema}.${table.name}`,
        ).toEqual(await columnsOf(source.schema, table.name));
    }
  });

  it('takes every description from the COMMENTs the database carries', async () => {
    const [comment] = await fx.db.rows<{ d: string }>(
      `SELECT col_description('"${bi()}".reconciliation'::regclass, 2) AS d`,
    );
    const wpi = current.sources[0]!.tables.find((t) => t.name === 'reconciliation')!.columns.find(
      (c) => c.name === 'wpi',
    )!;
    expect(wpi.description).toBe(comment!.d);
    const dictionary = await fx.db.rows<{ view_name: string; column_name: string | null; description: string | null }>(
      `SELECT view_name, column_name, description FROM "${bi()}".data_dictionary`,
    );
    for (const table of current.sources[0]!.tables) {
      expect(table.description).toBe(
        dictionary.find((d) => d.view_name === table.name && d.column_name === null)!.description,
      );
      for (const column of table.columns)
        expect(column.description, `${table.name}.${column.name}`).toBe(
          dictionary.find((d) => d.view_name === table.name && d.column_name === column.name)!.description,
        );
    }
  });

  it('says what schema --json says of each relation: the same columns, types and descriptions (one description)', async () => {
    const printed = JSON.parse((await runCli(['schema', '--json'], fx.env)).stdout) as {
      $defs: Record<
        string,
        { description?: string; properties: Record<string, { description?: string; 'x-sql-type': string }> }
      >;
    };
    for (const source of current.sources) {
      for (const table of source.tables) {
        const def = printed.$defs[`${source.schema}.${table.name}`]!;
        expect(table.description).toBe(def.description);
        expect(table.columns.map((c) => [c.name, c.data_type, c.description])).toEqual(
          Object.entries(def.properties).map(([name, p]) => [name, p['x-sql-type'], p.description]),
        );
      }
    }
  });

  it('tests id in the current views (unique, not_null) and the run statuses and triggers (accepted_values, from the CHECKs on sync_runs)', () => {
    const column = (doc: Properties, source: number, table: string, name: string) =>
      doc.sources[source]!.tables.find((t) => t.name === table)!.columns.find((c) => c.name === name)!;
    const statuses = ['running', 'succeeded', 'failed', 'aborted', 'abandoned'];
    expect(column(current, 0, 'reconciliation', 'id').data_tests).toEqual(['unique', 'not_null']);
    expect(column(current, 0, 'reconciliation_history', 'id').data_tests).toBeUndefined();
    expect(column(current, 0, 'sync_freshness', 'last_run_status').data_tests).toEqual([
      { accepted_values: { arguments: { values: statuses } } },
    ]);
    expect(column(legacy, 0, 'sync_freshness', 'last_run_status').data_tests).toEqual([
      { accepted_values: { values: statuses } },
    ]);
    expect(column(current, 1, 'bulk_wine_reconciliation_current', 'id').data_tests).toEqual(['unique', 'not_null']);
    expect(column(current, 0, 'sync_freshness', 'last_run_trigger').data_tests).toEqual([
      {
        accepted_values: {
          arguments: {
            values: ['schedule', 'manual', 'replay', 'file', 'demo', 'run-now', 'catch-up', 'retry', 'page'],
          },
        },
      },
    ]);
    expect(column(current, 1, 'sync_runs', 'status').data_tests).toEqual([
      { accepted_values: { arguments: { values: statuses } } },
    ]);
  });

  it('is the same, byte for byte, for the same database', async () => {
    const first = await dbtSources(['--exact']);
    const second = await dbtSources(['--exact']);
    expect(second.text).toBe(first.text);
  });
});

describe('freshness', () => {
  it("warns after SYNC_STALE_AFTER, else after the schedule's rhythm; errors after twice that, or --error-after", async () => {
    expect(current.sources[0]!.config!.freshness).toEqual({
      warn_after: { count: 25, period: 'hour' },
      error_after: { count: 50, period: 'hour' },
    });
    const hourly = (await dbtSources([], { SYNC_SCHEDULE: '0 * * * *' })).doc;
    expect(hourly.sources[0]!.config!.freshness).toEqual({
      warn_after: { count: 2, period: 'hour' },
      error_after: { count: 4, period: 'hour' },
    });
    const stale = (await dbtSources(['--error-after', '3d'], { SYNC_STALE_AFTER: '90m' })).doc;
    expect(stale.sources[0]!.config!.freshness).toEqual({
      warn_after: { count: 90, period: 'minute' },
      error_after: { count: 3, period: 'day' },
    });
    const table = legacy.sources[0]!.tables.find((t) => t.name === 'sync_freshness')!;
    expect([table.loaded_at_field, table.freshness]).toEqual([
      'last_success_finished_at',
      current.sources[0]!.config!.freshness,
    ]);
  });

  it('is the last successful non-dry run, as dbt runs loaded_at_query and loaded_at_field, after a success, a failure and a dry run', async () => {
    const queries = () =>
      [...current.sources.map((s) => customSqlFreshness(s.config!.loaded_at_query))].concat(
        legacy.sources.map((s) => {
          const table = s.tables.find((t) => t.loaded_at_field !== undefined)!;
          return fieldFreshness(table.loaded_at_field!, `"${s.schema}"."${table.name}"`);
        }),
      );
    const all = async () => Promise.all(queries().map(loadedAt));
    expect(await all()).toEqual([null, null, null, null]);

    const ok = await run();
    expect([ok.code, ok.run.status]).toEqual([0, 'succeeded']);
    const at = new Date(ok.run.finished_at).toISOString();
    expect(await all()).toEqual([at, at, at, at]);

    fx.sim.setFault('count-mismatch', { times: 1 });
    const failed = await run();
    expect([failed.code, failed.run.status]).toEqual([1, 'failed']);
    expect(await all()).toEqual([at, at, at, at]);

    const dry = await run('--dry-run');
    expect([dry.code, dry.run.status, dry.run.dry_run]).toEqual([0, 'succeeded', true]);
    expect(await all()).toEqual([at, at, at, at]);
  });
});

describe('--out', () => {
  it('writes the file, writes it again, and leaves a file it did not write alone without --force (exit 2)', async () => {
    const file = join(fx.dir, 'sources.yml');
    const first = await runCli(['dbt-sources', '--out', file], fx.env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('');
    const written = await readFile(file, 'utf8');
    expect(written).toBe((await dbtSources()).text);
    expect((await runCli(['dbt-sources', '--out', file, '--name', 'wine'], fx.env)).code).toBe(0);
    expect(parse(await readFile(file, 'utf8')).sources[0].name).toBe('wine');

    const mine = join(fx.dir, 'mine.yml');
    await writeFile(mine, 'version: 2\nsources: []\n');
    const refused = await runCli(['dbt-sources', '--out', mine], fx.env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('was not written by dbt-sources');
    expect(await readFile(mine, 'utf8')).toBe('version: 2\nsources: []\n');
    const forced = await runCli(['dbt-sources', '--out', mine, '--force'], fx.env);
    expect(forced.code, forced.stderr).toBe(0);
    expect(await readFile(mine, 'utf8')).toBe(written);
  });

  it('refuses a bad --dbt-version, --name or --error-after with exit 2', async () => {
    for (const args of [
      ['--dbt-version', '1.7'],
      ['--name', 'no-dash'],
      ['--error-after', 'soon'],
    ]) {
      const r = await runCli(['dbt-sources', ...args], fx.env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(args[0]);
    }
  });
});

describe('a new field the job keeps', () => {
  it('appears, typed, after the next run and regeneration; a name that is an SQL keyword (not reserved) is marked quote: true', async () => {
    const rec = (id: number) =>
      `{"id":${id},"wpi":"W${id}","inventory_bulk_wine":"1.5","inventory_in_transit":${id}.25,"position":"n${id}"}`;
    fx.sim.setRecordsJson(Array.from({ length: 12 }, (_, i) => rec(i + 1)));
    const before = (await dbtSources()).doc.sources[0]!.tables.find((t) => t.name === 'reconciliation')!;
    expect(before.columns.map((c) => c.name)).not.toContain('inventory_in_transit');
    // Fields the earlier listing had and this one lacks would stop the run (schema drift).
    const r = await run('--accept-schema-change');
    expect(r.run.status).toBe('succeeded');
    const after = (await dbtSources()).doc;
    const view = after.sources[0]!.tables.find((t) => t.name === 'reconciliation')!;
    expect(view.columns.map((c) => c.name)).toEqual(await columnsOf(bi(), 'reconciliation'));
    expect(view.columns.find((c) => c.name === 'inventory_in_transit')).toMatchObject({ data_type: 'numeric(28,10)' });
    expect(view.columns.find((c) => c.name === 'position')).toMatchObject({ quote: true });
    expect(view.columns.find((c) => c.name === 'wpi')!.quote).toBeUndefined();
    expect(dbtPropertiesSchema('latest-fusion')(after)).toEqual([]);
  });
});
