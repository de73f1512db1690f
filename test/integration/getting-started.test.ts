/**
 * docs/getting-started.md's production path, executed: the code blocks marked `<!-- step -->` run
 * as written, in order, in one bash, from an empty PostgreSQL (Debian's 15 when installed, else
 * the tests' own server, said loudly) to the daemon's first run and its status page, with the
 * simulator as the upstream. Only step 1's values (the database's name and an admin URL) come from
 * the test. A failed command, or a marked block that never ran, fails the test.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ROOT } from '../support/harness.js';
import { hasPg15, startStockPostgres, type StockPostgres } from '../support/stock-postgres.js';

const PAGE = join(ROOT, 'docs', 'getting-started.md');

interface Step {
  /** 1-based, in page order. */
  n: number;
  commands: string;
  background: boolean;
  /** For a background step: the command that succeeds once it is ready. */
  ready?: string;
}

/** The marked ```sh blocks of the page, in order. */
function stepsOf(markdown: string): Step[] {
  const steps: Step[] = [];
  const marker = /<!-- step(?::\s*(.*?))?\s*-->\n+```sh\n([\s\S]*?)^```$/gm;
  for (const m of markdown.matchAll(marker)) {
    const options = (m[1] ?? '').split(';').map((o) => o.trim());
    const ready = options
      .find((o) => o.startsWith('ready:'))
      ?.slice('ready:'.length)
      .trim();
    steps.push({
      n: steps.length + 1,
      commands: m[2]!.trimEnd(),
      background: options.includes('background'),
      ...(ready ? { ready } : {}),
    });
  }
  return steps;
}

/** One bash script: each step's commands as written, then its number in the steps file. */
function scriptOf(steps: Step[], work: string): string {
  const lines = ['set -euo pipefail', 'set -m'];
  for (const step of steps) {
    lines.push(`# step ${step.n}`);
    if (step.background) {
      lines.push(`{\n${step.commands}\n} > '${work}/step-${step.n}.log' 2>&1 &`, `echo $! >> '${work}/pids'`);
      const ready = step.ready ?? 'true';
      lines.push(
        `for _ in $(seq 1 240); do if { ${ready}; } > /dev/null 2>&1; then break; fi; sleep 0.5; done`,
        `{ ${ready}; } > /dev/null`,
      );
    } else {
      lines.push(step.commands);
    }
    lines.push(`echo ${step.n} >> '${work}/steps-done'`);
  }
  return `${lines.join('\n')}\n`;
}

describe('docs/getting-started.md', () => {
  const steps = stepsOf(readFileSync(PAGE, 'utf8'));
  let stock: StockPostgres | undefined;
  let work = '';
  const cleanups: Array<() => Promise<unknown>> = [];

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await stock?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('marks the production path: the secrets, the role, the simulator, the environment, run, the daemon', () => {
    const all = steps.map((s) => s.commands).join('\n');
    expect(steps.length).toBeGreaterThanOrEqual(7);
    for (const needed of [
      'sql/sync_role.sql',
      'wine-recon-sync simulate',
      'WINE_API_LOGIN_URL=http://',
      'WINE_API_ALLOW_INSECURE_HTTP=true',
      'wine-recon-sync run --dry-run',
      'wine-recon-sync run\n',
      'wine-recon-sync schedule',
      'wine-recon-sync status',
    ]) {
      expect(all, needed).toContain(needed);
    }
  });

  it('runs every marked command as written, from an empty database to the daemon and its page', async () => {
    const started = Date.now();
    work = await mkdtemp(join(tmpdir(), 'wrs-getting-started-'));
    let database: { host: string; port: string; name: string; adminUrl: string };
    if (hasPg15()) {
      stock = await startStockPostgres({
        hba: ['host all postgres 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 scram-sha-256'],
      });
      const admin = await stock.admin();
      await admin.query('CREATE DATABASE wine');
      await admin.end();
      database = {
        host: '127.0.0.1',
        port: String(stock.port),
        name: 'wine',
        adminUrl: `postgres://postgres@127.0.0.1:${stock.port}/wine`,
      };
    } else {
      if (process.env.CI === 'true') throw new Error('Debian PostgreSQL 15 (postgresql-15) is not installed');
      console.warn("*** getting-started: Debian PostgreSQL 15 not installed; using the tests' own PostgreSQL");
      const url = new URL(inject('databaseUrl'));
      const name = `wrs_gs_${process.pid}`;
      const admin = new pg.Client({ connectionString: url.toString() });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      cleanups.push(async () => {
        const c = new pg.Client({ connectionString: url.toString() });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.query('DROP ROLE IF EXISTS wine_sync');
        await c.end();
      });
      const adminUrl = new URL(url);
      adminUrl.pathname = `/${name}`;
      database = { host: url.hostname, port: url.port || '5432', name, adminUrl: adminUrl.toString() };
    }

    const script = join(work, 'steps.sh');
    await writeFile(script, scriptOf(steps, work));
    await writeFile(join(work, 'steps-done'), '');
    await writeFile(join(work, 'pids'), '');
    cleanups.push(async () => {
      const pids = (await readFile(join(work, 'pids'), 'utf8')).split('\n').filter(Boolean);
      for (const pid of pids) {
        try {
          process.kill(-Number(pid), 'SIGTERM');
        } catch {
          // already gone
        }
      }
    });
    const home = join(work, 'home');
    const env: Record<string, string> = {
      PATH: `${join(ROOT, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: home,
      TMPDIR: work,
      LANG: 'C.UTF-8',
      DB_HOST: database.host,
      DB_PORT: database.port,
      DB_NAME: database.name,
      ADMIN_URL: database.adminUrl,
    };
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile('bash', [script], { env, cwd: work, timeout: 240_000 }, (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, stderr });
      });
    });
    const done = (await readFile(join(work, 'steps-done'), 'utf8')).split('\n').filter(Boolean).map(Number);
    const logs = await Promise.all(
      steps.filter((s) => s.background).map((s) => readFile(join(work, `step-${s.n}.log`), 'utf8').catch(() => '')),
    );
    const failedAt = steps.find((s) => !done.includes(s.n));
    expect(
      { code: result.code, done },
      `failed at step ${failedAt?.n}:\n${failedAt?.commands}\n--- stdout\n${result.stdout}\n--- stderr\n` +
        `${result.stderr.slice(-4000)}\n--- background logs\n${logs.map((l) => l.slice(-2000)).join('\n---\n')}`,
    ).toEqual({ code: 0, done: steps.map((s) => s.n) });

    // What the page says the reader sees: three runs, the daemon's a catch-up, all succeeded.
    expect(result.stdout).toMatch(/catch-up/);
    expect(result.stdout).toMatch(/healthy/);
    expect(result.stdout).toContain('Fresh');
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`getting-started: ${steps.length} steps in ${seconds} s`);
  }, 300_000);
});
