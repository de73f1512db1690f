/**
 * The run's profile (sync_run_profiles) is exact: after each of 50 runs of random change sets
 * (updates, deletions, restores, new ids, rejected records that keep their rows, a replay, a dry
 * run), with hand edits between them (some under session_replication_role = replica) and one
 * restore of the data tables from a dump, the stored profile equals an aggregate over the live
 * table, written here independently of the program's SQL.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DECIMALS } from '../../bench/realistic-records.js';
import { Invalid, recordText } from '../../src/simulator/dataset.js';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, type TestDb } from '../support/harness.js';
import { runs } from '../support/programs.js';
import { xorshift } from '../support/random.js';

const SEED = 46;
const START = 1500;
/** A field outside the catalogue, always a number: the job keeps it and profiles it. */
const EXTRA = 'inventoryInTransit';

/** Per profiled field, what an aggregate over the live rows gives, as text (totals without trailing zeros). */
async function aggregate(db: TestDb): Promise<Record<string, unknown>[]> {
  const extra =
    `CASE WHEN jsonb_typeof(extra_fields -> '${EXTRA}') = 'number'` + ` THEN (extra_fields -> '${EXTRA}')::numeric END`;
  const numeric = (field: string, e: string) =>
    `SELECT '${field}' AS field, count(*)::text AS row_count, count(*) FILTER (WHERE ${e} IS NULL)::text AS null_count,
            trim_scale(sum(${e}))::text AS total, min(${e})::text AS min_value, max(${e})::text AS max_value
     FROM bulk_wine_reconciliation WHERE deleted_at IS NULL`;
  const sql = [
    `SELECT 'id' AS field, count(*)::text AS row_count, '0' AS null_count, NULL AS total, NULL AS min_value,
            NULL AS max_value FROM bulk_wine_reconciliation WHERE deleted_at IS NULL`,
    `SELECT 'wpi', count(*)::text, count(*) FILTER (WHERE wpi IS NULL)::text, NULL, NULL, NULL FROM bulk_wine_reconciliation WHERE deleted_at IS NULL`,
    ...DECIMALS.map((f) => numeric(f, f)),
    `SELECT 'first_sale', count(*)::text, count(*) FILTER (WHERE first_sale IS NULL)::text, NULL,
            to_char(min(first_sale), 'YYYY-MM-DD'), to_char(max(first_sale), 'YYYY-MM-DD')
     FROM bulk_wine_reconciliation WHERE deleted_at IS NULL`,
    numeric(EXTRA, extra),
  ].join('\nUNION ALL\n');
  return db.rows(`SELECT * FROM (${sql}) a ORDER BY field`);
}

async function stored(db: TestDb, runId: string | number): Promise<Record<string, unknown>[]> {
  return db.rows(
    `SELECT field, row_count::text, null_count::text, total::text, min_value, max_value
     FROM sync_run_profiles WHERE run_id = $1 ORDER BY field`,
    [runId],
  );
}

