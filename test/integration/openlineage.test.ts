/**
 * OpenLineage run events through the CLI, received by a real HTTP server: every event passes the
 * official 2-0-2 RunEvent schema and its facets' schemas (test/fixtures/openlineage); START comes
 * first and one end event follows with the same runId, the one stored in sync_runs; a killed run's
 * ABORT comes from the next run; a dry run sends nothing; a catalogue that fails or hangs leaves
 * the run succeeded and on time.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createPool } from '../../src/db/pool.js';
import { describeDatabase } from '../../src/db/relations.js';
import { createLogger, SecretRegistry } from '../../src/log.js';
import { RunReporter } from '../../src/observe/run-reporter.js';
import { runSync } from '../../src/run/sync.js';
import { WineApi } from '../../src/extract/http/api.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, startCli } from '../support/harness.js';
import { openLineage } from '../support/json-schemas.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const KEY = 'ol-api-key-5f2c9a71b3';
const fx = useSyncFixture('openlineage', { simulator: { records: 12 } });
let receiver: Receiver;
const schemas = openLineage();

type Event = {
  eventType: string;
  eventTime: string;
  producer: string;
  schemaURL: string;
  run: { runId: string; facets?: Record<string, Record<string, unknown>> };
  job: { namespace: string; name: string };
  inputs: Array<{ namespace: string; name: string }>;
  outputs: Array<{
    namespace: string;
    name: string;
    facets: { schema: { fields: Array<{ name: string; type: string; description?: string }> } };
    outputFacets?: Record<string, Record<string, unknown>>;
  }>;
};

beforeAll(async () => {
  receiver = await startReceiver('/api/v1/lineage');
  // BI views and migration 0016 in place before the first event is built.
  expect((await runCli(['migrate'], fx.env)).code).toBe(0);
});
afterAll(() => receiver?.close());

const env = () =>
  fx.envWith({
    SYNC_OPENLINEAGE_URL: receiver.url,
    SYNC_OPENLINEAGE_API_KEY: KEY,
    SYNC_OPENLINEAGE_NAMESPACE: 'winery-prod',
  });
const events = () => receiver.posts.map((p) => p.body as unknown as Event);
/** The test database's name (wrs_test when embedded; whatever TEST_DATABASE_URL names). */
const database = () => decodeURIComponent(new URL(fx.db.url).pathname.slice(1));
const run = async (...args: string[]) => {
  const r = await runCli(['run', '--json', ...args], env());
  return {
    ...r,
    run: JSON.parse(r.stdout || 'null') as {
      id: number;
      status: string;
      error: string | null;
      inserted: number;
    } | null,
  };
};
const lineageId = async (id: number) =>
  (await fx.db.rows<{ u: string }>('SELECT lineage_run_id::text AS u FROM sync_runs WHERE id = $1', [id]))[0]!.u;

/** Every event and each of its facets, against the official schemas. */
function expectValid(event: Event): void {
  expect(schemas.specVersion).toBe('2-0-2');
  expect(schemas.event(event), event.eventType).toEqual([]);
  const facets: Array<[string, unknown]> = [
    ...Object.entries(event.run.facets ?? {}).map(([k, v]) => [k, v] as [string, unknown]),
    ...event.outputs.flatMap((o) => [
      ['schema', o.facets.schema] as [string, unknown],
      ...Object.entries(o.outputFacets ?? {}),
    ]),
  ];
  const files: Record<string, string> = {
    schema: 'SchemaDatasetFacet.json',
    outputStatistics: 'OutputStatisticsOutputDatasetFacet.json',
    errorMessage: 'ErrorMessageRunFacet.json',
    parent: 'ParentRunFacet.json',
  };
  for (const [name, facet] of facets) {
    expect(schemas.facet(files[name]!)({ [name]: facet }), name).toEqual([]);
    // It names the version it was checked against.
    expect((facet as { _schemaURL: string })._schemaURL).toBe(schemas.facetId(files[name]!));
  }
  expect(schemas.facet('JobTypeJobFacet.json')((event.job as { facets: unknown }).facets)).toEqual([]);
}

