import { spawn } from 'node:child_process';
import { chmod, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/global-setup.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli, tempDir } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

/**
 * A real pseudo-terminal (python's pty module) between a test and a command: what the command
 * writes reaches the test's pipe as it comes, what the test writes (Ctrl-C) reaches the command as
 * typed; the command's exit status is the last line.
 */
const PTY_RELAY = `
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(sys.argv[1], sys.argv[1:], dict(os.environ))
typed = sys.stdin.fileno()
while True:
    ready = select.select([fd] + ([typed] if typed is not None else []), [], [])[0]
    if fd in ready:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        os.write(1, chunk)
    if typed is not None and typed in ready:
        keys = os.read(typed, 64)
        if keys:
            os.write(fd, keys)
        else:
            typed = None
_, status = os.waitpid(pid, 0)
os.write(1, b'\\nEXIT %d\\n' % os.waitstatus_to_exitcode(status))
`;

describe('demo', () => {
  it('runs the whole job on an embedded PostgreSQL: two syncs, updates and deletes, and the psql command; run again, it tells the kept data apart', async () => {
    const dir = await tempDir();
    await chmod(dir, 0o755);
    const env = { DEMO_DATA_DIR: join(dir, 'pg'), DEMO_PG_PORT: String(await freePort()) };
    const r = await runCli(['demo'], env, 120_000);
    expect(r.code, r.stderr).toBe(0);
    const summaries = r.stdout.match(/^run \d+ succeeded.*$/gm);
    expect(summaries).toHaveLength(2);
    expect(r.stdout).toContain('1. first sync, into empty tables:');
    expect(r.stdout).toMatch(/inserted 3000 {2}updated 0 {2}unchanged 0 {2}deleted 0/);
    expect(r.stdout).toContain('  => 3000 new records inserted\n');
    expect(r.stdout).toMatch(/inserted 40 {2}updated 60 {2}unchanged 2915 {2}deleted 25/);
    expect(r.stdout).toContain(
      '  => 40 new records inserted; 60 changed records updated (their old versions kept in the history); 25 records no longer listed soft-deleted; 2915 records unchanged and not rewritten\n',
    );
    // The pools are closed before the server stops: the stop is not logged as a failure.
    expect(await readFile(join(dir, 'demo.log'), 'utf8')).not.toContain('idle database connection failed');
    // The rounding warning is said in plain words where it shows, once.
    expect(r.stdout).toContain(
      "  => about that warning: the simulated upstream sends decimals with more than 10 places, as real ones do. An analyst's BI tool reads the views in public_bi, which show those values rounded to 10 places (SYNC_BI_SCALE); every digit as sent stays in public.bulk_wine_reconciliation_current and _history. Nothing is lost.\n",
    );
    expect(r.stdout).toContain('  => the warning: the same rounding as above, in the BI views only\n');
    // Outside a terminal the server stops with the demo: no command that could not reach it.
    expect(r.stdout).toContain(
      `the embedded PostgreSQL is stopped now; its data stays in ${env.DEMO_DATA_DIR}` +
        `.\nRun \`npm run demo\` in a terminal to keep it running`,
    );
    expect(r.stdout).not.toMatch(/psql|DATABASE_URL=|PGPASSWORD/);
    // The job's log is in its own file, not among the summaries; no password in it.
    const log = join(dir, 'demo.log');
    expect(r.stdout).toContain(`the job's log (JSON lines, LOG_LEVEL): ${log}\n`);
    expect(r.stderr).toBe('');
    const logged = await readFile(log, 'utf8');
    expect(logged).toMatch(/"msg":"sync started"/);
    const first = (await readFile(`${env.DEMO_DATA_DIR}.password`, 'utf8')).trim();
    expect(first).toMatch(/^[0-9a-f]{48}$/);
    expect(logged).not.toContain(first);

    // The same data directory again: the upstream starts over from the original 3000 records.
    const again = await runCli(['demo'], env, 120_000);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain('empty tables');
    expect(again.stdout).toContain(
      `1. first sync of this demo, into tables kept from before (the newest earlier run is 2, succeeded)` +
        `: only differences from the data already there are written` +
        `; for a fresh start, delete ${env.DEMO_DATA_DIR}`,
    );
    expect(again.stdout).toMatch(
      /^run 3 succeeded.*\n.*\n {2}inserted 0 {2}updated 60 {2}unchanged 2915 {2}deleted 40 {2}restored 25$/m,
    );
    expect(again.stdout).toContain(
      '  => 60 changed records updated (their old versions kept in the history); 40 records no longer listed soft-deleted; 25 records listed again restored; 2915 records unchanged and not rewritten\n',
    );
    expect(again.stdout).toMatch(
      /^run 4 succeeded.*\n.*\n {2}inserted 0 {2}updated 60 {2}unchanged 2915 {2}deleted 25 {2}restored 40$/m,
    );
    expect(again.stdout).not.toContain('new records inserted');
    // A random password, new at every start, kept only for this user.
    const second = (await readFile(`${env.DEMO_DATA_DIR}.password`, 'utf8')).trim();
    expect(second).toMatch(/^[0-9a-f]{48}$/);
    expect(second).not.toBe(first);
    expect((await stat(`${env.DEMO_DATA_DIR}.password`)).mode & 0o777).toBe(0o600);
  });

  it.runIf(process.getuid?.() === 0)(
    'as root, in a directory the postgres user cannot enter: says so (exit 2) and starts nothing',
    async () => {
      const dir = await tempDir(); // 0700, root's
      const r = await runCli(['demo'], { DEMO_DATA_DIR: join(dir, 'pg'), DEMO_PG_PORT: String(await freePort()) });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `Error: as root, the embedded PostgreSQL runs as the user postgres` +
          `, which cannot enter ${dir}: set DEMO_DATA_DIR`,
      );
      expect(r.stdout).not.toContain('starting an embedded PostgreSQL');
      expect(await readdir(dir)).toEqual([]);
    },
  );

  describe('with a database of the shell', () => {
    const fx = useSyncFixture('demo');

    it('leaves DATABASE_URL and SYNC_DB_SCHEMA of the shell alone: its own server, and says so', async () => {
      const dir = await tempDir();
      await chmod(dir, 0o755);
      const env = {
        DATABASE_URL: fx.db.url,
        SYNC_DB_SCHEMA: fx.db.schema,
        DEMO_DATA_DIR: join(dir, 'pg'),
        DEMO_PG_PORT: String(await freePort()),
      };
      const r = await runCli(['demo'], env, 120_000);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(
        'DATABASE_URL, SYNC_DB_SCHEMA are set here and not used: the demo writes only into a PostgreSQL it starts itself, or into the database --database-url names\n',
      );
      expect(r.stdout).toContain(`starting an embedded PostgreSQL on 127.0.0.1:${env.DEMO_PG_PORT}`);
      expect(r.stdout.match(/^run \d+ succeeded.*$/gm)).toHaveLength(2);
      // The shell's schema got nothing: no run, no row.
      expect(await fx.db.rows('SELECT count(*)::int AS n FROM sync_runs')).toEqual([{ n: 0 }]);
      expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
    });

    it('--database-url names the database it uses (with SYNC_DB_SCHEMA): two demo runs and history', async () => {
      const dir = await tempDir();
      const r = await runCli(['demo', '--database-url', fx.db.url], {
        SYNC_DB_SCHEMA: fx.db.schema,
        DEMO_DATA_DIR: join(dir, 'pg'),
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toContain('embedded');
      expect(r.stdout).toContain('\nnext, with that database as DATABASE_URL (and the same SYNC_DB_SCHEMA):\n');
      expect(
        await fx.db.rows(
          'SELECT trigger, status, inserted::int, updated::int, deleted::int FROM sync_runs ORDER BY id',
        ),
      ).toEqual([
        { trigger: 'demo', status: 'succeeded', inserted: 3000, updated: 0, deleted: 0 },
        { trigger: 'demo', status: 'succeeded', inserted: 40, updated: 60, deleted: 25 },
      ]);
      expect(
        await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_history WHERE valid_to IS NOT NULL'),
      ).toEqual([{ n: 85 }]);
    });
  });
});

describeWith('python3 (for a pseudo-terminal)', runs('python3'), 'the first ten minutes', () => {
  it('`npm run demo` in a terminal: its page answers, and the two commands it prints next work as printed; Ctrl-C stops the page and the server', async () => {
    const dir = await tempDir();
    await chmod(dir, 0o755);
    const port = String(await freePort());
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? dir,
      TERM: 'xterm',
      NO_COLOR: '1',
      DEMO_DATA_DIR: join(dir, 'pg'),
      DEMO_PG_PORT: port,
    };
    const demo = spawn('python3', ['-c', PTY_RELAY, 'npm', 'run', 'demo'], {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let shown = '';
    const waiting = new Promise<void>((resolve) =>
      demo.stdout.on(
        'data',
        (d: Buffer) => (shown += d.toString().replaceAll('\r', '')).includes('press Ctrl-C') && resolve(),
      ),
    );
    const ended = new Promise<void>((resolve) => demo.on('close', () => resolve()));
    try {
      await Promise.race([waiting, ended]);
      expect(shown).toContain('press Ctrl-C to stop the status page and the embedded PostgreSQL.');

      // The page this demo serves, and its JSON twin.
      const page = /^ {2}(http:\/\/127\.0\.0\.1:\d+)\/ {3}\(its JSON twin: \1\/index\.json\)$/m.exec(shown)?.[1];
      expect(page, shown).toBeDefined();
      expect((await fetch(`${page}/`)).status).toBe(200);
      expect(
        (await (await fetch(`${page}/index.json`)).json()).runs.map((r: { id: string; status: string }) => [
          r.id,
          r.status,
        ]),
      ).toEqual([
        ['2', 'succeeded'],
        ['1', 'succeeded'],
      ]);

      // The two lines a newcomer copies next, run as printed by a shell, from the checkout.
      const next = [...shown.matchAll(/^ {2}(DATABASE_URL=\S+ .*\.\/bin\/wine-recon-sync (status|serve))$/gm)].map(
        (m) => m[1]!,
      );
      expect(next).toHaveLength(2);
      expect(next[0]).not.toMatch(/postgres:[^@/]*@/); // the password is in the file it names, not on the screen
      // In a process group of its own, so that `serve` under its shell can be stopped as Ctrl-C would.
      const shell = (line: string) =>
        spawn('sh', ['-c', line], {
          cwd: ROOT,
          env: { PATH: env.PATH },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        });
      const status = shell(next[0]!);
      let statusOut = '';
      status.stdout.on('data', (d: Buffer) => (statusOut += d));
      expect(await new Promise((resolve) => status.on('close', resolve))).toBe(0);
      expect(statusOut).toMatch(/^2 +demo +1 +succeeded /m);
      expect(statusOut).toMatch(/^1 +demo +1 +succeeded /m);

      const serve = shell(next[1]!);
      let serveLog = '';
      const serving = await new Promise<string>((resolve, reject) => {
        serve.stderr.on('data', (d: Buffer) => {
          serveLog += d;
          const found = /"page":"(http:[^"]+)"/.exec(serveLog);
          if (found) resolve(found[1]!);
        });
        serve.on('close', () => reject(new Error(`serve ended: ${serveLog}`)));
      });
      expect(serving).toBe('http://127.0.0.1:9465/');
      const answer = await fetch(serving);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('The last 2 runs');
      const served = new Promise((resolve) => serve.on('close', resolve));
      process.kill(-serve.pid!, 'SIGTERM');
      await served;
      expect(serveLog).toContain('stopping the status page');

      // The server's old fixed password does not let anyone in.
      const fixed = await runCli(['status'], { DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${port}/wine` });
      expect(fixed.code).not.toBe(0);
      expect(fixed.stderr).toContain('password authentication failed');

      demo.stdin.write('\x03');
      await ended;
      expect(shown).toContain('stopping the embedded PostgreSQL...');
      expect(shown).toContain(`stopped; its data stays in ${env.DEMO_DATA_DIR}: \`npm run demo\` starts it again.`);
      // Both are really down: nothing listens on their ports any more.
      await expect(fetch(`${page}/`)).rejects.toThrow();
      const probe = await runCli(['status'], { DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${port}/wine` });
      expect(probe.code).not.toBe(0);
      expect(probe.stderr).toContain('nothing listens there');
    } finally {
      // A failed expectation must not leave the demo and its server running.
      if (demo.exitCode === null) {
        demo.stdin.write('\x03');
        await ended;
      }
    }
  }, 240_000);
});