describe('the run profile', () => {
  const fx = useSyncFixture('profile', { simulator: {} });

  it('equals an aggregate over the live table after each of 50 runs, whatever happened between them', async () => {
    const rand = xorshift(SEED);
    const below = (n: number) => Math.floor(rand() * n);
    // The upstream's state: id -> version; ids once listed and gone, to bring back.
    const present = new Map<number, number>();
    const gone: number[] = [];
    let nextId = 1;
    for (; nextId <= START; nextId++) present.set(nextId, 0);
    const text = (id: number, version: number) => {
      const r = recordText(SEED, id, version);
      // Most records carry the extra field; its value changes with the version.
      return id % 5 === 0 ? r : `${r.slice(0, -1)},"${EXTRA}":${(id * 37 + version * 11) % 900}.${version % 7}}`;
    };
    const ctx = inProcess(fx.envWith({ SYNC_MAX_DELETE_RATIO: '1', SYNC_MAX_REJECT_RATIO: '0.5', SYNC_CHECKS: 'off' }));
    const methods = new Map<string, number>();
    let rejectedIds: number[] = [];
    const sync = async (request: Parameters<typeof ctx.run>[0] = {}) => {
      const ids = [...present.keys()].sort((a, b) => a - b);
      const records = ids.map((id) =>
        rejectedIds.includes(id)
          ? recordText(SEED, id, present.get(id)! + 1, Invalid.Sales)
          : text(id, present.get(id)!),
      );
      fx.sim.setRecordsJson(records);
      const outcome = await ctx.run(request);
      expect(outcome.run.status, outcome.run.error ?? '').toBe('succeeded');
      const line = ctx.logs.findLast((l) => l.includes('"profileMethod"'));
      const method = line ? (JSON.parse(line) as { profileMethod: string }).profileMethod : 'none';
      methods.set(method, (methods.get(method) ?? 0) + 1);
      return outcome.run;
    };
    const handEdit = async (step: number) => {
      const db = fx.db;
      const live = await db.rows<{ id: string }>(
        'SELECT id::text FROM bulk_wine_reconciliation WHERE deleted_at IS NULL ORDER BY id',
      );
      const pick = () => live[below(live.length)]!.id;
      const replica = step % 2 === 0 ? 'SET LOCAL session_replication_role = replica;' : '';
      const value = `${below(100000)}.${below(1000)}`.replace(/\.0+$|(\.\d*?)0+$/, '$1');
      const edits = (k: number) => [
        `UPDATE bulk_wine_reconciliation SET inventory_sales = ${value} WHERE id = ${pick()}`,
        `UPDATE bulk_wine_reconciliation SET inventory_bulk_wine = NULL, first_sale = '2031-01-0${1 + below(9)}'` +
          ` WHERE id = ${pick()}`,
        `UPDATE bulk_wine_reconciliation SET deleted_at = now() WHERE id = ${pick()}`,
        `UPDATE bulk_wine_reconciliation SET deleted_at = NULL WHERE id = (SELECT min(id) FROM bulk_wine_reconciliation WHERE deleted_at IS NOT NULL)`,
        `DELETE FROM bulk_wine_reconciliation WHERE id = ${pick()}`,
        `INSERT INTO bulk_wine_reconciliation (id, wpi, inventory_bulk_wine, first_seen_at, changed_at, run_id)
         VALUES (${900000 + step * 2 + k}, 'HAND-${step}', -${value}, now(), now(), 1)`,
        // The table's smallest value, made larger by hand: a carried minimum would now be wrong.
        `UPDATE bulk_wine_reconciliation SET vintage_make = vintage_make + 1000000 WHERE id = (SELECT id FROM bulk_wine_reconciliation WHERE deleted_at IS NULL ORDER BY vintage_make LIMIT 1)`,
      ];
      const one = (k: number) => edits(k)[below(edits(k).length)];
      await db.rows(`BEGIN; ${replica} ${one(0)}; ${one(1)}; COMMIT`);
    };

    let lastRun: string;
    let dumped = false;
    let restore: (() => Promise<void>) | undefined;
    for (let step = 0; step < 50; step++) {
      const roll = rand();
      rejectedIds = [];
      if (step > 0 && roll < 0.25) {
        // An unchanged re-sync.
      } else if (step > 0) {
        const ids = [...present.keys()];
        const changes = below(40);
        for (let k = 0; k < changes; k++) {
          const id = ids[below(ids.length)]!;
          present.set(id, present.get(id)! + 1);
        }
        for (let k = below(15); k > 0; k--) {
          const id = ids[below(ids.length)]!;
          if (present.delete(id)) gone.push(id);
        }
        for (let k = below(8); k > 0 && gone.length > 0; k--) present.set(gone.splice(below(gone.length), 1)[0]!, 7);
        for (let k = below(20); k > 0; k--) present.set(nextId++, 0);
        if (rand() < 0.3) rejectedIds = [...present.keys()].filter(() => rand() < 0.003);
      }
      if (step > 0 && rand() < 0.3) await handEdit(step);
      if (step === 15) restore = await dumpTables(fx.db, fx.dir);
      if (step === 20) {
        await restore!();
        dumped = true;
      }
      if (step === 30) {
        // A dry run's profile is what the same run commits.
        const dry = await sync({ dryRun: true });
        const real = await sync();
        expect(await stored(fx.db, dry.id)).toEqual(await stored(fx.db, real.id));
        lastRun = String(real.id);
      } else if (step === 40) {
        // An older listing loaded again from its archived payload.
        const [older] = await fx.db.rows<{ id: string }>('SELECT min(run_id)::text AS id FROM sync_payloads');
        const replayed = await ctx.run({ source: { kind: 'replay', runId: older!.id }, trigger: 'replay' });
        expect(replayed.run.status, replayed.run.error ?? '').toBe('succeeded');
        lastRun = String(replayed.run.id);
      } else lastRun = String((await sync()).id);
      expect(await stored(fx.db, lastRun), `run ${lastRun} (step ${step})`).toEqual(await aggregate(fx.db));
    }
    expect(dumped).toBe(true);
    // SYNC_CHECKS=off: the profile is stored, no check is made.
    expect(await fx.db.rows('SELECT run_id FROM sync_run_checks')).toEqual([]);
    // Most runs were not aggregated in full: the cheap paths were taken and checked above.
    expect(
      (methods.get('carried') ?? 0) + (methods.get('incremental') ?? 0),
      JSON.stringify([...methods]),
    ).toBeGreaterThan(15);
    expect(methods.get('full') ?? 0).toBeGreaterThan(3);
  }, 300_000);
});

