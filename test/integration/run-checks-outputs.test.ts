/**
 * The run checks where other programs read them: the BI views run_profiles and run_checks (rounded
 * like the other BI views, exact in the base tables), the Prometheus metrics of the last run's
 * checks and the last load's totals (in process and from the daemon's /metrics, valid for
 * promtool), and the OpenLineage end events' data quality facets, every digit kept, valid against
 * the published facet schemas. The runs are real syncs; their profile and check rows are written
 * here after the run's row, as the run writes them (sync_run_profiles, sync_run_checks).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createPool } from '../../src/db/pool.js';
import { WineApi } from '../../src/extract/http/api.js';
import { createLogger, SecretRegistry } from '../../src/log.js';
import { RunReporter } from '../../src/observe/run-reporter.js';
import { runSync } from '../../src/run/sync.js';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli } from '../support/harness.js';
import { openLineage } from '../support/json-schemas.js';
import { describeWith, runs } from '../support/programs.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const fx = useSyncFixture('checks-out', { simulator: { records: 20 } });
const schemas = openLineage();
let receiver: Receiver;
const SCALE = 2;
const bi = () => `"${fx.db.schema}_bi"`;

/** More digits than a float holds, a total too large for numeric(28,2), a negative minimum. */
const BULK_TOTAL = '123456789012345678.123456789';
const HUGE_TOTAL = `1${'0'.repeat(27)}.5`;

type Check = [
  name: string,
  field: string | null,
  severity: string,
  passed: boolean,
  observed: string,
  expected: string,
];

