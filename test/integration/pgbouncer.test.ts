/**
 * The job through Debian's PgBouncer with its packaged settings, in session and in transaction
 * pooling, in a schema that is not `public`: nothing may rely on state that outlives a
 * transaction on a pooled server connection (startup options, session SET, a session-level
 * advisory lock), and one run at a time must hold through the pooler without ever locking the job
 * out after a crash.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { jobEnv, runCli, startCli, waitFor } from '../support/harness.js';
import { pgbouncerAvailable, startPgBouncer, type Bouncer } from '../support/pgbouncer.js';
import { compareWithListing } from '../support/listing-compare.js';
import { describeWith } from '../support/programs.js';
import { rawListing } from '../support/raw-listing.js';
import { hasPg15, startStockPostgres, type StockPostgres } from '../support/stock-postgres.js';

const RECORDS = 300;

describeWith("Debian's pgbouncer", pgbouncerAvailable(), 'through PgBouncer', () => {
  for (const mode of ['session', 'transaction'] as const) {
    describe(`pool_mode = ${mode}`, () => {
      let bouncer: Bouncer;
      let sim: Simulator;
      let direct: pg.Client;
      const schema = `t_bouncer_${mode}_${randomBytes(3).toString('hex')}`;
      const env = () => jobEnv(bouncer.url, schema, sim);
      /** The run lock of this schema, as pg_locks shows it: held or not. */
      const lockHeld = async () => {
        const { rows: r } = await direct.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks, hashtextextended('wine-recon-sync:run:' || $1, 0) AS k
           WHERE locktype = 'advisory' AND granted AND objsubid = 1
             AND classid::bigint = (k >> 32) & 4294967295 AND objid::bigint = k & 4294967295`,
          [schema],
        );
        return r[0]!.n > 0;
      };

      /** Transactions open on this PgBouncer's server connections (other test files' runs go elsewhere). */
      const openTransactions = async () => {
        const pids = (await bouncer.show('SERVERS')).map((s) => Number(s.remote_pid));
        return (
          await direct.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1) AND xact_start IS NOT NULL`,
            [pids],
          )
        ).rows[0]!.n;
      };

      beforeAll(async () => {
        bouncer = await startPgBouncer(inject('databaseUrl'), mode);
        sim = await startSimulator({ records: RECORDS });
        direct = new pg.Client({ connectionString: inject('databaseUrl') });
        await direct.connect();
        await direct.query(`SET search_path TO "${schema}"`);
      });

      afterAll(async () => {
        await direct?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_bi" CASCADE`);
        await direct?.end();
        await sim?.close();
        await bouncer?.stop();
      });

      it('migrates, syncs and re-syncs in a schema of its own', async () => {
        const first = await runCli(['run', '--json'], env());
        expect(first.code, first.stderr).toBe(0);
        expect(JSON.parse(first.stdout)).toMatchObject({ status: 'succeeded', inserted: RECORDS });
        sim.mutate({ change: 7 });
        const second = await runCli(['run', '--json'], env());
        expect(second.code, second.stderr).toBe(0);
        expect(JSON.parse(second.stdout)).toMatchObject({ status: 'succeeded', updated: 7, inserted: 0 });
        const third = await runCli(['run', '--json'], env());
        expect(third.code, third.stderr).toBe(0);
        expect(JSON.parse(third.stdout)).toMatchObject({ status: 'succeeded', updated: 0, unchanged: RECORDS });
        expect(
          (await direct.query('SELECT count(*)::int AS n FROM bulk_wine_reconciliation WHERE deleted_at IS NULL')).rows,
        ).toEqual([{ n: RECORDS }]);
        expect(await lockHeld()).toBe(false);
      });

      it('runs one at a time: of two runs started together one exits 3, and never two are running', async () => {
        sim.setFault('slow', { delayMs: 2500, times: 1 });
        const a = startCli(['run', '--json'], env());
        await a.waitForLog(/sync started/);
        const b = await runCli(['run', '--json'], env());
        expect(b.code, b.stderr).toBe(3);
        expect(b.stderr).toContain('another sync holds the lock');
        expect((await direct.query(`SELECT count(*)::int AS n FROM sync_runs WHERE status = 'running'`)).rows).toEqual([
          { n: 1 },
        ]);
        const ra = await a.result;
        expect(ra.code, ra.stderr).toBe(0);
        expect((await direct.query(`SELECT count(*)::int AS n FROM sync_runs WHERE status = 'running'`)).rows).toEqual([
          { n: 0 },
        ]);
        expect(await lockHeld()).toBe(false);
      });

      it('a run killed with SIGKILL mid-run leaves nothing that blocks a run started right after it', async () => {
        sim.setFault('slow', { delayMs: 60_000, times: 1 });
        const killed = startCli(['run'], env());
        await killed.waitForLog(/sync started/);
        // The run's lock and its data transaction are open (the download stalls after its first chunk;
        // the first load's COPY waits for the rest).
        await waitFor(async () => (await openTransactions()) >= 2);
        expect(await lockHeld()).toBe(true);
        const runId = (await direct.query(`SELECT max(id)::text AS id FROM sync_runs`)).rows[0].id as string;
        const killedAt = Date.now();
        killed.kill('SIGKILL');
        await killed.result;
        // What the kill left behind, measured (the note reports it): how long the lock outlived the process.
        await waitFor(async () => !(await lockHeld()));
        const lockGoneMs = Date.now() - killedAt;
        await waitFor(async () => (await openTransactions()) === 0);
        console.info(
          `[pgbouncer ${mode}] after kill -9: the run lock was gone in ${lockGoneMs} ms` +
            `, its last open transaction in ${Date.now() - killedAt} ms`,
        );
        const next = await runCli(['run', '--json'], env());
        expect(next.code, next.stderr).toBe(0);
        expect(next.stderr).toContain('marked runs left running by a dead process as abandoned');
        expect((await direct.query(`SELECT status FROM sync_runs WHERE id = $1`, [runId])).rows).toEqual([
          { status: 'abandoned' },
        ]);
        expect(JSON.parse(next.stdout)).toMatchObject({ status: 'succeeded' });
      });

      if (mode === 'transaction') {
        it('twenty runs in a row all go ahead', async () => {
          const before = (await direct.query(`SELECT count(*)::int AS n FROM sync_runs WHERE status = 'succeeded'`))
            .rows[0].n as number;
          const codes: Array<number | null> = [];
          for (let i = 0; i < 20; i++) {
            sim.mutate({ change: 1 });
            const r = await runCli(['run'], env());
            codes.push(r.code);
          }
          expect(codes).toEqual(Array(20).fill(0));
          expect(
            (await direct.query(`SELECT count(*)::int AS n FROM sync_runs WHERE status = 'succeeded'`)).rows[0].n,
          ).toBe(before + 20);
          expect(await lockHeld()).toBe(false);
        });
      }
    });
  }
});

