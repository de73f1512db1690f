import { spawn } from 'node:child_process';
import { chmod, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/global-setup.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli, tempDir } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

/**
 * Runs the demo on a real pseudo-terminal (python's pty module), types Ctrl-C once it waits, and
 * returns what the terminal showed and the exit code.
 */
const PTY_DRIVER = `
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(sys.argv[1], sys.argv[1:], dict(os.environ))
out, sent, deadline = b'', False, time.time() + 150
while time.time() < deadline:
    if select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    if not sent and b'press Ctrl-C' in out:
        # While the server is up: its connect line's password, and the old fixed one, tried with \`status\`.
        import re, subprocess
        found = re.search(rb'PGPASSWORD=(\\S+) psql "postgres://postgres@(\\S+)"', out)
        for name, password in [('printed', found.group(1).decode()), ('fixed', 'postgres')]:
            url = 'postgres://postgres:%s@%s' % (password, found.group(2).decode())
            probe = subprocess.run([sys.argv[1], sys.argv[2], 'status'], env=dict(os.environ, DATABASE_URL=url), capture_output=True)
            out += ('\\nPROBE %s %d %s' % (name, probe.returncode, probe.stderr.decode().strip())).encode()
        time.sleep(0.3)
        os.write(fd, b'\\x03')
        sent = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors='replace'))
sys.stdout.write('\\nEXIT %d\\n' % os.waitstatus_to_exitcode(status))
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
    expect(r.stdout).toContain('  => 40 new records inserted; 60 changed records updated (their old versions kept in the history); 25 records no longer listed soft-deleted; 2915 records unchanged and not rewritten\n');
    // The pools are closed before the server stops: the stop is not logged as a failure.
    expect(r.stderr).not.toContain('idle database connection failed');
    // A random password, new at every start, shown in the connect line and kept only for this user.
    const printed = (text: string) => /^ {2}PGPASSWORD=([0-9a-f]{48}) psql "postgres:\/\/postgres@127\.0\.0\.1:\d+\/wine"$/m.exec(text)?.[1];
    const first = printed(r.stdout);
    expect(first).toBeDefined();

    // The same data directory again: the upstream starts over from the original 3000 records.
    const again = await runCli(['demo'], env, 120_000);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain('empty tables');
    expect(again.stdout).toContain(`1. first sync of this demo, into tables kept from before (the newest earlier run is 2, succeeded): only differences from the data already there are written; for a fresh start, delete ${env.DEMO_DATA_DIR}`);
    expect(again.stdout).toMatch(/^run 3 succeeded.*\n.*\n {2}inserted 0 {2}updated 60 {2}unchanged 2915 {2}deleted 40 {2}restored 25$/m);
    expect(again.stdout).toContain('  => 60 changed records updated (their old versions kept in the history); 40 records no longer listed soft-deleted; 25 records listed again restored; 2915 records unchanged and not rewritten\n');
    expect(again.stdout).toMatch(/^run 4 succeeded.*\n.*\n {2}inserted 0 {2}updated 60 {2}unchanged 2915 {2}deleted 25 {2}restored 40$/m);
    expect(again.stdout).not.toContain('new records inserted');
    const second = printed(again.stdout);
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect((await readFile(`${env.DEMO_DATA_DIR}.password`, 'utf8')).trim()).toBe(second);
    expect((await stat(`${env.DEMO_DATA_DIR}.password`)).mode & 0o777).toBe(0o600);
  });

  describe('with DATABASE_URL set', () => {
    const fx = useSyncFixture('demo');

    it('uses that database instead, and leaves two demo runs and history behind', async () => {
      const r = await runCli(['demo'], { DATABASE_URL: fx.db.url, SYNC_DB_SCHEMA: fx.db.schema });
      expect(r.code, r.stderr).toBe(0);
      expect(await fx.db.rows('SELECT trigger, status, inserted::int, updated::int, deleted::int FROM sync_runs ORDER BY id')).toEqual([
        { trigger: 'demo', status: 'succeeded', inserted: 3000, updated: 0, deleted: 0 },
        { trigger: 'demo', status: 'succeeded', inserted: 40, updated: 60, deleted: 25 },
      ]);
      expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_history WHERE valid_to IS NOT NULL')).toEqual([{ n: 85 }]);
    });
  });
});

describeWith('python3 (for a pseudo-terminal)', runs('python3'), 'demo on a terminal', () => {
  it('waits for Ctrl-C with the embedded PostgreSQL up, then stops it and exits 0', async () => {
    const dir = await tempDir();
    await chmod(dir, 0o755);
    const port = String(await freePort());
    const shown = await new Promise<string>((resolve, reject) => {
      const child = spawn('python3', ['-c', PTY_DRIVER, process.execPath, join(ROOT, 'bin', 'wine-recon-sync'), 'demo'], {
        env: { PATH: process.env.PATH ?? '', TERM: 'xterm', NO_COLOR: '1', LOG_LEVEL: 'warn', DEMO_DATA_DIR: join(dir, 'pg'), DEMO_PG_PORT: port },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', reject);
      child.on('close', () => resolve(out));
    });
    expect(shown).toContain('press Ctrl-C to stop it.');
    expect(shown).toContain('stopping the embedded PostgreSQL...');
    // The printed password let \`status\` in; postgres/postgres did not.
    expect(shown).toMatch(/^PROBE printed 0 $/m);
    expect(shown).toMatch(/^PROBE fixed 1 Error: cannot use the database at DATABASE_URL \(password authentication failed\)/m);
    expect(shown.trimEnd().split('\n').at(-1)).toBe('EXIT 0');
    expect(shown).not.toContain('idle database connection failed');
    // The server is really down: nothing listens on its port any more.
    const probe = await runCli(['status'], { DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${port}/wine` });
    expect(probe.code).not.toBe(0);
    expect(probe.stderr).toContain('nothing listens there');
  }, 180_000);
});