async function writeRows(runId: string, checks: Check[]): Promise<void> {
  // The run stored its own profile and checks: replaced by these hard values.
  await fx.db.rows('DELETE FROM sync_run_profiles WHERE run_id = $1', [runId]);
  await fx.db.rows('DELETE FROM sync_run_checks WHERE run_id = $1', [runId]);
  const profile: Array<[string, string | null, string | null, string | null]> = [
    ['inventory_bulk_wine', BULK_TOTAL, '-0.005', '99999999999999.999999'],
    ['vintage_make', HUGE_TOTAL, '0', HUGE_TOTAL],
    ['first_sale', null, '2019-02-03', '2026-10-31'],
    ['wpi', null, null, null],
  ];
  for (const [field, total, min, max] of profile)
    await fx.db.rows(
      `INSERT INTO sync_run_profiles (run_id, field, row_count, null_count, total, min_value, max_value)
       VALUES ($1, $2, 20, 4, $3, $4, $5)`,
      [runId, field, total, min, max],
    );
  for (const [name, field, severity, passed, observed, expected] of checks)
    await fx.db.rows(
      `INSERT INTO sync_run_checks (run_id, check_name, field, severity, passed, observed, expected, message)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [runId, name, field, severity, passed, observed, expected, `${name}: ${observed}, expected ${expected}`],
    );
}

const WARNED: Check[] = [
  ['volume', null, 'warn', true, '20', 'within 30% of 20'],
  ['total:inventory_bulk_wine', 'inventory_bulk_wine', 'warn', false, BULK_TOTAL, 'within 50% of 100.5'],
  ['nulls:first_sale', 'first_sale', 'error', true, '20%', 'at most +30 points'],
];
const REFUSED: Check[] = [
  ['min:inventory_bulk_wine', 'inventory_bulk_wine', 'error', false, '-0.005', '>= 0'],
  ['volume', null, 'warn', true, '20', 'within 30% of 20'],
];

/** A run in process with the daemon's reporter (metrics, lineage); `rows` writes its check rows before it is told. */
async function reportedRun(rows: (runId: string) => Promise<void>) {
  const env = fx.envWith({ SYNC_OPENLINEAGE_URL: receiver.url, SYNC_BI_SCALE: String(SCALE) });
  const config = loadConfig(env, { api: true, database: true });
  const secrets = new SecretRegistry();
  const log = createLogger({ level: 'info', secrets, destination: new PassThrough().resume() });
  const pool = createPool({ databaseUrl: config.databaseUrl!, schema: config.schema, max: 4 });
  const reporter = new RunReporter({ config, secrets, pool, log }, { daemon: true, trigger: 'manual' });
  await reporter.start();
  const api = new WineApi(config.api!, log, secrets, { retryBaseMs: config.retryBaseMs, proxy: config.proxy });
  const outcome = await runSync(
    config,
    { pool, log, api, secrets, onRunStarted: (r, a) => reporter.runStarted(r, a) },
    { source: { kind: 'api' }, trigger: 'manual' },
  );
  await rows(String(outcome.run.id));
  await reporter.finished({ outcome });
  await reporter.settled();
  const metrics = await reporter.metrics!.text();
  await pool.end();
  return { run: outcome.run, metrics };
}

const sample = (text: string, series: string) =>
  text
    .split('\n')
    .find((l) => l.startsWith(`${series} `))
    ?.slice(series.length + 1);

let warnedRun: { run: { id: number; status: string }; metrics: string };
let refusedRun: { run: { id: number; status: string }; metrics: string };
let plainFail: { run: { id: number; status: string }; metrics: string };

beforeAll(async () => {
  receiver = await startReceiver('/api/v1/lineage');
  expect((await runCli(['migrate'], fx.envWith({ SYNC_BI_SCALE: String(SCALE) }))).code).toBe(0);
  warnedRun = await reportedRun((id) => writeRows(id, WARNED));
  // A listing that fails: recorded as a check refusal would be (status failed, a failed error check).
  fx.sim.setRecordsJson(['{"id":1,"wpi":"W1"}', '{"id":2,"wpi":"x" broken}']);
  refusedRun = await reportedRun((id) => writeRows(id, REFUSED));
  // The same failure without any check row: a FAIL with no data quality facet.
  plainFail = await reportedRun(async () => undefined);
  fx.sim.setRecordsJson(null);
}, 120_000);
afterAll(() => receiver?.close());

describe('BI views', () => {
  it('run_profiles: rounded to numeric(28,S), too large ones NULL and named; exact in the table', async () => {
    const id = warnedRun.run.id;
    const view = await fx.db.rows(
      `SELECT field, row_count::int, null_count::int, total::text, min_value::text, max_value::text,
              min_date::text, max_date::text, overflow_columns, run_status
       FROM ${bi()}.run_profiles WHERE run_id = $1 ORDER BY field`,
      [id],
    );
    expect(view).toEqual([
      {
        field: 'first_sale',
        row_count: 20,
        null_count: 4,
        total: null,
        min_value: null,
        max_value: null,
        min_date: '2019-02-03',
        max_date: '2026-10-31',
        overflow_columns: null,
        run_status: 'succeeded',
      },
      {
        field: 'inventory_bulk_wine',
        row_count: 20,
        null_count: 4,
        total: '123456789012345678.12',
        // Half away from zero, as the other BI views round.
        min_value: '-0.01',
        max_value: '100000000000000.00',
        min_date: null,
        max_date: null,
        overflow_columns: null,
        run_status: 'succeeded',
      },
      {
        field: 'vintage_make',
        row_count: 20,
        null_count: 4,
        total: null,
        min_value: '0.00',
        max_value: null,
        min_date: null,
        max_date: null,
        overflow_columns: 'total,max_value',
        run_status: 'succeeded',
      },
      {
        field: 'wpi',
        row_count: 20,
        null_count: 4,
        total: null,
        min_value: null,
        max_value: null,
        min_date: null,
        max_date: null,
        overflow_columns: null,
        run_status: 'succeeded',
      },
    ]);
    const [exact] = await fx.db.rows<{ total: string }>(
      `SELECT total::text FROM sync_run_profiles WHERE run_id = $1 AND field = 'inventory_bulk_wine'`,
      [id],
    );
    expect(exact!.total).toBe(BULK_TOTAL);
    const types = await fx.db.rows(
      `SELECT column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'run_profiles' AND column_name IN ('total', 'min_date') ORDER BY 1`,
      [`${fx.db.schema}_bi`],
    );
    expect(types).toEqual([
      { column_name: 'min_date', data_type: 'date', numeric_precision: null, numeric_scale: null },
      { column_name: 'total', data_type: 'numeric', numeric_precision: 28, numeric_scale: SCALE },
    ]);
  });

  it('run_checks: every check of every run as stored, with the run it belongs to', async () => {
    const rows = await fx.db.rows(
      `SELECT run_id::int, run_status, check_name, field, severity, passed, observed, expected
       FROM ${bi()}.run_checks ORDER BY run_id, check_name`,
    );
    expect(rows).toEqual([
      ...[...WARNED]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([check_name, field, severity, passed, observed, expected]) => ({
          run_id: warnedRun.run.id,
          run_status: 'succeeded',
          ...{ check_name, field, severity, passed, observed, expected },
        })),
      ...[...REFUSED]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([check_name, field, severity, passed, observed, expected]) => ({
          run_id: refusedRun.run.id,
          run_status: 'failed',
          ...{ check_name, field, severity, passed, observed, expected },
        })),
    ]);
  });
});

describe('schema --json and dbt-sources', () => {
  it('describe both views, typed as the database declares them', async () => {
    const schema = await runCli(['schema', '--json'], fx.envWith({ SYNC_BI_SCALE: String(SCALE) }));
    expect(schema.code, schema.stderr).toBe(0);
    const defs = JSON.parse(schema.stdout).$defs as Record<string, { properties: Record<string, unknown> }>;
    expect(defs[`${fx.db.schema}_bi.run_profiles`]!.properties.total).toMatchObject({
      type: ['number', 'null'],
      'x-sql-type': `numeric(28,${SCALE})`,
    });
    expect(Object.keys(defs[`${fx.db.schema}_bi.run_checks`]!.properties)).toContain('observed');
    expect(Object.keys(defs)).toEqual(
      expect.arrayContaining([`${fx.db.schema}.sync_run_profiles`, `${fx.db.schema}.sync_run_checks`]),
    );
    const dbt = await runCli(['dbt-sources', '--exact'], fx.envWith({ SYNC_BI_SCALE: String(SCALE) }));
    expect(dbt.code, dbt.stderr).toBe(0);
    for (const name of ['run_profiles', 'run_checks', 'sync_run_profiles', 'sync_run_checks'])
      expect(dbt.stdout).toContain(`- name: ${name}\n`);
  });
});

describe('Prometheus', () => {
  it("after each run: its checks' series replace the run before's; the totals are the last load's", () => {
    const warned = warnedRun.metrics;
    expect(
      sample(
        warned,
        'wine_recon_sync_check_failed{check="total:inventory_bulk_wine",field="inventory_bulk_wine",severity="warn"}',
      ),
    ).toBe('1');
    expect(sample(warned, 'wine_recon_sync_check_failed{check="volume",field="",severity="warn"}')).toBe('0');
    expect(
      sample(warned, 'wine_recon_sync_check_failed{check="nulls:first_sale",field="first_sale",severity="error"}'),
    ).toBe('0');
    // A float: the exact digits are in the table.
    expect(Number(sample(warned, 'wine_recon_sync_field_total_value{field="inventory_bulk_wine"}'))).toBe(
      Number.parseFloat(BULK_TOTAL),
    );
    expect(warned).not.toContain('wine_recon_sync_field_total_value{field="first_sale"}');

    const refused = refusedRun.metrics;
    expect(
      sample(
        refused,
        'wine_recon_sync_check_failed{check="min:inventory_bulk_wine",field="inventory_bulk_wine",severity="error"}',
      ),
    ).toBe('1');
    expect(refused).not.toContain('check="total:inventory_bulk_wine"');
    // Nothing was committed: the totals stay the last successful load's.
    expect(Number(sample(refused, 'wine_recon_sync_field_total_value{field="inventory_bulk_wine"}'))).toBe(
      Number.parseFloat(BULK_TOTAL),
    );
    expect(plainFail.metrics).not.toMatch(/^wine_recon_sync_check_failed\{/m);
  });

  describeWith('promtool (Debian package prometheus)', runs('promtool'), 'from the daemon', () => {
    it("a restarted daemon's /metrics carry the last run's checks, valid for promtool check metrics", async () => {
      // The last run without checks (plainFail) is newest: one with them comes first.
      fx.sim.setRecordsJson(['{"id":1,"wpi":"W1"}', '{"id":2,"wpi":"x" broken}']);
      const again = await reportedRun((id) => writeRows(id, REFUSED));
      fx.sim.setRecordsJson(null);
      expect(again.run.status).toBe('failed');
      const port = await freePort();
      const daemon = startCli(['schedule'], {
        ...fx.env,
        SYNC_SCHEDULE: '0 3 1 1 *',
        SYNC_METRICS_PORT: String(port),
        SYNC_HEALTH_FILE: join(fx.dir, 'health'),
      });
      try {
        await daemon.waitForLog(/serving metrics/);
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        expect(
          sample(
            text,
            'wine_recon_sync_check_failed{check="min:inventory_bulk_wine",field="inventory_bulk_wine",severity="error"}',
          ),
        ).toBe('1');
        expect(Number(sample(text, 'wine_recon_sync_field_total_value{field="inventory_bulk_wine"}'))).toBe(
          Number.parseFloat(BULK_TOTAL),
        );
        const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 60_000 });
        expect(check.status, check.stdout + check.stderr).toBe(0);
      } finally {
        daemon.kill('SIGTERM');
        await daemon.result;
      }
    });
  });
});

describe('OpenLineage', () => {
  type Dataset = {
    name: string;
    facets?: Record<string, Record<string, unknown>>;
    inputFacets?: Record<string, Record<string, unknown>>;
  };
  type Event = { eventType: string; run: { runId: string }; inputs: Dataset[]; outputs: Dataset[] };
  const endOf = async (id: number) => {
    const [{ u }] = await fx.db.rows<{ u: string }>('SELECT lineage_run_id::text AS u FROM sync_runs WHERE id = $1', [
      id,
    ]);
    const post = receiver.posts.find(
      (p) => (p.body as unknown as Event).run.runId === u && (p.body as unknown as Event).eventType !== 'START',
    )!;
    return { event: post.body as unknown as Event, text: post.text };
  };
  const table = (e: Event) => e.outputs.find((o) => o.name.endsWith(`.${fx.db.schema}.bulk_wine_reconciliation`))!;
  const metricsFacet = (file: string) => schemas.facet(file);

  it('COMPLETE: dataQualityMetrics with every digit, dataQualityAssertions on the listing; valid', async () => {
    const { event, text } = await endOf(warnedRun.run.id);
    expect(event.eventType).toBe('COMPLETE');
    expect(schemas.event(event)).toEqual([]);
    const metrics = table(event).facets!.dataQualityMetrics!;
    expect(metricsFacet('DataQualityMetricsDatasetFacet.json')({ dataQualityMetrics: metrics })).toEqual([]);
    expect(metrics._schemaURL).toBe(schemas.facetId('DataQualityMetricsDatasetFacet.json'));
    expect(metrics.rowCount).toBe(20);
    expect((metrics.columnMetrics as Record<string, unknown>).first_sale).toEqual({ nullCount: 4, count: 16 });
    expect((metrics.columnMetrics as Record<string, unknown>).wpi).toEqual({ nullCount: 4, count: 16 });
    // The exact digits as JSON number text, as sent (JSON.parse would round them).
    expect(text).toContain(
      `"inventory_bulk_wine":{"nullCount":4,"count":16,"sum":${BULK_TOTAL},"min":-0.005,"max":99999999999999.999999}`,
    );
    expect(text).toContain(`"sum":${HUGE_TOTAL}`);
    // Only the table the profile describes: not its history, nor the rounded views.
    expect(event.outputs.filter((o) => o.facets?.dataQualityMetrics !== undefined)).toHaveLength(1);

    const assertions = event.inputs[0]!.inputFacets!.dataQualityAssertions!;
    expect(metricsFacet('DataQualityAssertionsDatasetFacet.json')({ dataQualityAssertions: assertions })).toEqual([]);
    expect(assertions._schemaURL).toBe(schemas.facetId('DataQualityAssertionsDatasetFacet.json'));
    expect(assertions.assertions).toEqual([
      expect.objectContaining({
        assertion: 'total',
        name: 'total:inventory_bulk_wine',
        success: false,
        column: 'inventory_bulk_wine',
        severity: 'warn',
        actual: BULK_TOTAL,
        expected: 'within 50% of 100.5',
      }),
      expect.objectContaining({ assertion: 'nulls', success: true, column: 'first_sale', severity: 'error' }),
      expect.not.objectContaining({ column: expect.anything() }),
    ]);
    expect((assertions.assertions as Array<{ assertion: string }>)[2]!.assertion).toBe('volume');
  });

  it('a FAIL of a run a check refused carries both; a FAIL for another cause carries neither', async () => {
    const { event, text } = await endOf(refusedRun.run.id);
    expect(event.eventType).toBe('FAIL');
    expect(schemas.event(event)).toEqual([]);
    const metrics = table(event).facets!.dataQualityMetrics!;
    expect(metricsFacet('DataQualityMetricsDatasetFacet.json')({ dataQualityMetrics: metrics })).toEqual([]);
    expect(text).toContain(`"sum":${BULK_TOTAL}`);
    const assertions = event.inputs[0]!.inputFacets!.dataQualityAssertions!;
    expect(metricsFacet('DataQualityAssertionsDatasetFacet.json')({ dataQualityAssertions: assertions })).toEqual([]);
    expect(
      (assertions.assertions as Array<{ name: string; success: boolean }>).map((a) => [a.name, a.success]),
    ).toEqual([
      ['min:inventory_bulk_wine', false],
      ['volume', true],
    ]);

    const plain = await endOf(plainFail.run.id);
    expect(plain.event.eventType).toBe('FAIL');
    expect(schemas.event(plain.event)).toEqual([]);
    expect(plain.event.outputs.some((o) => o.facets?.dataQualityMetrics !== undefined)).toBe(false);
    expect(plain.event.inputs.some((i) => i.inputFacets !== undefined)).toBe(false);
  });
});
