/**
 * A secret rotated under a running daemon (a Vault agent rewriting a file, a refreshed RDS IAM token)
 * is used without a restart: DATABASE_PASSWORD_FILE and DATABASE_URL_FILE are read again for each
 * new connection. Against Debian's PostgreSQL 15 with scram-sha-256, so that a wrong password is
 * refused. Connections already open stay logged in with the old secret (the pool keeps idle ones
 * for up to 10 s): after the rotation the test ends the job's server connections, as a server's
 * restart or a pooler's server_lifetime would, so that the next run must log in again.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, startCli, type CliProcess } from '../support/harness.js';
import { describeWith } from '../support/programs.js';
import { startReceiver } from '../support/receiver.js';
import { hasPg15, startStockPostgres, type StockPostgres } from '../support/stock-postgres.js';

const fx = useSyncFixture('secret_rotation', { simulator: { records: 10 }, db: false });

describeWith(
  'PostgreSQL 15 (/usr/lib/postgresql/15/bin)',
  hasPg15(),
  'rotating the database secret under a running daemon',
  () => {
    let server: StockPostgres;
    let admin: pg.Client;

    beforeAll(async () => {
      server = await startStockPostgres({ hba: ['host all all 127.0.0.1/32 scram-sha-256'] });
      admin = await server.admin();
    }, 120_000);

    afterAll(async () => {
      await admin?.end();
      await server?.stop();
    });

    /** A role that owns its two schemas, with a first password. */
    async function newRole(): Promise<{ role: string; schema: string; password: string }> {
      const id = randomBytes(3).toString('hex');
      const role = `rot_${id}`;
      const schema = `rot_${id}`;
      const password = `first-${randomBytes(6).toString('hex')}`;
      await admin.query(
        `CREATE ROLE "${role}" LOGIN PASSWORD '${password}';` +
          ` CREATE SCHEMA "${schema}" AUTHORIZATION "${role}";` +
          ` CREATE SCHEMA "${schema}_bi" AUTHORIZATION "${role}"`,
      );
      return { role, schema, password };
    }

    const succeeded = async (schema: string): Promise<number> => {
      const { rows } = await admin.query(
        `SELECT count(*)::int AS n FROM "${schema}".sync_runs WHERE status = 'succeeded'`,
      );
      return rows[0].n as number;
    };

    async function until(
      what: string,
      check: () => Promise<boolean>,
      daemon: CliProcess,
      timeoutMs = 30_000,
    ): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!(await check())) {
        if (Date.now() > deadline) {
          daemon.kill('SIGKILL');
          throw new Error(
            `${what} did not happen within ${timeoutMs} ms; daemon stderr:\n${(await daemon.result).stderr}`,
          );
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }

    /**
     * Starts the daemon (a run every 2 s), waits for a run, changes the role's password and ends its
     * connections: the next runs cannot log in (the old secret is refused) until `rotate` writes the
     * new one where the job reads it; then a run succeeds, without a restart.
     */
    async function rotation(
      env: Record<string, string>,
      role: string,
      schema: string,
      rotate: (password: string) => Promise<void>,
    ): Promise<void> {
      const daemon = startCli(['schedule'], {
        WINE_API_BASE_URL: fx.sim.url,
        WINE_API_EMAIL: fx.sim.email,
        WINE_API_PASSWORD: fx.sim.password,
        WINE_API_RETRY_BASE_MS: '20',
        SYNC_DB_SCHEMA: schema,
        SYNC_SCHEDULE: '*/2 * * * * *',
        SYNC_HEALTH_FILE: join(fx.dir, `health-${schema}`),
        ...env,
      });
      try {
        await until('a first successful run', async () => (await succeeded(schema).catch(() => 0)) >= 1, daemon);
        const second = `second-${randomBytes(6).toString('hex')}`;
        await admin.query(`ALTER ROLE "${role}" PASSWORD '${second}'`);
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
        // A run that was under way when its connections ended fails otherwise: the first refused login is what counts.
        const line = await daemon.waitForLog(/password authentication failed.*"sync could not run"/);
        expect(line).toContain(`password authentication failed for user \\"${role}\\"`);
        expect(line).not.toContain(second);
        await rotate(second);
        const before = await succeeded(schema);
        await until('a successful run after the rotation', async () => (await succeeded(schema)) > before, daemon);
      } finally {
        daemon.kill('SIGTERM');
      }
      expect((await daemon.result).code).toBe(0);
    }

    it("DATABASE_PASSWORD_FILE: the new password is read for the next new connection; it overrides the URL's", async () => {
      const { role, schema, password } = await newRole();
      const passwordFile = join(fx.dir, `${role}.password`);
      await writeFile(passwordFile, `${password}\n`);
      // The URL's own password is wrong: the file's wins.
      const env = {
        DATABASE_URL: server.url(role, { password: 'not-this-one' }),
        DATABASE_PASSWORD_FILE: passwordFile,
      };
      await rotation(env, role, schema, (second) => writeFile(passwordFile, `${second}\n`));
    });

    it('no password anywhere, and the server asks for one: a sentence naming where to put it (no pgpass lookup, no driver warning)', async () => {
      const { role, schema } = await newRole();
      const result = await runCli(['migrate'], { DATABASE_URL: server.url(role), SYNC_DB_SCHEMA: schema });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        'Error: the database server at DATABASE_URL asks for a password and none is set: put it in DATABASE_URL, DATABASE_PASSWORD_FILE or PGPASSWORD\n',
      );
    });

    it('DATABASE_URL_FILE: the rewritten URL is read for the next new connection', async () => {
      const { role, schema, password } = await newRole();
      const urlFile = join(fx.dir, `${role}.url`);
      await writeFile(urlFile, server.url(role, { password }));
      await rotation({ DATABASE_URL_FILE: urlFile }, role, schema, (second) =>
        writeFile(urlFile, server.url(role, { password: second })),
      );
    });

    it('a secret file gone wrong under the daemon fails its scheduled runs, and the webhook says so', async () => {
      const { role, schema, password } = await newRole();
      const passwordFile = join(fx.dir, `${role}.password`);
      await writeFile(passwordFile, `${password}\n`);
      const webhook = await startReceiver();
      fx.onTeardown(() => webhook.close());
      const daemon = startCli(['schedule'], {
        DATABASE_URL: server.url(role),
        DATABASE_PASSWORD_FILE: passwordFile,
        WINE_API_BASE_URL: fx.sim.url,
        WINE_API_EMAIL: fx.sim.email,
        WINE_API_PASSWORD: fx.sim.password,
        SYNC_DB_SCHEMA: schema,
        SYNC_SCHEDULE: '*/2 * * * * *',
        SYNC_HEALTH_FILE: join(fx.dir, `health-${schema}`),
        SYNC_NOTIFY_URL: webhook.url,
      });
      try {
        await until('a first successful run', async () => (await succeeded(schema).catch(() => 0)) >= 1, daemon);
        // The sidecar that writes the file failed: it is gone, and the job must log in again.
        await rm(passwordFile);
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
        await until(
          'a failure notification',
          async () => webhook.posts.some((p) => JSON.stringify(p.body).includes('DATABASE_PASSWORD_FILE')),
          daemon,
        );
      } finally {
        daemon.kill('SIGTERM');
      }
      const post = webhook.posts.find((p) => JSON.stringify(p.body).includes('DATABASE_PASSWORD_FILE'))!;
      expect(JSON.stringify(post.body)).toContain('the sync could not run');
      expect(JSON.stringify(post.body)).not.toContain(password);
      expect((await daemon.result).code).toBe(0);
    });
  },
);
