/**
 * Upgrades and rollbacks (README, "Upgrading"): an older release started against a schema that a
 * newer one migrated refuses to start, naming the release it needs, before any run row is
 * written; a new release that keeps more data fills it in without inventing changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMigrations } from '../../src/db/migrate.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';
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
