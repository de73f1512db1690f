/**
 * A running run writes its records and bytes so far to its sync_runs row (about once a second), so
 * that the status page of `serve`, which only reads the database, can show them.
 */
import { expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { startCli } from '../support/harness.js';

const fx = useSyncFixture('run_progress', { simulator: { records: 150_000 } });

it('is in its row while it runs, and the final counts replace it', async () => {
  const cli = startCli(['run', '--json'], fx.env);
  let seen: { received: number; bytes: number } | undefined;
  let exited = false;
  void cli.result.then(() => (exited = true));
  while (!exited && seen === undefined) {
    const [row] = await fx.db.rows<{ received: number | null; bytes: string | null }>(
      `SELECT received::int, bytes::text FROM sync_runs WHERE status = 'running'`,
    );
    if (row?.received) seen = { received: row.received, bytes: Number(row.bytes) };
    await new Promise((r) => setTimeout(r, 20));
  }
  const r = await cli.result;
  expect(r.code, r.stderr).toBe(0);
  expect(seen, 'no progress was seen in the running row').toBeDefined();
  expect(seen!.received).toBeGreaterThan(0);
  expect(seen!.received).toBeLessThanOrEqual(150_000);
  expect(seen!.bytes).toBeGreaterThan(0);
  expect(await fx.db.rows(`SELECT status, received::int FROM sync_runs`)).toEqual([
    { status: 'succeeded', received: 150_000 },
  ]);
});
