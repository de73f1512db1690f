/**
 * A database failover, as a site with a PostgreSQL 15 primary and a streaming standby has one:
 * DATABASE_URL names both hosts (libpq's `h1:5432,h2:5433` with target_session_attrs=read-write),
 * each new connection finds the one that takes writes, and a run caught by the failover fails
 * (or is marked abandoned by the next one) while the next one loads on the new primary with every
 * row as the listing has it.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { jobEnv, runCli, startCli, waitFor } from '../support/harness.js';
import { describeWith } from '../support/programs.js';
import { compareWithListing } from '../support/listing-compare.js';
import { rawListing } from '../support/raw-listing.js';
import {
  hasReplicationTools,
  startReplicatedPostgres,
  type Node,
  type ReplicatedPostgres,
} from '../support/replicated-postgres.js';

const RECORDS = 20_000;
const SCHEMA = 'failover';
/** A password the servers (trust) never ask for: it must not appear in any message. */
const PASSWORD = 'failover-secret-pw';

describeWith(
  'PostgreSQL 15 (/usr/lib/postgresql/15/bin)',
  hasReplicationTools(),
  'a primary and a standby behind one DATABASE_URL',
  () => {
    let pair: ReplicatedPostgres;
    let sim: Simulator;

    beforeAll(async () => {
      [pair, sim] = await Promise.all([startReplicatedPostgres(), startSimulator({ records: RECORDS })]);
    }, 180_000);

    afterAll(async () => {
      await sim?.close();
      await pair?.stop();
    });

    const url = (order: Node[], attrs?: string) => {
      const plain = pair.url(order, attrs ? { target_session_attrs: attrs } : {});
      return plain.replace('postgres://postgres@', `postgres://postgres:${PASSWORD}@`);
    };
    const env = (databaseUrl: string, schema = SCHEMA) => jobEnv(databaseUrl, schema, sim);
    const on = async <T>(node: Node, work: (client: pg.Client) => Promise<T>): Promise<T> => {
      const client = await node.admin();
      try {
        return await work(client);
      } finally {
        await client.end();
      }
    };
    const schemaExists = (node: Node, schema: string) =>
      on(
        node,
        async (c) =>
          (await c.query('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1', [schema])).rows[0].n === 1,
      );

    describe('choosing the host', () => {
      it('target_session_attrs=read-write passes over the standby named first and migrates on the primary', async () => {
        const r = await runCli(['migrate'], env(url([pair.standby, pair.primary], 'read-write'), 'choose_rw'));
        expect(r.code, r.stderr).toBe(0);
        await pair.caughtUp();
        expect(await schemaExists(pair.primary, 'choose_rw')).toBe(true);
      });

      it('primary: the same choice, by pg_is_in_recovery()', async () => {
        const r = await runCli(['migrate'], env(url([pair.standby, pair.primary], 'primary'), 'choose_primary'));
        expect(r.code, r.stderr).toBe(0);
        expect(await schemaExists(pair.primary, 'choose_primary')).toBe(true);
      });

      it('any (the default) takes the first host that answers: the standby, where a migration cannot write', async () => {
        const r = await runCli(['migrate'], env(url([pair.standby, pair.primary]), 'choose_any'));
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain('read-only transaction');
        expect(await schemaExists(pair.primary, 'choose_any')).toBe(false);
      });

      it('prefer-standby takes the standby even when the primary is named first', async () => {
        const r = await runCli(
          ['migrate'],
          env(url([pair.primary, pair.standby], 'prefer-standby'), 'choose_prefer_standby'),
        );
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain('read-only transaction');
      });

      it('when no host will do, the error names every host tried and why, and never the password', async () => {
        const { freePort } = await import('../support/global-setup.js');
        const nobody = await freePort();
        const databaseUrl = url([pair.standby], 'read-write').replace(
          `127.0.0.1:${pair.standby.port}`,
          `127.0.0.1:${nobody},127.0.0.1:${pair.standby.port}`,
        );
        const r = await runCli(['migrate'], env(databaseUrl, 'choose_none'));
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(
          `cannot connect to the database at DATABASE_URL` +
            `: no host suits target_session_attrs=read-write` +
            ` (127.0.0.1:${nobody} refused the connection (nothing listens there)` +
            `; 127.0.0.1:${pair.standby.port} is a standby (in recovery, read-only))`,
        );
        expect(r.stderr).not.toContain(PASSWORD);
      });
    });

    describe('a failover in the middle of a run', () => {
      it("the daemon's run caught by it fails, its retry loads on the promoted standby, and every row is as the listing has it", async () => {
        const t0 = Date.now();
        const since = (ms: number) => `+${((ms - t0) / 1000).toFixed(2)} s`;
        const timeline: Array<[number, string]> = [];
        const note = (what: string, ms = Date.now()) => timeline.push([ms, what]);
        const databaseUrl = url([pair.primary, pair.standby], 'read-write');

        // A first load, replayed on the standby, then changes upstream for the run the failover catches.
        const seed = await runCli(['run', '--json'], env(databaseUrl));
        expect(seed.code, seed.stderr).toBe(0);
        await pair.caughtUp();
        sim.mutate({ change: 500, remove: 100, add: 300 });
        note(
          'first load done and replayed on the standby; the upstream then changed 500, removed 100, added 300 records',
        );

        // The download stalls after its first chunk: the run holds its lock and its load transaction open.
        sim.setFault('slow', { delayMs: 8_000, times: 1 });
        const daemon = startCli(['schedule', '--run-now'], {
          ...env(databaseUrl),
          // Only --run-now and the retries run: the schedule's next slot is months away.
          SYNC_SCHEDULE: '0 0 1 1 *',
          SYNC_RUN_RETRY_DELAYS: '2s,2s',
        });
        try {
          await daemon.waitForLog(/sync started/);
          await waitFor(async () =>
            on(
              pair.primary,
              async (c) =>
                (
                  await c.query(
                    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'wine-recon-sync'
                    AND xact_start IS NOT NULL`,
                  )
                ).rows[0].n >= 2,
            ),
          );
          const runId = await on(
            pair.primary,
            async (c) => (await c.query(`SELECT max(id)::int AS id FROM "${SCHEMA}".sync_runs`)).rows[0].id as number,
          );
          // Its `running` row is committed: replayed before the stop, as a standby that kept up has it.
          await pair.caughtUp();
          note(`run ${runId} (attempt 1) loading: its lock and load transaction open on the primary`);

          note('pg_ctl stop -m immediate of the primary issued');
          await pair.primary.stopImmediately();
          note('primary stopped (pg_ctl returned)');
          await pair.standby.promote();
          note('standby promoted (pg_ctl promote -w returned)');

          await daemon.waitForLog(/"status":"succeeded".*"msg":"sync finished"/, 60_000);
          await daemon.waitForLog(/next sync scheduled/);
          daemon.kill('SIGTERM');
          const stopped = await daemon.result;
          expect(stopped.code, stopped.stderr).toBe(0);
          expect(stopped.stderr).not.toContain(PASSWORD);

          // The daemon's own log says when each attempt started and ended.
          const lines = stopped.stderr
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as Record<string, unknown>);
          for (const l of lines) {
            if (l.msg === 'sync started')
              note(`run ${l.runId} started (${l.trigger ?? 'trigger not logged'})`, l.time as number);
            if (l.msg === 'sync failed')
              note(
                `run ${l.runId} failed: ${String((l.err as { message?: string })?.message ?? '').slice(0, 400)}`,
                l.time as number,
              );
            if (l.msg === 'sync finished') note(`run ${l.runId} finished, ${l.status}`, l.time as number);
            if (/it will be tried again/.test(String(l.msg))) note(`retry planned at ${l.retryAt}`, l.time as number);
            if (/abandoned/.test(String(l.msg))) note(`${l.msg}: ${JSON.stringify(l.runs)}`, l.time as number);
            else if ((l.level as number) >= 40 && l.msg !== 'sync failed' && !/tried again/.test(String(l.msg)))
              note(`${l.msg}`, l.time as number);
          }

          const rows = await on(
            pair.standby,
            async (c) =>
              (
                await c.query(
                  `SELECT id::int, trigger, attempt, retry_of::int, status, inserted::int, updated::int, deleted::int
                  FROM "${SCHEMA}".sync_runs ORDER BY id`,
                )
              ).rows,
          );
          const runs = rows.map((r) => [r.id, r.trigger, r.attempt, r.retry_of, r.status]);
          note(`sync_runs on the new primary: ${JSON.stringify(runs)}`);
          expect(rows.filter((r) => r.status === 'running')).toEqual([]);
          const [first, retry, ...more] = rows.slice(1);
          expect(more).toEqual([]);
          expect(first).toMatchObject({ id: runId, trigger: 'run-now', attempt: 1, retry_of: null });
          // Failed, when the daemon could write its row after the promotion; else abandoned by the retry.
          expect(['failed', 'abandoned']).toContain(first.status);
          expect(retry).toMatchObject({
            trigger: 'retry',
            attempt: 2,
            retry_of: runId,
            status: 'succeeded',
            inserted: 300,
            updated: 500,
            deleted: 100,
          });

          const listing = (await rawListing(sim, 'identity')).body.toString('utf8');
          const compare = await on(pair.standby, (c) => compareWithListing(c, SCHEMA, listing));
          note(`rows against the listing: ${compare.listed} listed, ${compare.live} live, ${compare.wrong} wrong`);
          expect(compare).toEqual({ listed: RECORDS + 200, live: RECORDS + 200, wrong: 0 });
        } finally {
          daemon.kill('SIGKILL');
          console.info(
            `[failover] timeline:\n  ${timeline
              .sort((a, b) => a[0] - b[0])
              .map(([ms, what]) => `${since(ms)} ${what}`)
              .join('\n  ')}`,
          );
        }
      }, 180_000);
    });
  },
);
