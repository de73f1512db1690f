/**
 * No record can stop the runs after it, through the CLI against the simulator
 * serving raw record text and a real PostgreSQL: field names of 3 kB and 60 kB in valid and in
 * rejected records, records full of numbers that explode when printed, 20,000 distinct bad names.
 * Each run and the next one succeed (or fail where a rule says so), the BI views answer a query
 * of every column, and the CLI's peak RSS is measured (a generous bound: the figure is printed).
 * Also: sync_rejects pruned to the newest SYNC_REJECTS_KEEP runs.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shownName } from '../../src/transform/field-name.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli } from '../support/harness.js';
import { startReceiver } from '../support/receiver.js';
import { pickWith, xorshift } from '../support/random.js';

const PEAK_RSS_CLI = join(ROOT, 'test', 'support', 'peak-rss-cli.mjs');
/** Generous: a run of these listings peaks near 100 MB; a name or number kept whole per record would not fit. */
const PEAK_RSS_BOUND_MB = 400;

const fx = useSyncFixture('hostile_records', { simulator: { records: 10 }, each: true });

interface Synced {
  code: number | null;
  stderr: string;
  run: Record<string, unknown> & { id: number; status: string; error: string | null; unknown_fields: string[] | null };
  peakMb: number;
}

async function sync(env: Record<string, string> = {}, label = ''): Promise<Synced> {
  const r = await runCli(['run', '--json'], { ...fx.env, ...env }, 180_000, PEAK_RSS_CLI);
  const peak = /peak-rss-kb (\d+)/.exec(r.stderr);
  expect(peak, r.stderr.slice(-2000)).not.toBeNull();
  const peakMb = Math.round(Number(peak![1]) / 1024);
  console.log(`peak RSS of the CLI (${label || 'run'}): ${peakMb} MB`);
  expect(peakMb).toBeLessThan(PEAK_RSS_BOUND_MB);
  return { code: r.code, stderr: r.stderr, run: JSON.parse(r.stdout), peakMb };
}

const bi = () => `"${fx.db.schema}_bi"`;

/** Every column of the BI views, every row: what a dashboard's `SELECT *` gets. */
async function readViews(): Promise<number> {
  const live = await fx.db.rows<Record<string, unknown>>(`SELECT * FROM ${bi()}.reconciliation`);
  await fx.db.rows(`SELECT * FROM ${bi()}.reconciliation_history`);
  await fx.db.rows(`SELECT * FROM ${bi()}.data_dictionary`);
  await fx.db.rows(`SELECT * FROM ${bi()}.sync_freshness`);
  return live.length;
}

/**
 * A deterministic random name of at least `bytes` bytes of UTF-8: letters, digits, punctuation, quotes, accents, CJK,
 * emoji.
 */
function randomName(bytes: number, seed: number): string {
  const alphabet = [
    ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.:;,!?()[]{}<>|&%$#@~^*+=/\'"\\',
    'é',
    'ß',
    '葡',
    '萄',
    '🍷',
    '\t',
  ];
  const pick = pickWith(xorshift(seed));
  let name = '';
  let size = 0;
  while (size < bytes) {
    const ch = pick(alphabet);
    name += ch;
    size += Buffer.byteLength(ch);
  }
  return name;
}

/** A valid record (the known fields), then `extra` members: name -> JSON text of the value. */
const rec = (id: number, extra: ReadonlyArray<readonly [string, string]> = [], wpi: string | null = `W${id}`) => {
  const members = extra.map(([k, v]) => `,${JSON.stringify(k)}:${v}`).join('');
  const wpiMember = wpi === null ? '' : `,"wpi":"${wpi}"`;
  return `{"id":${id}${wpiMember},"inventory_bulk_wine":"${id}.5","first_sale":"2021-03-04"${members}}`;
};

const NUMBER_TOO_LONG = 'cannot be kept in extra_fields: a number that prints as more than 1000 digits';

