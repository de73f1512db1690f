/**
 * The job as a least-privilege role: one that owns its two schemas (made for it by
 * sql/sync_role.sql), one allowed to create them (create_on_database=on), and ones that lack a
 * privilege, which are told in one sentence what the job tried, as which role, and the SQL that fixes it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

const fx = useSyncFixture('least_privilege', { simulator: { records: 20 }, db: false });

describeWith('psql (apt-get install postgresql-client)', runs('psql'), 'a least-privilege role', () => {
  const adminUrl = inject('databaseUrl');
  const database = decodeURIComponent(new URL(adminUrl).pathname.slice(1));
  const admin = decodeURIComponent(new URL(adminUrl).username);
  let pool: Pool;
  let role: string;
  let schema: string;
  const password = `pw-${randomBytes(6).toString('hex')}`;

  beforeAll(() => {
    pool = createPool({ databaseUrl: adminUrl, schema: 'public', max: 2 });
    fx.onTeardown(() => pool.end());
  });

  const fresh = () => {
    const id = randomBytes(3).toString('hex');
    role = `lp_role_${id}`;
    schema = `lp_${id}`;
  };

  afterEach(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_bi" CASCADE`);
    await pool.query(`DROP OWNED BY "${role}" CASCADE; DROP ROLE "${role}"`).catch(() => undefined);
  });

  const syncRole = (vars: string[]) =>
    execFileSync('psql', [
      adminUrl,
      '-q',
      '-v',
      `role=${role}`,
      '-v',
      `password=${password}`,
      '-v',
      `schema=${schema}`,
      ...vars.flatMap((v) => ['-v', v]),
      '-f',
      join(ROOT, 'sql', 'sync_role.sql'),
    ]);

  const env = () => {
    const url = new URL(adminUrl);
    url.username = role;
    url.password = password;
    return {
      DATABASE_URL: url.toString(),
      SYNC_DB_SCHEMA: schema,
      WINE_API_BASE_URL: fx.sim.url,
      WINE_API_EMAIL: fx.sim.email,
      WINE_API_PASSWORD: fx.sim.password,
      WINE_API_RETRY_BASE_MS: '20',
    };
  };

  async function runsAsRole(): Promise<Record<string, unknown>> {
    const first = await runCli(['run', '--json'], env());
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ status: 'succeeded', inserted: 20 });
    const again = await runCli(['run', '--json'], env());
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'succeeded', inserted: 0, unchanged: 20 });
    const owners = await pool.query(
      `SELECT DISTINCT pg_get_userbyid(c.relowner) AS owner FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ($1, $2) AND c.relkind IN ('r', 'v')`,
      [schema, `${schema}_bi`],
    );
    expect(owners.rows).toEqual([{ owner: role }]);
    const rights = await pool.query(
      `SELECT rolsuper, rolcreatedb, rolcreaterole,
        has_database_privilege($1, current_database(), 'CREATE') AS create_schemas FROM pg_roles WHERE rolname = $1`,
      [role],
    );
    return rights.rows[0];
  }

  it('owning both schemas, made for it by sql/sync_role.sql: runs and re-runs, and may create no other schema', async () => {
    fresh();
    syncRole([]);
    const rights = await runsAsRole();
    expect(rights).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, create_schemas: false });
  });

  it('with CREATE on the database (create_on_database=on): creates its two schemas at the first start, then runs', async () => {
    fresh();
    syncRole(['create_on_database=on']);
    expect(
      (
        await pool.query('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname IN ($1, $2)', [
          schema,
          `${schema}_bi`,
        ])
      ).rows,
    ).toEqual([{ n: 0 }]);
    const rights = await runsAsRole();
    expect(rights).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, create_schemas: true });
    const owners = await pool.query(
      'SELECT nspname, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname IN ($1, $2) ORDER BY 1',
      [schema, `${schema}_bi`],
    );
    expect(owners.rows).toEqual([
      { nspname: schema, owner: role },
      { nspname: `${schema}_bi`, owner: role },
    ]);
  });

  /** `migrate` as the role exits 2 with exactly this sentence, never the password, and leaves nothing behind. */
  async function refused(sentence: string): Promise<void> {
    const result = await runCli(['migrate'], env());
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toBe(`Error: ${sentence}\n`);
    expect(result.stderr).not.toContain(password);
    const tables = await pool.query(
      `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ($1, $2)`,
      [schema, `${schema}_bi`],
    );
    expect(tables.rows).toEqual([{ n: 0 }]);
  }

  it('with neither: told that it may not create the schema, and the CREATE SCHEMA … AUTHORIZATION or GRANT that fixes it', async () => {
    fresh();
    await pool.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}'`);
    await refused(
      `cannot create schema "${schema}" (SYNC_DB_SCHEMA) as role "${role}"` +
        `, which may not create schemas in database "${database}"` +
        `: as a superuser or the database owner, run CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"` +
        `; or GRANT CREATE ON DATABASE "${database}" TO "${role}";` +
        ` (see sql/sync_role.sql)`,
    );
  });

  it('owning the data schema but not allowed to create the BI schema: the sentence is about the BI schema', async () => {
    fresh();
    await pool.query(
      `CREATE ROLE "${role}" LOGIN PASSWORD '${password}'; CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"`,
    );
    await refused(
      `cannot create schema "${schema}_bi" (SYNC_BI_SCHEMA) as role "${role}"` +
        `, which may not create schemas in database "${database}"` +
        `: as a superuser or the database owner, run CREATE SCHEMA "${schema}_bi" AUTHORIZATION "${role}"` +
        `; or GRANT CREATE ON DATABASE "${database}" TO "${role}";` +
        ` (see sql/sync_role.sql)`,
    );
  });

  it("a data schema that belongs to another role: told to give it to the job's role", async () => {
    fresh();
    await pool.query(
      `CREATE ROLE "${role}" LOGIN PASSWORD '${password}';` +
        ` CREATE SCHEMA "${schema}"; GRANT USAGE ON SCHEMA "${schema}" TO "${role}"`,
    );
    await refused(
      `cannot create tables and views in schema "${schema}" (SYNC_DB_SCHEMA) as role "${role}"` +
        `: the schema belongs to "${admin}"` +
        `; as a superuser or its owner, run ALTER SCHEMA "${schema}" OWNER TO "${role}";` +
        ` (see sql/sync_role.sql)`,
    );
  });
});