describeWith(
  "Debian's pgbouncer and PostgreSQL 15 (/usr/lib/postgresql/15/bin)",
  pgbouncerAvailable() && hasPg15(),
  'through PgBouncer, the server behind it restarted',
  () => {
    let server: StockPostgres;
    let bouncer: Bouncer;
    let sim: Simulator;
    const schema = 'bouncer_restart';

    beforeAll(async () => {
      server = await startStockPostgres();
      [bouncer, sim] = await Promise.all([
        startPgBouncer(server.url('postgres'), 'transaction'),
        startSimulator({ records: 5_000 }),
      ]);
    });

    afterAll(async () => {
      await sim?.close();
      await bouncer?.stop();
      await server?.stop();
    });

    const env = () => jobEnv(bouncer.url, schema, sim);
    const onServer = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
      const client = await server.admin();
      try {
        return await work(client);
      } finally {
        await client.end();
      }
    };

    for (const mode of ['fast', 'immediate'] as const) {
      const title =
        `pg_ctl restart -m ${mode} mid-run: ` +
        "the daemon's attempt fails, its retry loads every row, nothing is left running";
      it(
        title,
        async () => {
          sim.mutate({ change: 50, remove: 10, add: 20 });
          sim.setFault('slow', { delayMs: 8_000, times: 1 });
          const daemon = startCli(['schedule', '--run-now'], {
            ...env(),
            SYNC_SCHEDULE: '0 0 1 1 *',
            SYNC_RUN_RETRY_DELAYS: '2s,2s',
          });
          try {
            const started = JSON.parse(await daemon.waitForLog(/sync started/)) as { runId: number };
            // The run's lock and its load transaction are open on server connections of PgBouncer.
            await waitFor(async () =>
              onServer(
                async (c) =>
                  (
                    await c.query(
                      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend'
                    AND xact_start IS NOT NULL AND pid <> pg_backend_pid()`,
                    )
                  ).rows[0].n >= 2,
              ),
            );
            await server.restart(mode);
            await daemon.waitForLog(/"status":"succeeded".*"msg":"sync finished"/, 60_000);
            await daemon.waitForLog(/next sync scheduled/);
            daemon.kill('SIGTERM');
            expect((await daemon.result).code).toBe(0);

            const rows = await onServer(
              async (c) =>
                (
                  await c.query(
                    `SELECT id::int, trigger, attempt, retry_of::int, status FROM "${schema}".sync_runs WHERE id >= $1
                  ORDER BY id`,
                    [started.runId],
                  )
                ).rows,
            );
            expect(rows.filter((r) => r.status === 'running')).toEqual([]);
            const [first, retry, ...more] = rows;
            expect(more).toEqual([]);
            expect(first).toMatchObject({ id: started.runId, trigger: 'run-now', attempt: 1 });
            // Failed (it could write its row) or abandoned (the retry found it running).
            expect(['failed', 'abandoned']).toContain(first.status);
            expect(retry).toMatchObject({ trigger: 'retry', attempt: 2, retry_of: started.runId, status: 'succeeded' });
            const listing = (await rawListing(sim, 'identity')).body.toString('utf8');
            expect(await onServer((c) => compareWithListing(c, schema, listing))).toMatchObject({
              live: sim.recordCount(),
              wrong: 0,
            });
          } finally {
            daemon.kill('SIGKILL');
          }
        },
        120_000,
      );
    }
  },
);
