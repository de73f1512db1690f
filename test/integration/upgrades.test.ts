/**
 * Upgrades and rollbacks (README, "Upgrading"): an older release started against a schema that a
 * newer one migrated refuses to start, naming the release it needs, before any run row is
 * written; a new release that keeps more data fills it in without inventing changes.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listMigrations } from '../../src/db/migrate.js';
import { createPool, quoteIdent, type Pool } from '../../src/db/pool.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli, syncEnv } from '../support/harness.js';
import { schemaBefore, UPGRADE_DIR, upgradeCases } from '../support/upgrade.js';
import { olderRelease, releaseCopy, type OlderRelease } from '../support/older-release.js';
import { startReceiver } from '../support/receiver.js';

const fx = useSyncFixture('upgrades', { simulator: { records: 20 } });

describe('a rollback to a release that does not know the newest migration', () => {
  let older: OlderRelease;
  let newest: number;
  beforeAll(async () => {
    newest = (await listMigrations()).at(-1)!.version;
    older = await olderRelease(newest - 1, '0.0.1-older');
  });
  afterAll(() => older?.close());

  it('refuses to start, naming the migration and the release that applied it; records no run and changes nothing', async () => {
    expect((await runCli(['run'], fx.env)).code).toBe(0);
    const runsBefore = await fx.db.rows('SELECT id, status FROM sync_runs ORDER BY id');
    const migrations = await fx.db.rows<{ version: number; app_version: string }>(
      'SELECT version, app_version FROM sync_migrations ORDER BY version',
    );
    expect(migrations.at(-1)).toMatchObject({ version: newest });
    const release = migrations.at(-1)!.app_version;
    expect(release).toMatch(/^\d+\.\d+\.\d+/);

    const webhook = await startReceiver();
    fx.onTeardown(() => webhook.close());
    for (const command of [['run'], ['migrate'], ['schedule']]) {
      const r = await runCli(
        command,
        { ...fx.env, SYNC_HEALTH_FILE: `${fx.dir}/health`, SYNC_NOTIFY_URL: webhook.url, SYNC_NOTIFY_ON: 'all' },
        30_000,
        older.bin,
      );
      expect(r.code, `${command.join(' ')}: ${r.stderr}`).toBe(2);
      const label = String(newest).padStart(4, '0');
      expect(r.stderr).toContain(`the database schema is at migration ${label}`);
      expect(r.stderr).toContain(`applied by release ${release}`);
      expect(r.stderr).toContain(
        `newer than this release (0.0.1-older, migrations up to ${String(newest - 1).padStart(4, '0')})` +
          `: run release ${release} or later; nothing was changed`,
      );
    }
    expect(await fx.db.rows('SELECT id, status FROM sync_runs ORDER BY id')).toEqual(runsBefore);
    expect(webhook.posts).toEqual([]);
    // The refused daemon left its reason for healthcheck.
    const health = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: `${fx.dir}/health` }, 30_000, older.bin);
    expect(health.code).toBe(1);
    expect(health.stderr).toContain('the daemon refused to start: the database schema is at migration');
    // The current release still runs.
    expect((await runCli(['run'], fx.env)).code).toBe(0);
  });
});

/** What each upgrade case must backfill: the live rows whose record carries fields the release could not store. */
const BACKFILLED: Record<number, number> = { 9: 13, 10: 0 };

