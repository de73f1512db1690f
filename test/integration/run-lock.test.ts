/**
 * The run lock (src/db/lock.ts) is a transaction of its own, held open for the run. Should its
 * connection go (a server or pooler restart, an administrator's pg_terminate_backend), another run
 * may start: the run that lost it must not commit.
 */
import { expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { startCli } from '../support/harness.js';

const fx = useSyncFixture('run_lock', { simulator: { records: 50 } });

it('a run whose lock connection was ended commits nothing and says why', async () => {
  fx.sim.setFault('slow', { delayMs: 2_000, times: 1 });
  const cli = startCli(['run', '--json'], fx.env);
  await cli.waitForLog(/sync started/);
  // The lock's server process: the one whose last statement took the lock of this schema.
  let ended = 0;
  for (let i = 0; i < 100 && ended === 0; i++) {
    const rows = await fx.db.rows<{ ended: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
       WHERE application_name = 'wine-recon-sync' AND query LIKE '%pg_try_advisory_xact_lock%'
       AND state = 'idle in transaction'
         AND pid <> pg_backend_pid()`,
    );
    ended = rows.filter((r) => r.ended).length;
    if (ended === 0) await new Promise((r) => setTimeout(r, 50));
  }
  expect(ended).toBe(1);
  const r = await cli.result;
  expect(r.code, r.stderr).toBe(1);
  const run = JSON.parse(r.stdout);
  expect(run.status).toBe('failed');
  expect(run.error).toContain("the run lock's connection to the database was lost");
  expect(run.error).toContain('nothing was committed');
  expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
});