describe('long field names', () => {
  it('3 kB and 60 kB names, in valid and in rejected records: every run succeeds, values under the exact name, names shown shortened everywhere', async () => {
    const valid3k = randomName(3_000, 1);
    const valid60k = randomName(60_000, 2);
    const rejected3k = randomName(3_000, 3);
    const rejected60k = randomName(60_000, 4);
    const N = 60;
    const records = Array.from({ length: N }, (_, i) => {
      const id = i + 1;
      if (id === 1) return rec(id, [[valid3k, '1']]);
      if (id === 2)
        return rec(id, [
          [valid60k, '"sixty"'],
          ['plain', '2'],
        ]);
      if (id === 3) return rec(id, [[rejected3k, '3']], null); // no wpi: rejected, its name still counted
      if (id === 4) return rec(id, [[rejected60k, '1e131000']]); // a number the rule refuses, under a long name
      return rec(id, [['plain', String(id)]]);
    });
    for (const r of records) expect(r.length).toBeLessThan(65_536); // each record whole in sync_rejects.raw
    fx.sim.setRecordsJson(records);
    const receiver = await startReceiver();
    fx.onTeardown(() => receiver.close());
    const env = { SYNC_NOTIFY_URL: receiver.url, SYNC_NOTIFY_ON: 'all' };

    const first = await sync(env, 'long names, first run');
    expect(first.run).toMatchObject({ status: 'succeeded', inserted: N - 2, rejected: 2 });

    // The values: under their exact names in extra_fields.
    const value = async (id: number, name: string) =>
      (
        await fx.db.rows<{ v: unknown }>(
          'SELECT extra_fields -> $1::text AS v FROM bulk_wine_reconciliation WHERE id = $2',
          [name, id],
        )
      )[0]?.v;
    expect(await value(1, valid3k)).toBe(1);
    expect(await value(2, valid60k)).toBe('sixty');
    const keys = await fx.db.rows<{ k: string }>(
      'SELECT k FROM bulk_wine_reconciliation, jsonb_object_keys(extra_fields) k WHERE id = 2 ORDER BY octet_length(k) DESC',
    );
    expect(keys[0]!.k).toBe(valid60k);

    // The names: at most 128 bytes wherever they are stored.
    const shown = [valid3k, valid60k, rejected3k, rejected60k].map(shownName);
    for (const s of shown) expect(Buffer.byteLength(s)).toBeLessThanOrEqual(128);
    const fields = await fx.db.rows<{ name: string; column_name: string | null; note: string | null }>(
      'SELECT name, column_name, note FROM sync_fields ORDER BY name',
    );
    expect(fields.map((f) => f.name).sort()).toEqual([...shown, 'plain'].sort());
    for (const f of fields.filter((f) => f.name !== 'plain'))
      expect(f).toMatchObject({ column_name: null, note: 'name longer than 63 bytes' });
    const [audit] = await fx.db.rows<{ longest_unknown: number; longest_count: number }>(
      `SELECT (SELECT max(octet_length(u)) FROM unnest(unknown_fields) u) AS longest_unknown,
              (SELECT max(octet_length(k)) FROM jsonb_object_keys(field_counts->'unknown') k) AS longest_count
       FROM sync_runs WHERE id = $1`,
      [first.run.id],
    );
    expect(audit!.longest_unknown).toBeLessThanOrEqual(128);
    expect(audit!.longest_count).toBeLessThanOrEqual(128);
    const [{ names }] = (await fx.db.rows<{ names: string[] }>(
      'SELECT unknown_fields AS names FROM sync_runs WHERE id = $1',
      [first.run.id],
    )) as [{ names: string[] }];
    expect(names.slice().sort()).toEqual([...shown, 'plain'].sort());

    // The rejects: the long name as shown in the reason, the record whole in raw.
    const rejects = await fx.db.rows<{
      position: string;
      errors: Array<{ path: string; message: string }>;
      raw: string;
    }>('SELECT position::text, errors, raw FROM sync_rejects ORDER BY position');
    expect(rejects.map((r) => [r.position, r.errors])).toEqual([
      ['2', [{ path: 'wpi', message: 'required' }]],
      ['3', [{ path: shownName(rejected60k), message: NUMBER_TOO_LONG }]],
    ]);
    expect(rejects[1]!.raw).toBe(records[3]);

    // What people read: the log, the summary and the webhook carry no name whole.
    expect(Buffer.byteLength(first.stderr)).toBeLessThan(30_000);
    const post = receiver.posts.at(-1)!;
    expect(JSON.stringify(post.body).length).toBeLessThan(20_000);
    expect((post.body.new_fields as Array<{ name: string }>).map((f) => f.name).sort()).toEqual(
      [...shown, 'plain'].sort(),
    );

    // A dashboard's SELECT * of the views, and the value through the view's extra_fields.
    expect(await readViews()).toBe(N - 2);
    const [viewed] = await fx.db.rows<{ extra_fields: string }>(
      `SELECT extra_fields FROM ${bi()}.reconciliation WHERE id = 1`,
    );
    expect(JSON.parse(viewed!.extra_fields)).toEqual({ [valid3k]: 1 });

    // The next run, same listing: nothing changes, nothing fails.
    const second = await sync(env, 'long names, next run');
    expect(second.run).toMatchObject({ status: 'succeeded', unchanged: N - 2, rejected: 2, inserted: 0, updated: 0 });
    expect((await fx.db.rows('SELECT name FROM sync_fields')).length).toBe(5);
    expect(await readViews()).toBe(N - 2);
  }, 240_000);
});

