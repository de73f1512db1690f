/**
 * Upgrades and rollbacks (README, "Upgrading"): an older release started against a schema that a
 * newer one migrated refuses to start, naming the release it needs, before any run row is
 * written; a new release that keeps more data fills it in without inventing changes.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listMigrations } from '../../src/db/migrate.js';
import { createPool, quoteIdent, type Pool } from '../../src/db/pool.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, syncEnv } from '../support/harness.js';
import { schemaBefore, UPGRADE_DIR, upgradeCases } from '../support/upgrade.js';
import { olderRelease, type OlderRelease } from '../support/older-release.js';
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
    const migrations = await fx.db.rows<{ version: number; app_version: string }>('SELECT version, app_version FROM sync_migrations ORDER BY version');
    expect(migrations.at(-1)).toMatchObject({ version: newest });
    const release = migrations.at(-1)!.app_version;
    expect(release).toMatch(/^\d+\.\d+\.\d+/);

    const webhook = await startReceiver();
    fx.onTeardown(() => webhook.close());
    for (const command of [['run'], ['migrate'], ['schedule']]) {
      const r = await runCli(command, { ...fx.env, SYNC_HEALTH_FILE: `${fx.dir}/health`, SYNC_NOTIFY_URL: webhook.url, SYNC_NOTIFY_ON: 'all' }, 30_000, older.bin);
      expect(r.code, `${command.join(' ')}: ${r.stderr}`).toBe(2);
      const label = String(newest).padStart(4, '0');
      expect(r.stderr).toContain(`the database schema is at migration ${label}`);
      expect(r.stderr).toContain(`applied by release ${release}`);
      expect(r.stderr).toContain(`newer than this release (0.0.1-older, migrations up to ${String(newest - 1).padStart(4, '0')}): run release ${release} or later; nothing was changed`);
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
    pool.query(
      `SELECT id::text, wpi, inventory_bulk_wine::text, inventory_finished_goods::text, inventory_sales::text, vintage_forecast::text,
              vintage_make::text, first_sale::text, extra_fields::text, deleted_at IS NULL AS live
       FROM bulk_wine_reconciliation ORDER BY id`,
    ).then((r) => r.rows);
  const bookkeeping = (pool: Pool) =>
    pool.query(`SELECT id::text, changed_at::text, run_id::text, first_seen_at::text FROM bulk_wine_reconciliation ORDER BY id`).then((r) => r.rows);
  const versions = (pool: Pool) => pool.query(`SELECT id::text, valid_from::text, valid_to::text FROM bulk_wine_reconciliation_closed_versions ORDER BY id, valid_from`).then((r) => r.rows);

  it('has a case for the newest migration, and one for each migration since the first case', async () => {
    const newest = (await listMigrations()).at(-1)!.version;
    expect(cases.at(-1)).toBeGreaterThanOrEqual(newest - 1);
    expect(Object.keys(BACKFILLED).map(Number)).toEqual(cases);
  });

  for (const before of await upgradeCases()) {
    it(`from the release before migration ${before}: rows exact, nothing updated, ${BACKFILLED[before]} backfilled, no new version, one full comparison`, async () => {
      const schema = `t_upgrade_${before}_${randomBytes(3).toString('hex')}`;
      const pool = createPool({ databaseUrl: inject('databaseUrl'), schema, max: 2 });
      fx.onTeardown(async () => {
        await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE; DROP SCHEMA IF EXISTS ${quoteIdent(`${schema}_bi`)} CASCADE`);
        await pool.end();
      });
      await schemaBefore(pool, schema, before);
      const kept = await bookkeeping(pool);
      const closed = await versions(pool);
      const env = { ...syncEnv(fx.db), SYNC_DB_SCHEMA: schema };

      const upgrade = await runCli(['run', '--from-file', listing, '--json'], env);
      expect(upgrade.code, upgrade.stderr).toBe(0);
      const run = JSON.parse(upgrade.stdout);
      expect(run).toMatchObject({ status: 'succeeded', inserted: 0, updated: 0, deleted: 0, restored: 0, backfilled: BACKFILLED[before], skipped_unchanged: 0 });
      expect(upgrade.stderr).toContain('unchanged-record shortcut off: the program changed');
      if (BACKFILLED[before]! > 0) expect(upgrade.stderr).toContain(`${BACKFILLED[before]} rows filled in with what the release that wrote them could not store`);
      // No history was made: the same closed versions, and every row keeps when and by which run it last changed.
      expect(await versions(pool)).toEqual(closed);
      expect(await bookkeeping(pool)).toEqual(kept);

      // Exact against the listing: the rows a first load of it by this release writes.
      const fresh = await fx.createDb(`upgrade_fresh_${before}`);
      expect((await runCli(['run', '--from-file', listing], { ...syncEnv(fresh) })).code).toBe(0);
      const expected = (await rowsOf(fresh.pool)).filter((r) => r.live);
      expect((await rowsOf(pool)).filter((r) => r.live)).toEqual(expected);
      // The history as of now shows the filled-in values on the current versions.
      const current = await pool.query(`SELECT id::text, extra_fields::text FROM bulk_wine_reconciliation_history WHERE valid_to IS NULL ORDER BY id`);
      expect(current.rows).toEqual(expected.map((r) => ({ id: r.id, extra_fields: r.extra_fields })));

      // The next run trusts every row again.
      const next = await runCli(['run', '--from-file', listing, '--json'], env);
      expect(JSON.parse(next.stdout)).toMatchObject({ status: 'succeeded', updated: 0, backfilled: 0, skipped_unchanged: expected.length, unchanged: expected.length });
    });
  }
});