describe('a succeeded run', () => {
  it('sends START then COMPLETE, one runId stored with the run, bearer key, valid against the 2-0-2 schemas', async () => {
    const before = receiver.posts.length;
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    const sent = events().slice(before);
    expect(sent.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
    const runId = await lineageId(r.run!.id);
    expect(sent.map((e) => e.run.runId)).toEqual([runId, runId]);
    expect(receiver.posts.slice(before).map((p) => [p.path, p.authorization])).toEqual([
      ['/api/v1/lineage', `Bearer ${KEY}`],
      ['/api/v1/lineage', `Bearer ${KEY}`],
    ]);
    for (const e of sent) expectValid(e);
    // The schemas do refuse: a runId that is not a UUID, a facet without its _producer.
    expect(schemas.event({ ...sent[0]!, run: { runId: 'run-1' } })).not.toEqual([]);
    expect(
      schemas.facet('SchemaDatasetFacet.json')({ schema: { _schemaURL: 'https://openlineage.io/x', fields: [] } }),
    ).not.toEqual([]);
    expect(sent[0]!.job).toMatchObject({ namespace: 'winery-prod', name: `${database()}.${fx.db.schema}` });
    expect(sent[0]!.producer).toMatch(/^https:\/\/www\.npmjs\.com\/package\/wine-recon-sync\/v\/\d+\.\d+\.\d+/);
    expect(r.stderr).not.toContain(KEY);
  });

  it('reads the listing (scheme://host:port and its path, no query or credential) and writes the data table and BI views, named as OpenLineage names PostgreSQL', async () => {
    const complete = events().at(-1)!;
    const sim = new URL(fx.sim.url);
    // Its facets (the run's checks as dataQualityAssertions) are run-checks-outputs.test.ts's to check.
    expect(complete.inputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([
      { namespace: `http://127.0.0.1:${sim.port}`, name: '/api/bulk-wine-reconciliation-data' },
    ]);
    const db = new URL(fx.db.url);
    const ns = `postgres://${db.hostname}:${db.port || '5432'}`;
    expect(complete.outputs.map((o) => [o.namespace, o.name])).toEqual([
      [ns, `${database()}.${fx.db.schema}.bulk_wine_reconciliation`],
      [ns, `${database()}.${fx.db.schema}.bulk_wine_reconciliation_history`],
      [ns, `${database()}.${fx.db.schema}_bi.reconciliation`],
      [ns, `${database()}.${fx.db.schema}_bi.reconciliation_history`],
    ]);
    const text = JSON.stringify(events());
    for (const secret of [fx.sim.password, fx.sim.email, 'for_reporting', KEY]) expect(text).not.toContain(secret);
    expect(complete.outputs[0]!.outputFacets!.outputStatistics).toMatchObject({ rowCount: 12 });
  });

  it("carries in each output's schema facet the columns the database has, kept new fields included, as schema --json has them", async () => {
    fx.sim.setRecordsJson(
      Array.from(
        { length: 12 },
        (_, i) => `{"id":${i + 1},"wpi":"W${i + 1}","inventory_bulk_wine":"1.5","inventory_in_transit":${i}.25}`,
      ),
    );
    const before = receiver.posts.length;
    const r = await run('--accept-schema-change');
    expect(r.code, r.stderr).toBe(0);
    const complete = events()
      .slice(before)
      .find((e) => e.eventType === 'COMPLETE')!;
    expectValid(complete);
    const schemaJson = JSON.parse((await runCli(['schema', '--json'], fx.env)).stdout) as {
      $defs: Record<string, { properties: Record<string, { description?: string; 'x-sql-type': string }> }>;
    };
    for (const output of complete.outputs) {
      const relation = output.name.split('.').slice(1).join('.');
      const columns = await fx.db.rows<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_schema || '.' || table_name = $1 ORDER BY ordinal_position",
        [relation],
      );
      expect(
        output.facets.schema.fields.map((f) => f.name),
        relation,
      ).toEqual(columns.map((c) => c.column_name));
      expect(output.facets.schema.fields.map((f) => [f.name, f.type, f.description])).toEqual(
        Object.entries(schemaJson.$defs[relation]!.properties).map(([name, p]) => [
          name,
          p['x-sql-type'],
          p.description,
        ]),
      );
    }
    const bi = complete.outputs.find((o) => o.name.endsWith('_bi.reconciliation'))!;
    expect(bi.facets.schema.fields.find((f) => f.name === 'inventory_in_transit')).toMatchObject({
      type: 'numeric(28,10)',
    });
  });
});

describe('a failed run (the mass-delete guard)', () => {
  it('sends START then FAIL with the stored, scrubbed error in an errorMessage facet', async () => {
    const before = receiver.posts.length;
    fx.sim.setFault('empty', { times: 1 });
    const r = await run();
    expect([r.code, r.run!.status]).toEqual([1, 'failed']);
    const sent = events().slice(before);
    expect(sent.map((e) => e.eventType)).toEqual(['START', 'FAIL']);
    expect(new Set(sent.map((e) => e.run.runId))).toEqual(new Set([await lineageId(r.run!.id)]));
    for (const e of sent) expectValid(e);
    expect(sent[1]!.run.facets!.errorMessage).toMatchObject({
      message: r.run!.error,
      programmingLanguage: 'TypeScript',
    });
    expect(sent[1]!.outputs[0]!.outputFacets).toBeUndefined();
  });
});

describe('a killed run', () => {
  it("sends START; its ABORT comes from the next run, which marks it abandoned, before that run's own START", async () => {
    const before = receiver.posts.length;
    fx.sim.setFault('slow', { times: 1, delayMs: 30_000 });
    const killed = startCli(['run'], env());
    await killed.waitForLog(/sync started/);
    await expect
      .poll(
        () =>
          events()
            .slice(before)
            .map((e) => e.eventType),
        { timeout: 10_000 },
      )
      .toEqual(['START']);
    killed.kill('SIGKILL');
    await killed.result;
    fx.sim.setFault(null);
    const [row] = await fx.db.rows<{ id: string; u: string }>(
      "SELECT id::text, lineage_run_id::text AS u FROM sync_runs WHERE status = 'running'",
    );
    expect(events().at(-1)!.run.runId).toBe(row!.u);

    const next = await run();
    expect(next.code, next.stderr).toBe(0);
    const sent = events().slice(before + 1);
    expect(sent.map((e) => [e.eventType, e.run.runId])).toEqual([
      ['ABORT', row!.u],
      ['START', await lineageId(next.run!.id)],
      ['COMPLETE', await lineageId(next.run!.id)],
    ]);
    for (const e of sent) expectValid(e);
    expect(sent[0]!.run.facets!.errorMessage!.message).toMatch(/stopped without finishing/);
  });
});

describe('a dry run', () => {
  it('sends nothing: it commits nothing, and a catalogue would record new versions of outputs it did not write', async () => {
    const before = receiver.posts.length;
    const r = await run('--dry-run');
    expect([r.code, r.run!.status]).toEqual([0, 'succeeded']);
    expect(receiver.posts.length).toBe(before);
  });
});

/**
 * One run in process with a daemon-like reporter (its metrics exist), as the CLI and the daemon hand it the run's start
 * and end.
 */
async function reportedRun(retry?: { attempt: number; retryOf: number }) {
  const e = env();
  const config = loadConfig(e, { api: true, database: true });
  const secrets = new SecretRegistry();
  const lines: string[] = [];
  const sink = new PassThrough();
  sink.on('data', (d: Buffer) => lines.push(...d.toString().split('\n').filter(Boolean)));
  const log = createLogger({ level: 'info', secrets, destination: sink });
  const pool = createPool({ databaseUrl: config.databaseUrl!, schema: config.schema, max: 4 });
  const reporter = new RunReporter({ config, secrets, pool, log }, { daemon: true, trigger: 'manual' });
  await reporter.start();
  const api = new WineApi(config.api!, log, secrets, { retryBaseMs: config.retryBaseMs, proxy: config.proxy });
  const outcome = await runSync(
    config,
    { pool, log, api, secrets, onRunStarted: (r, a) => reporter.runStarted(r, a) },
    { source: { kind: 'api' }, trigger: retry ? 'retry' : 'manual', ...(retry ? { retry } : {}) },
  );
  await reporter.finished({ outcome });
  let settled = false;
  const settling = reporter.settled().then(() => (settled = true));
  return { outcome, lines, reporter, settling, wasSettled: () => settled, close: () => pool.end() };
}

describe('a catalogue that is down', () => {
  it('answering 500: the run succeeds; the undelivered events are counted and logged once', async () => {
    receiver.failNext(1000, 500);
    const r = await reportedRun();
    try {
      expect(r.outcome.run.status).toBe('succeeded');
      await r.settling;
      const metric = await r.reporter.metrics!.registry.getSingleMetricAsString(
        'wine_recon_sync_openlineage_undelivered_total',
      );
      expect(metric).toMatch(/^wine_recon_sync_openlineage_undelivered_total 2$/m);
      expect(r.lines.filter((l) => l.includes('OpenLineage event could not be delivered'))).toHaveLength(1);
    } finally {
      receiver.failNext(0, 200);
      await r.close();
    }
  });

  it('hanging: the run finishes without waiting for it (well within one delivery timeout of 10 s)', async () => {
    receiver.hang(true);
    const r = await reportedRun();
    try {
      expect(r.outcome.run.status).toBe('succeeded');
      const ms = Date.parse(r.outcome.run.finished_at!) - Date.parse(r.outcome.run.started_at);
      expect(ms).toBeLessThan(10_000);
      // The run ended while its START was still waiting for an answer.
      expect(r.wasSettled()).toBe(false);
    } finally {
      receiver.hang(false);
      await receiver.close();
      receiver = await startReceiver('/api/v1/lineage');
      await r.settling;
      await r.close();
    }
  });
});

describe('a retried run', () => {
  it("links to its chain's first attempt with the parent run facet", async () => {
    const [first] = await fx.db.rows<{ id: string; u: string }>(
      "SELECT id::text, lineage_run_id::text AS u FROM sync_runs WHERE status = 'failed' ORDER BY id LIMIT 1",
    );
    const before = receiver.posts.length;
    const r = await reportedRun({ attempt: 2, retryOf: Number(first!.id) });
    try {
      await r.settling;
      const sent = events().slice(before);
      expect(sent.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
      for (const e of sent) {
        expectValid(e);
        expect(e.run.facets!.parent).toEqual(
          expect.objectContaining({ run: { runId: first!.u }, job: { namespace: e.job.namespace, name: e.job.name } }),
        );
      }
    } finally {
      await r.close();
    }
  });
});

describe('the one description', () => {
  it('is what schema --json prints: a valid draft 2020-12 schema with one definition per relation, each column in the database order', async () => {
    const { draft2020 } = await import('../support/json-schemas.js');
    const printed = JSON.parse((await runCli(['schema', '--json'], fx.env)).stdout) as {
      $schema: string;
      $defs: Record<string, { properties: Record<string, unknown>; 'x-primary-key'?: string[] }>;
    };
    expect(printed.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(draft2020()(printed)).toEqual([]);
    const described = await describeDatabase(fx.db.pool, { data: fx.db.schema, bi: `${fx.db.schema}_bi` });
    const relations = await fx.db.rows<{ name: string }>(
      "SELECT table_schema || '.' || table_name AS name FROM information_schema.tables WHERE table_schema IN ($1, $2) ORDER BY 1",
      [fx.db.schema, `${fx.db.schema}_bi`],
    );
    // Every relation the migrations and the BI views make, and nothing else.
    expect(Object.keys(printed.$defs).sort()).toEqual(relations.map((r) => r.name));
    expect(described.data.length + described.bi.length).toBe(relations.length);
    expect(printed.$defs[`${fx.db.schema}.bulk_wine_reconciliation`]!['x-primary-key']).toEqual(['id']);
  });
});
