/**
 * Several upstream accounts (docs/operations.md, "Several upstream accounts"): two accounts synced
 * into schemas of their own in one database, the documented cross-account view made from the
 * doc's own SQL, read by a BI role that sql/bi_readonly_role.sql granted both accounts, and still
 * answering after one account's daemon re-created its BI views. The doc's compose example is
 * accepted by docker-compose.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDb, ROOT, runCli, syncEnv, type TestDb } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
const section = doc.slice(doc.indexOf('\n## Several upstream accounts\n'));
const block = (lang: string) => {
  const m = new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'm').exec(section);
  if (!m) throw new Error(`docs/operations.md, "Several upstream accounts": no \`\`\`${lang} block`);
  return m[1]!;
};
const LISTING_A = join(ROOT, 'test', 'fixtures', 'upgrade', 'listing-a.json');
const LISTING_B = join(ROOT, 'test', 'fixtures', 'upgrade', 'listing-b.json');

describeWith('psql', runs('psql', ['--version']), 'several accounts read across with one view', () => {
  let north: TestDb;
  let south: TestDb;
  const tag = randomBytes(3).toString('hex');
  const all = `all_${tag}`;
  const role = `bi_${tag}`;
  const password = `pw-${randomBytes(6).toString('hex')}`;
  /** The doc's SQL with its example names replaced by this test's schemas and role. */
  const docSql = () =>
    block('sql')
      .replaceAll('wine_all_bi', all)
      .replaceAll('north_bi', `${north.schema}_bi`)
      .replaceAll('south_bi', `${south.schema}_bi`)
      .replaceAll('wine_bi', role);
  const sync = (db: TestDb, listing: string, extra: Record<string, string> = {}) =>
    runCli(
      ['run', '--from-file', listing],
      syncEnv(db, undefined, { SYNC_HEALTH_FILE: join(tmpdir(), `health-${db.schema}`), ...extra }),
    );
  const asRole = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const url = new URL(north.url);
    url.username = role;
    url.password = password;
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  const perAccount = () =>
    asRole(
      async (c) =>
        (
          await c.query(
            `SELECT account, count(*)::int AS n, sum(inventory_bulk_wine)::text AS total FROM ${all}.reconciliation
            GROUP BY account ORDER BY account`,
          )
        ).rows,
    );

  beforeAll(async () => {
    [north, south] = await Promise.all([createTestDb('acct_north'), createTestDb('acct_south')]);
    for (const db of [north, south]) {
      expect((await sync(db, LISTING_A)).code).toBe(0);
      execFileSync('psql', [
        db.url,
        '-q',
        '-v',
        `schema=${db.schema}`,
        '-v',
        `role=${role}`,
        '-v',
        `password=${password}`,
        '-f',
        join(ROOT, 'sql', 'bi_readonly_role.sql'),
      ]);
    }
    await north.pool.query(docSql());
  });

  afterAll(async () => {
    await north?.pool.query(`DROP SCHEMA IF EXISTS ${all} CASCADE`);
    await north?.pool.query(`DROP OWNED BY ${role}; DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await Promise.all([north?.close(), south?.close()]);
  });

  it("shows each account's live rows under its name, to the BI role, with the BI views' types", async () => {
    const rows = await perAccount();
    const exact = async (db: TestDb) =>
      (
        await db.rows<{ total: string }>(
          'SELECT sum(round(inventory_bulk_wine, 10))::text AS total FROM bulk_wine_reconciliation WHERE deleted_at IS NULL',
        )
      )[0]!.total;
    expect(rows).toEqual([
      { account: 'north', n: 30, total: await exact(north) },
      { account: 'south', n: 30, total: await exact(south) },
    ]);
    const types = await north.rows<{ column_name: string; numeric_precision: number; numeric_scale: number }>(
      `SELECT column_name, numeric_precision, numeric_scale FROM information_schema.columns WHERE table_schema = $1
      AND table_name = 'reconciliation' AND data_type = 'numeric' ORDER BY ordinal_position`,
      [all],
    );
    expect(types.map((t) => [t.column_name, t.numeric_precision, t.numeric_scale])).toEqual(
      ['inventory_bulk_wine', 'inventory_finished_goods', 'inventory_sales', 'vintage_forecast', 'vintage_make'].map(
        (c) => [c, 28, 10],
      ),
    );
  });

  it("lets a daemon re-create its BI views (a new SYNC_BI_SCALE), and answers with that account's new rows", async () => {
    const before = await perAccount();
    const rerun = await sync(north, LISTING_B, { SYNC_BI_SCALE: '6' });
    expect(rerun.code, rerun.stderr).toBe(0);
    const after = await perAccount();
    expect(after[1]).toEqual(before[1]);
    const northTotal = (
      await north.rows<{ total: string }>(
        'SELECT sum(round(round(inventory_bulk_wine, 6), 10))::text AS total FROM bulk_wine_reconciliation WHERE deleted_at IS NULL',
      )
    )[0]!.total;
    expect(after[0]).toEqual({
      account: 'north',
      n: Number(
        (
          await north.rows<{ n: string }>('SELECT count(*) AS n FROM bulk_wine_reconciliation WHERE deleted_at IS NULL')
        )[0]!.n,
      ),
      total: northTotal,
    });
  });

  it('(why the doc uses a function) a view selecting from the BI views directly makes that re-creation fail the run', async () => {
    const plain = `plain_${tag}`;
    await north.pool.query(
      `CREATE SCHEMA ${plain}; CREATE VIEW ${plain}.r AS SELECT id FROM "${north.schema}_bi".reconciliation`,
    );
    try {
      const rerun = await sync(north, LISTING_A, { SYNC_BI_SCALE: '8' });
      expect(rerun.code).toBe(1);
      expect(rerun.stderr).toContain(`creating the BI views in schema "${north.schema}_bi" failed`);
    } finally {
      await north.pool.query(`DROP SCHEMA ${plain} CASCADE`);
    }
  });
});

describeWith(
  'docker-compose (Debian package)',
  runs('docker-compose', ['version']),
  'the several-accounts compose example',
  () => {
    it('is accepted by docker-compose config', () => {
      const dir = mkdtempSync(join(tmpdir(), 'wrs-accounts-'));
      try {
        mkdirSync(join(dir, 'secrets'));
        for (const secret of ['db_password', 'north_api_password', 'south_api_password'])
          writeFileSync(join(dir, 'secrets', secret), 'x\n');
        writeFileSync(join(dir, 'docker-compose.yml'), block('yaml'));
        const config = execFileSync('docker-compose', ['-f', join(dir, 'docker-compose.yml'), 'config'], {
          cwd: dir,
          encoding: 'utf8',
        });
        expect(config).toContain('SYNC_DB_SCHEMA: north');
        expect(config).toContain('SYNC_DB_SCHEMA: south');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
