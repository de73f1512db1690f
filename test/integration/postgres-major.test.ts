/**
 * The PostgreSQL majors' smoke story (`npm run test:pg-smoke`, docs/postgresql.md): on whichever
 * server the tests were given, the CLI makes a first load, an unchanged re-sync, a changed one with
 * history and soft deletes, repairs rows edited by hand, and the BI views read the result.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';

const RECORDS = 400;

interface Summary {
  status: string;
  received: number;
  inserted: number;
  updated: number;
  unchanged: number;
  deleted: number;
  skipped_unchanged: number;
}

describe('one schema through its life, on the PostgreSQL the tests were given', () => {
  const fx = useSyncFixture('pg_major', { simulator: { records: RECORDS, seed: 14 } });
  const env = () => fx.envWith({ SYNC_MAX_DELETE_RATIO: '1' });

  async function sync(): Promise<Summary> {
    const r = await runCli(['run', '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Summary;
  }
  const count = async (sql: string): Promise<number> =>
    Number((await fx.db.rows<{ n: string }>(`SELECT count(*) AS n FROM ${sql}`))[0]!.n);
  const liveRows = () => fx.db.rows('SELECT id, xmin::text, changed_at FROM bulk_wine_reconciliation ORDER BY id');

  it('names the server it runs on', async () => {
    const [{ v }] = await fx.db.rows<{ v: string }>("SELECT current_setting('server_version_num') AS v");
    const major = Math.floor(Number(v) / 10000);
    console.log(`postgres-major: PostgreSQL ${major} (${v})`);
    if (process.env.TEST_PG_MAJOR) expect(String(major)).toBe(process.env.TEST_PG_MAJOR);
    expect(major).toBeGreaterThanOrEqual(14);
  });

  it('first load: every distinct record becomes a row, written once', async () => {
    const first = await sync();
    expect(first).toMatchObject({ status: 'succeeded', received: RECORDS, deleted: 0 });
    expect(await count('bulk_wine_reconciliation')).toBe(first.inserted);
    expect(await count('bulk_wine_reconciliation_closed_versions')).toBe(0);
  });

  it('unchanged re-sync: no row rewritten, every record skipped by its fingerprint', async () => {
    const before = await liveRows();
    const again = await sync();
    expect(again).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: RECORDS });
    expect(again.skipped_unchanged).toBe(RECORDS);
    expect(await liveRows()).toEqual(before);
  });

  it('changed re-sync: old versions go to the history, removed records are soft-deleted', async () => {
    const closedBefore = await count('bulk_wine_reconciliation_closed_versions');
    fx.sim.mutate({ change: 10, remove: 4, add: 5 });
    const changed = await sync();
    expect(changed).toMatchObject({ received: RECORDS + 1, inserted: 5, updated: 10, deleted: 4 });
    expect(await count('bulk_wine_reconciliation_closed_versions')).toBe(closedBefore + 10 + 4);
    expect(await count('bulk_wine_reconciliation WHERE deleted_at IS NOT NULL')).toBe(4);
    expect(await count('bulk_wine_reconciliation_current')).toBe(RECORDS + 1);
    const [closed] = await fx.db.rows<{ n: string }>(
      'SELECT count(*) AS n FROM bulk_wine_reconciliation_history WHERE valid_to IS NOT NULL AND run_id < $1',
      [await lastRunId()],
    );
    expect(Number(closed!.n)).toBe(closedBefore + 14);
  });

  it('hand edits (a plain UPDATE, a DELETE under the replica role) are compared again and repaired', async () => {
    const [edited, removed] = await fx.db.rows<{ id: string; inventory_sales: string | null }>(
      `SELECT id::text, inventory_sales::text FROM bulk_wine_reconciliation WHERE deleted_at IS NULL
       ORDER BY id LIMIT 2`,
    );
    const client = new pg.Client({ connectionString: fx.db.url });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${fx.db.schema}"`);
      await client.query('UPDATE bulk_wine_reconciliation SET inventory_sales = 123456.789 WHERE id = $1', [
        edited!.id,
      ]);
      // No trigger fires under the replica role: the row's own version must give it away.
      await client.query('BEGIN; SET LOCAL session_replication_role = replica');
      await client.query('DELETE FROM bulk_wine_reconciliation WHERE id = $1', [removed!.id]);
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    const repaired = await sync();
    expect(repaired).toMatchObject({ inserted: 1, updated: 1, deleted: 0 });
    expect(repaired.skipped_unchanged).toBe(RECORDS - 1);
    const rows = await fx.db.rows<{ id: string; inventory_sales: string | null }>(
      'SELECT id::text, inventory_sales::text FROM bulk_wine_reconciliation WHERE id = ANY($1::bigint[]) ORDER BY id',
      [[edited!.id, removed!.id]],
    );
    expect(rows).toEqual([edited, removed]);
  });

  it('BI views: the live rows, their history and the last success', async () => {
    const bi = `"${fx.db.schema}_bi"`;
    expect(await count(`${bi}.reconciliation`)).toBe(await count('bulk_wine_reconciliation_current'));
    expect(await count(`${bi}.reconciliation_history`)).toBe(await count('bulk_wine_reconciliation_history'));
    const [fresh] = await fx.db.rows<{ status: string; id: string; age: string }>(
      `SELECT last_run_status AS status, last_success_run_id::text AS id, last_success_age_seconds::text AS age
       FROM ${bi}.sync_freshness`,
    );
    expect(fresh).toMatchObject({ status: 'succeeded', id: String(await lastRunId()) });
    expect(Number(fresh!.age)).toBeGreaterThanOrEqual(0);
    const columns = await fx.db.rows<{ type: string }>(
      `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
       WHERE attrelid = '${bi}.reconciliation'::regclass AND attname = 'inventory_sales'`,
    );
    expect(columns).toEqual([{ type: expect.stringMatching(/^numeric\(28,\d+\)$/) }]);
  });

  async function lastRunId(): Promise<number> {
    return Number((await fx.db.rows<{ id: string }>('SELECT max(id) AS id FROM sync_runs'))[0]!.id);
  }
});
