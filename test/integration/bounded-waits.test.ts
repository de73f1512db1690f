import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';

const fx = useSyncFixture('waits', { simulator: { records: 40 }, each: true });

const snapshot = () =>
  fx.db.rows('SELECT id::text, wpi, xmin::text, deleted_at FROM bulk_wine_reconciliation ORDER BY id');

describe('SYNC_LOCK_TIMEOUT_MS', () => {
  it('fails a run blocked by another session, naming the table and the blocker, with the tables unchanged', async () => {
    expect((await runCli(['run'], fx.env)).code).toBe(0);
    fx.sim.mutate({ change: 5 });
    const before = await snapshot();
    const holder = new pg.Client({ connectionString: fx.db.url, application_name: 'bi-reindex-test' });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE "${fx.db.schema}".bulk_wine_reconciliation IN ACCESS EXCLUSIVE MODE`);
      const started = Date.now();
      const r = await runCli(['run', '--json'], { ...fx.env, SYNC_LOCK_TIMEOUT_MS: '2000' });
      expect(r.code, r.stderr).toBe(1);
      // Generous: the point is that it ends on its own, about when the limit says.
      expect(Date.now() - started).toBeLessThan(40_000);
      const run = JSON.parse(r.stdout);
      expect(run.status).toBe('failed');
      expect(run.error).toContain('SYNC_LOCK_TIMEOUT_MS=2000');
      expect(run.error).toContain(`on table ${fx.db.schema}.bulk_wine_reconciliation`);
      expect(run.error).toContain(`pid ${holder.processID}`);
      expect(run.error).toContain('application_name "bi-reindex-test"');
      expect(run.error).toContain('state "idle in transaction"');
      expect(run.error).toMatch(/user "[^"]+"/);
      expect(run.error).toContain('waiting on Client/ClientRead');
      // Another role's SQL text is not ours to store where BI users read it.
      expect(run.error).not.toContain('LOCK TABLE');
      expect(r.stderr).not.toContain('LOCK TABLE');
      expect(r.stderr).toContain('bi-reindex-test');
    } finally {
      await holder.end();
    }
    expect(await snapshot()).toEqual(before);
    // Without the lock the same run goes through.
    const next = await runCli(['run', '--json'], { ...fx.env, SYNC_LOCK_TIMEOUT_MS: '2000' });
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ status: 'succeeded', updated: 5 });
  });

  it('marks our own connections with application_name wine-recon-sync', async () => {
    const { pool } = fx.db;
    const names = await pool.query<{ application_name: string }>(
      'SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()',
    );
    expect(names.rows[0]!.application_name).toBe('wine-recon-sync');
  });
});

describe('SYNC_RUN_TIMEOUT_MS', () => {
  it('stops a run that takes too long like SIGTERM, but marks it failed naming the setting', async () => {
    fx.sim.setFault('slow', { delayMs: 60_000 });
    const r = await runCli(['run', '--json'], { ...fx.env, SYNC_RUN_TIMEOUT_MS: '1500' });
    expect(r.code, r.stderr).toBe(1);
    const run = JSON.parse(r.stdout);
    expect(run).toMatchObject({ status: 'failed' });
    expect(run.error).toContain('SYNC_RUN_TIMEOUT_MS=1500');
    expect(await fx.db.rows('SELECT status, error FROM sync_runs')).toEqual([{ status: 'failed', error: run.error }]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
    expect(fx.sim.stats.listings).toBe(1);
  });
});
