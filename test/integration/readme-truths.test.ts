/**
 * What the docs claim, checked: every SQL example of docs/bi.md and docs/monitoring.md runs against
 * a synced database (and the changed-rows one counts deletions), every table, view and column has a
 * COMMENT, and the line the simulator prints works when pasted into a shell.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli } from '../support/harness.js';

/** The files whose ```sql blocks are checked: the pages of the alert and example queries. */
const SQL_EXAMPLE_FILES = ['docs/monitoring.md', 'docs/bi.md'];

/** Each statement of each ```sql block of those files, with the comment lines above it. */
function readmeSqlExamples(): Array<{ comment: string; sql: string }> {
  const readme = SQL_EXAMPLE_FILES.map((file) => readFileSync(join(ROOT, file), 'utf8')).join('\n');
  const examples: Array<{ comment: string; sql: string }> = [];
  for (const block of readme.matchAll(/^```sql\n([\s\S]*?)^```$/gm)) {
    let comment: string[] = [];
    let sql: string[] = [];
    for (const line of block[1]!.split('\n')) {
      if (sql.length === 0 && line.startsWith('--')) comment.push(line.replace(/^--\s*/, ''));
      else if (line.trim() !== '') sql.push(line);
      if (line.trimEnd().endsWith(';')) {
        examples.push({ comment: comment.join(' '), sql: sql.join('\n') });
        comment = [];
        sql = [];
      }
    }
    expect(sql, 'a README SQL example without its closing semicolon').toEqual([]);
  }
  return examples;
}

const fx = useSyncFixture('readme', { simulator: { records: 60 } });
let changing: Record<string, number>;

beforeAll(async () => {
  expect((await runCli(['run'], fx.env)).code).toBe(0);
  fx.sim.mutate({ change: 7, remove: 5, add: 3 });
  const second = await runCli(['run', '--json'], fx.env);
  expect(second.code, second.stderr).toBe(0);
  changing = JSON.parse(second.stdout);
  expect(changing).toMatchObject({ inserted: 3, updated: 7, deleted: 5 });
  // A dry run and a failed run after it: neither changes what the examples report.
  fx.sim.mutate({ change: 4 });
  expect((await runCli(['run', '--dry-run'], fx.env)).code).toBe(0);
  fx.sim.setFault('html');
  expect((await runCli(['run'], fx.env)).code).toBe(1);
  fx.sim.setFault(null);
});

describe('the README SQL examples', () => {
  const examples = readmeSqlExamples();

  it('are found', () => {
    expect(examples.length).toBeGreaterThanOrEqual(8);
  });

  it.each(examples.map((e) => [e.comment, e.sql]))('run: %s', async (_comment, sql) => {
    await expect(fx.db.rows(sql)).resolves.toBeDefined();
  });

  it('"what changed in the last run that changed anything" lists inserts, updates and deletions', async () => {
    const example = examples.find((e) => e.comment.startsWith('what changed in the last run'));
    const rows = await fx.db.rows<{ change: string }>(example!.sql);
    const byChange = Object.fromEntries(
      ['inserted', 'updated or restored', 'deleted'].map((c) => [c, rows.filter((r) => r.change === c).length]),
    );
    expect(byChange).toEqual({ inserted: 3, 'updated or restored': 7, deleted: 5 });
    expect(rows).toHaveLength(
      Number(changing.inserted) + Number(changing.updated) + Number(changing.deleted) + Number(changing.restored),
    );
  });

  it('"how fresh is the data" and the staleness alert answer with the last run that committed data', async () => {
    const fresh = examples.find((e) => e.comment.startsWith('how fresh is the data'));
    expect(await fx.db.rows(fresh!.sql)).toEqual([expect.objectContaining({ run_id: String(changing.id) })]);
    const stale = examples.find((e) => e.comment.startsWith('alert: no successful load'));
    expect(await fx.db.rows(stale!.sql)).toEqual([{ stale: false }]);
  });
});

describe('COMMENTs', () => {
  it('every table, view and column of the schema and of the BI schema has one', async () => {
    const missing = await fx.db.rows<{ what: string }>(
      `SELECT format('%s.%s', n.nspname, c.relname) AS what
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
       AND obj_description(c.oid, 'pg_class') IS NULL
       UNION ALL
       SELECT format('%s.%s.%s', n.nspname, c.relname, a.attname)
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'v', 'm', 'p', 'f') AND col_description(c.oid, a.attnum) IS NULL
       ORDER BY 1`,
      [[fx.db.schema, `${fx.db.schema}_bi`]],
    );
    expect(missing).toEqual([]);
    const [{ n }] = await fx.db.rows<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY($1)
      AND c.relkind IN ('r', 'v')`,
      [[fx.db.schema, `${fx.db.schema}_bi`]],
    );
    expect(n).toBeGreaterThanOrEqual(15);
    expect(
      await fx.db.rows("SELECT obj_description('sync_migrations'::regclass, 'pg_class') IS NOT NULL AS commented"),
    ).toEqual([{ commented: true }]);
  });
});

describe('the simulator', () => {
  const fresh = useSyncFixture('readme_simulator');

  /** `simulate` as a child process until it printed its settings line; returns that line and a stop function. */
  async function simulate(extra: Record<string, string>): Promise<{ line: string; stop: () => void }> {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'bin', 'wine-recon-sync'), 'simulate', '--port', '0', '--records', '4'],
      {
        env: { PATH: process.env.PATH ?? '', ...extra },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const found = out.split('\n').find((l) => l.includes('WINE_API_PASSWORD='));
        if (found !== undefined && out.endsWith('\n')) resolve(found.trim());
      });
      child.on('close', (code) => reject(new Error(`simulate exited ${code}: ${out}`)));
    });
    return { line, stop: () => child.kill('SIGTERM') };
  }

  /** The printed line pasted into a shell in front of `wine-recon-sync run --json`. */
  const pasted = (line: string, extra: Record<string, string>) =>
    new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn('sh', ['-c', `${line} "$NODE" "$BIN" run --json`], {
        env: {
          PATH: process.env.PATH ?? '',
          NODE: process.execPath,
          BIN: join(ROOT, 'bin', 'wine-recon-sync'),
          ...fresh.env,
          ...extra,
        },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.on('close', (code) => resolve({ code, stdout }));
    });

  it('prints a line that works when pasted: the demo password when it is the default', async () => {
    const { line, stop } = await simulate({});
    try {
      expect(line).toMatch(
        /^WINE_API_BASE_URL=http:\/\/127\.0\.0\.1:\d+ WINE_API_EMAIL=demo@example\.com WINE_API_PASSWORD=demo-password$/,
      );
      const r = await pasted(line, {});
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'succeeded', received: 4 });
    } finally {
      stop();
    }
  });

  it('names SIMULATOR_PASSWORD instead of printing a password the user chose', async () => {
    const secret = "s3cret pass'word";
    const { line, stop } = await simulate({ SIMULATOR_EMAIL: 'ops@example.org', SIMULATOR_PASSWORD: secret });
    try {
      expect(line).not.toContain('s3cret');
      expect(line).toMatch(/ WINE_API_EMAIL=ops@example\.org WINE_API_PASSWORD="\$SIMULATOR_PASSWORD"$/);
      const r = await pasted(line, { SIMULATOR_PASSWORD: secret });
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'succeeded', received: 4 });
    } finally {
      stop();
    }
  });
});