describe('an upgrade from an earlier release', async () => {
  const cases = await upgradeCases();
  const listing = join(UPGRADE_DIR, 'listing-b.json');
  const rowsOf = (pool: Pool) =>
    pool
      .query(
        `SELECT id::text, wpi, inventory_bulk_wine::text, inventory_finished_goods::text, inventory_sales::text,
          vintage_forecast::text,
              vintage_make::text, first_sale::text, extra_fields::text, deleted_at IS NULL AS live
       FROM bulk_wine_reconciliation ORDER BY id`,
      )
      .then((r) => r.rows);
  const bookkeeping = (pool: Pool) =>
    pool
      .query(
        `SELECT id::text, changed_at::text, run_id::text, first_seen_at::text FROM bulk_wine_reconciliation
        ORDER BY id`,
      )
      .then((r) => r.rows);
  const versions = (pool: Pool) =>
    pool
      .query(
        `SELECT id::text, valid_from::text, valid_to::text FROM bulk_wine_reconciliation_closed_versions
        ORDER BY id, valid_from`,
      )
      .then((r) => r.rows);

  // Each release adds the case of the release before it (test/fixtures/upgrade/make-fixture.sh):
  // its rows, made by that release's own code, and what this release must backfill from them.
  it('has the cases of the releases before migrations 0009 and 0010, each with its expectation', () => {
    expect(cases).toEqual(expect.arrayContaining([9, 10]));
    expect(Object.keys(BACKFILLED).map(Number)).toEqual(cases);
  });

  for (const before of await upgradeCases()) {
    const title =
      `from the release before migration ${before}: rows exact, nothing updated, ` +
      `${BACKFILLED[before]} backfilled, no new version, one full comparison`;
    it(title, async () => {
      const schema = `t_upgrade_${before}_${randomBytes(3).toString('hex')}`;
      const pool = createPool({ databaseUrl: inject('databaseUrl'), schema, max: 2 });
      fx.onTeardown(async () => {
        await pool.query(
          `DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE; ` +
            `DROP SCHEMA IF EXISTS ${quoteIdent(`${schema}_bi`)} CASCADE`,
        );
        await pool.end();
      });
      await schemaBefore(pool, schema, before);
      const kept = await bookkeeping(pool);
      const closed = await versions(pool);
      const env = { ...syncEnv(fx.db), SYNC_DB_SCHEMA: schema };

      const upgrade = await runCli(['run', '--from-file', listing, '--json'], env);
      expect(upgrade.code, upgrade.stderr).toBe(0);
      const run = JSON.parse(upgrade.stdout);
      expect(run).toMatchObject({
        status: 'succeeded',
        inserted: 0,
        updated: 0,
        deleted: 0,
        restored: 0,
        backfilled: BACKFILLED[before],
        skipped_unchanged: 0,
      });
      expect(upgrade.stderr).toContain('unchanged-record shortcut off: the program changed');
      if (BACKFILLED[before]! > 0)
        expect(upgrade.stderr).toContain(
          `${BACKFILLED[before]} rows filled in with what the release that wrote them could not store`,
        );
      // No history was made: the same closed versions, and every row keeps when and by which run it last changed.
      expect(await versions(pool)).toEqual(closed);
      expect(await bookkeeping(pool)).toEqual(kept);

      // Exact against the listing: the rows a first load of it by this release writes.
      const fresh = await fx.createDb(`upgrade_fresh_${before}`);
      expect((await runCli(['run', '--from-file', listing], { ...syncEnv(fresh) })).code).toBe(0);
      const expected = (await rowsOf(fresh.pool)).filter((r) => r.live);
      expect((await rowsOf(pool)).filter((r) => r.live)).toEqual(expected);
      // The history as of now shows the filled-in values on the current versions.
      const current = await pool.query(
        `SELECT id::text, extra_fields::text FROM bulk_wine_reconciliation_history WHERE valid_to IS NULL ORDER BY id`,
      );
      expect(current.rows).toEqual(expected.map((r) => ({ id: r.id, extra_fields: r.extra_fields })));

      // The next run trusts every row again.
      const next = await runCli(['run', '--from-file', listing, '--json'], env);
      expect(JSON.parse(next.stdout)).toMatchObject({
        status: 'succeeded',
        updated: 0,
        backfilled: 0,
        skipped_unchanged: expected.length,
        unchanged: expected.length,
      });
    });
  }
});