describe('numbers that explode when printed', () => {
  it('records full of 1e131000 and 1e-16383 are rejected, naming the field; the others load, the views read, the next run succeeds', async () => {
    // About 4,000 members of 8 bytes of JSON each: 500 MB of text once printed, under the 64 kB raw cap.
    const bomb = (id: number, number: string) =>
      rec(
        id,
        Array.from({ length: 3_700 }, (_, k) => [`a${k}`, number] as const),
      );
    // 500 of them (31 MB of listing): their rejects, stored whole, must not cost memory by the
    // hundreds of MB (a text[] parameter of their raw text once did: 540 MB).
    const BOMBS = 500;
    const N = 1_000;
    const records = Array.from({ length: N }, (_, i) => {
      const id = i + 1;
      if (id <= BOMBS) return bomb(id, id % 2 ? '1e131000' : '1e-16383');
      if (id === BOMBS + 1) return rec(id, [['edge', '1e999']]); // prints exactly 1000 digits: kept
      if (id === BOMBS + 2) return rec(id, [['edge', '-1.5e-998']]);
      if (id === BOMBS + 3) return rec(id, [['edge', '[1, {"deep": 1e1000}]']]); // at any depth
      return rec(id, [['edge', `${id}.25`]]);
    });
    for (const r of records) expect(r.length).toBeLessThan(65_536);
    fx.sim.setRecordsJson(records);
    const env = { SYNC_MAX_REJECT_RATIO: '0.6' };

    const first = await sync(env, 'numbers, first run');
    expect(first.run).toMatchObject({ status: 'succeeded', inserted: N - BOMBS - 1, rejected: BOMBS + 1 });
    const rejects = await fx.db.rows<{
      position: number;
      errors: Array<{ path: string; message: string }>;
      raw: string;
    }>('SELECT position::int, errors, raw FROM sync_rejects ORDER BY position');
    expect(rejects.map((r) => r.position)).toEqual([...Array.from({ length: BOMBS }, (_, k) => k), BOMBS + 2]);
    expect(rejects[7]!.raw).toBe(records[7]);
    for (const r of rejects.slice(0, BOMBS)) {
      expect(r.errors).toHaveLength(11);
      expect(r.errors[0]).toEqual({ path: 'a0', message: NUMBER_TOO_LONG });
      expect(r.errors[10]).toEqual({
        path: '',
        message: 'and more fields that cannot be kept in extra_fields (the first 10 are named)',
      });
    }
    expect(rejects[BOMBS]!.errors).toEqual([{ path: 'edge', message: NUMBER_TOO_LONG }]);

    const [sizes] = await fx.db.rows<{ longest: number; total: number; edge: number }>(
      `SELECT max(octet_length(extra_fields::text))::int AS longest,
        sum(octet_length(extra_fields::text))::int AS total,
              (SELECT length(extra_fields->>'edge') FROM bulk_wine_reconciliation WHERE id = ${BOMBS + 1})::int AS edge
       FROM bulk_wine_reconciliation`,
    );
    expect(sizes).toMatchObject({ edge: 1000 });
    expect(sizes!.longest).toBeLessThan(1_100);
    expect(sizes!.total).toBeLessThan(100_000);
    expect(await readViews()).toBe(N - BOMBS - 1);

    const second = await sync(env, 'numbers, next run');
    expect(second.run).toMatchObject({ status: 'succeeded', unchanged: N - BOMBS - 1, rejected: BOMBS + 1 });
  }, 240_000);
});

describe('20,000 distinct bad field names', () => {
  it('fail the run only by the reject threshold, with a bounded error; with a higher threshold and after it, the runs succeed', async () => {
    const BAD = 20_000;
    const GOOD = 100;
    // Each bad record: a name of its own (longer than 128 bytes) holding a NUL, which jsonb refuses.
    const records = [
      ...Array.from({ length: BAD }, (_, i) => rec(i + 1, [[`bad_${i}_${'n'.repeat(200)}`, '"\\u0000"']])),
      ...Array.from({ length: GOOD }, (_, i) => rec(BAD + i + 1)),
    ];
    fx.sim.setRecordsJson(records);

    const refused = await sync({}, '20,000 names, refused');
    expect(refused.run).toMatchObject({ status: 'failed', rejected: BAD });
    const error = refused.run.error!;
    expect(error).toContain(`${BAD} of ${BAD + GOOD} records rejected`);
    expect(error).toContain(`other reasons (past the first 100 distinct ones) (${BAD - 100})`);
    expect(error.length).toBeLessThan(3_000);
    const [run] = await fx.db.rows<{ names: number; truncated: boolean; stored: number }>(
      `SELECT cardinality(unknown_fields) AS names, (field_counts->>'unknown_truncated')::boolean AS truncated,
              (SELECT count(*)::int FROM sync_rejects s WHERE s.run_id = r.id) AS stored
       FROM sync_runs r WHERE id = $1`,
      [refused.run.id],
    );
    expect(run).toEqual({ names: 1000, truncated: true, stored: 10_000 });

    const accepted = await sync({ SYNC_MAX_REJECT_RATIO: '1' }, '20,000 names, accepted');
    expect(accepted.run).toMatchObject({ status: 'succeeded', inserted: GOOD, rejected: BAD });
    expect(await readViews()).toBe(GOOD);

    fx.sim.setRecordsJson(records.slice(BAD));
    const clean = await sync({}, '20,000 names, then a clean listing');
    expect(clean.run).toMatchObject({ status: 'succeeded', unchanged: GOOD, rejected: 0 });
  }, 300_000);
});