/**
 * A copy of the data tables, and how to put it back as an operator restores a dump: with
 * pg_dump/pg_restore when they can dump this server, otherwise the same rows saved and written
 * back in SQL (every row a new version either way, which is what the profile must notice).
 */
async function dumpTables(db: TestDb, dir: string): Promise<() => Promise<void>> {
  const tables = ['bulk_wine_reconciliation', 'bulk_wine_reconciliation_closed_versions'];
  const empty = `BEGIN; SET LOCAL session_replication_role = replica;
       DELETE FROM bulk_wine_reconciliation; DELETE FROM bulk_wine_reconciliation_closed_versions; COMMIT`;
  const serverMajor = Number(
    (await db.rows<{ v: string }>("SELECT current_setting('server_version_num') AS v"))[0]!.v.slice(0, -4),
  );
  const client = pgClientMajor();
  if (client !== undefined && client >= serverMajor) {
    const dump = join(dir, `${db.schema}.dump`);
    const only = tables.flatMap((t) => ['-t', `"${db.schema}".${t}`]);
    const dumped = spawnSync('pg_dump', ['--data-only', '--format=custom', ...only, '-f', dump, db.url], {
      encoding: 'utf8',
    });
    expect(dumped.status, dumped.stderr).toBe(0);
    return async () => {
      await db.rows(empty);
      const restored = spawnSync('pg_restore', ['--data-only', '--disable-triggers', '-d', db.url, dump], {
        encoding: 'utf8',
      });
      expect(restored.status, restored.stderr).toBe(0);
    };
  }
  if (process.env.CI === 'true' && client === undefined)
    throw new Error('pg_dump and pg_restore are not installed (postgresql-client), and CI=true');
  console.warn(
    `\n*** pg_dump ${client ?? 'missing'} cannot dump PostgreSQL ${serverMajor}` +
      `: the dump and restore are done in SQL ***\n`,
  );
  await db.rows(tables.map((t) => `CREATE TABLE saved_${t} AS SELECT * FROM ${t}`).join(';'));
  return async () => {
    const inserts = tables.map((t) => `INSERT INTO ${t} SELECT * FROM saved_${t}`).join(';');
    await db.rows(`${empty.replace('COMMIT', '')}; ${inserts}; COMMIT`);
  };
}

/** pg_dump's major version, or undefined when it is not installed. */
function pgClientMajor(): number | undefined {
  if (!runs('pg_dump') || !runs('pg_restore')) return undefined;
  const match = /(\d+)\.\d+/.exec(spawnSync('pg_dump', ['--version'], { encoding: 'utf8' }).stdout);
  return match ? Number(match[1]) : undefined;
}