describe('a kept field that a release adds to its catalogue', () => {
  const FIELD = 'inventory_in_transit';
  const MEANING = 'Quantity in transit between cellars; exact decimal as sent; unit not specified upstream.';
  /** The values as sent, and as the new column must hold them (the catalogue's decimal rule). */
  const SENT: Array<[string | undefined, string | null]> = [
    ['12.50', '12.5'],
    ['"3.0"', '3'],
    ['1e2', '100'],
    ['""', null],
    ['null', null],
    [undefined, null],
    ['" 7.25 "', '7.25'],
    ['-0.0', '0'],
  ];
  const rec = (i: number, wpi = `W${i}`) => {
    const sent = SENT[i - 1]![0];
    const field = sent === undefined ? '' : `,"${FIELD}":${sent}`;
    return `{"id":${i},"wpi":"${wpi}","inventory_sales":"${i}.5"${field}${i % 2 ? ',"cellar_note":"north"' : ''}}`;
  };
  const listing = (changed = false) => SENT.map((_, k) => rec(k + 1, changed && k === 0 ? 'W1b' : `W${k + 1}`));

  /** The recipe of docs/internals.md ("Adding a field"), for this field. */
  async function recipe(): Promise<string> {
    const doc = await readFile(join(ROOT, 'docs', 'internals.md'), 'utf8');
    const block = /```sql\n(-- FIELD joins the field catalogue[\s\S]*?)```/.exec(doc)?.[1];
    if (!block) throw new Error('docs/internals.md has no recipe block starting "-- FIELD joins the field catalogue"');
    return block.replaceAll('MEANING', MEANING.replaceAll("'", "''")).replaceAll('FIELD', FIELD);
  }

  it('moves its values from extra_fields to its column with the documented recipe: no guard trip, nothing updated, no new version', async () => {
    const db = await fx.createDb('promotion');
    const env = { ...fx.env, SYNC_DB_SCHEMA: db.schema };
    fx.sim.setRecordsJson(listing());
    expect((await runCli(['run'], env)).code).toBe(0);
    fx.sim.setRecordsJson(listing(true));
    expect((await runCli(['run'], env)).code).toBe(0);
    const closedBefore = await db.rows(
      `SELECT id::text, valid_from::text FROM bulk_wine_reconciliation_closed_versions ORDER BY id, valid_from`,
    );
    expect(closedBefore).toHaveLength(1);

    const newest = (await listMigrations()).at(-1)!.version;
    const migration = `${String(newest + 1).padStart(4, '0')}_promote_${FIELD}.sql`;
    const sql = await recipe();
    const newer = await releaseCopy({
      version: '99.0.0-promotes',
      patch: async (dir) => {
        const fields = join(dir, 'dist', 'src', 'fields.js');
        const text = await readFile(fields, 'utf8');
        const entry =
          `    { name: '${FIELD}', kind: 'decimal', required: false, ` + `meaning: ${JSON.stringify(MEANING)} },\n];`;
        const patched = text.replace(/\n\];\n/, `\n${entry}\n`);
        expect(patched).not.toBe(text);
        await writeFile(fields, patched);
        await writeFile(join(dir, 'sql', 'migrations', migration), sql);
      },
    });
    fx.onTeardown(() => newer.close());

    const first = await runCli(['run', '--json'], env, 60_000, newer.bin);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toContain('missing from all');
    expect(JSON.parse(first.stdout)).toMatchObject({
      status: 'succeeded',
      inserted: 0,
      updated: 0,
      deleted: 0,
      backfilled: 0,
      unchanged: SENT.length,
    });
    const rows = await db.rows<{ id: string; v: string | null; extra: string | null }>(
      `SELECT id::text, ${FIELD}::text AS v, extra_fields::text AS extra FROM bulk_wine_reconciliation ORDER BY id`,
    );
    expect(rows).toEqual(
      SENT.map(([, kept], k) => ({
        id: String(k + 1),
        v: kept,
        extra: (k + 1) % 2 ? '{"cellar_note": "north"}' : null,
      })),
    );
    // The closed version moved too, and no version was added.
    expect(
      await db.rows(
        `SELECT id::text, ${FIELD}::text AS v, extra_fields::text AS extra
        FROM bulk_wine_reconciliation_closed_versions`,
      ),
    ).toEqual([{ id: '1', v: '12.5', extra: '{"cellar_note": "north"}' }]);
    expect(
      await db.rows(
        `SELECT id::text, valid_from::text FROM bulk_wine_reconciliation_closed_versions ORDER BY id, valid_from`,
      ),
    ).toEqual(closedBefore);
    // The next run of that release trusts every row.
    const next = await runCli(['run', '--json'], env, 60_000, newer.bin);
    expect(JSON.parse(next.stdout)).toMatchObject({ status: 'succeeded', updated: 0, skipped_unchanged: SENT.length });
  });
});