describe('sync_rejects', () => {
  it('stores rejects whose id or field name holds NUL or an unpaired surrogate (as \\u0000 and U+FFFD); names stored alike make one sync_fields row', async () => {
    const records = [
      ...Array.from({ length: 40 }, (_, i) => rec(i + 1)),
      '{"id":"7\\u0000x","wpi":"W"}',
      '{"id":"\\ud800","wpi":"W"}',
      '{"id":50,"wpi":"W","\\ud800name\\u0000":1}',
      // Two names PostgreSQL stores alike (U+FFFD for the unpaired surrogate): one sync_fields row.
      '{"id":51,"wpi":"W","\\ud800a":1}',
      '{"id":52,"wpi":"W","\\udbffa":1}',
    ];
    fx.sim.setRecordsJson(records);
    const run = await sync({ SYNC_MAX_REJECT_RATIO: '0.5' }, 'odd text in rejects');
    expect(run.run).toMatchObject({ status: 'succeeded', inserted: 40, rejected: 5 });
    expect(await fx.db.rows('SELECT name, records::int FROM sync_fields')).toEqual([{ name: '\uFFFDa', records: 2 }]);
    const rejects = await fx.db.rows<{ record_id: string | null; path: string; raw: string }>(
      `SELECT record_id, errors->0->>'path' AS path, raw FROM sync_rejects ORDER BY position`,
    );
    expect(rejects).toEqual([
      { record_id: '7\\u0000x', path: 'id', raw: records[40] },
      { record_id: '\uFFFD', path: 'id', raw: records[41] },
      { record_id: '50', path: '\uFFFDname\\u0000', raw: records[42] },
      { record_id: '51', path: '\uFFFDa', raw: records[43] },
      { record_id: '52', path: '\uFFFDa', raw: records[44] },
    ]);
  });

  it('keeps the rejects of the newest SYNC_REJECTS_KEEP runs, failed ones included, and prunes the older after each run', async () => {
    const env = { SYNC_REJECTS_KEEP: '2' };
    const listing = (bad: number) => [
      ...Array.from({ length: 40 }, (_, i) => rec(i + 1)),
      ...Array.from({ length: bad }, (_, i) => rec(100 + i, [], null)),
    ];
    const runs: number[] = [];
    const stored = async () =>
      (
        await fx.db.rows<{ run_id: number; n: number }>(
          'SELECT run_id::int, count(*)::int AS n FROM sync_rejects GROUP BY run_id ORDER BY run_id',
        )
      ).map((r) => [r.run_id, r.n]);

    fx.sim.setRecordsJson(listing(1));
    runs.push((await sync(env, 'prune 1')).run.id);
    fx.sim.setRecordsJson(listing(40)); // half rejected: the run fails, its rejects are kept
    const failed = await sync(env, 'prune 2');
    expect(failed.run.status).toBe('failed');
    runs.push(failed.run.id);
    expect(await stored()).toEqual([
      [runs[0], 1],
      [runs[1], 40],
    ]);
    fx.sim.setRecordsJson(listing(2));
    runs.push((await sync(env, 'prune 3')).run.id);
    expect(await stored()).toEqual([
      [runs[1], 40],
      [runs[2], 2],
    ]);
    // A run without rejects still counts as one of the newest.
    fx.sim.setRecordsJson(listing(0));
    runs.push((await sync(env, 'prune 4')).run.id);
    expect(await stored()).toEqual([[runs[2], 2]]);
    expect((await fx.db.rows('SELECT count(*)::int AS n FROM sync_runs'))[0]).toEqual({ n: 4 });

    const bad = await runCli(['run'], { ...fx.env, SYNC_REJECTS_KEEP: '0' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('SYNC_REJECTS_KEEP: must be at least 1');
  }, 120_000);
});
