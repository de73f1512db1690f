/**
 * Debian's PgBouncer in front of the test database, configured as a site would from the packaged
 * /etc/pgbouncer/pgbouncer.ini: only `[databases]`, the listen address, auth and `pool_mode` are
 * set (plus its log, pid and socket paths, which must be writable here). PgBouncer refuses to run
 * as root: as root it runs as the `postgres` user.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { QueryConfig } from 'pg';
import { freePort } from './global-setup.js';

const PACKAGED_INI = '/etc/pgbouncer/pgbouncer.ini';

export interface Bouncer {
  /** The test database's URL, through PgBouncer. */
  url: string;
  port: number;
  /** `SHOW …` on PgBouncer's admin console, as rows. */
  show(what: 'POOLS' | 'SERVERS' | 'CLIENTS'): Promise<Array<Record<string, string>>>;
  stop(): Promise<void>;
}

export function pgbouncerAvailable(): boolean {
  const r = spawnSync('pgbouncer', ['--version'], { stdio: 'ignore' });
  return r.error === undefined && r.status === 0;
}

/** PgBouncer in `mode` before `databaseUrl` (the test database), on a free port. */
export async function startPgBouncer(databaseUrl: string, mode: 'session' | 'transaction'): Promise<Bouncer> {
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  // A password the server may not even ask for (trust): the client must send one to PgBouncer (md5).
  const password = decodeURIComponent(target.password) || 'bouncer-test-password';
  const database = target.pathname.slice(1);
  const dir = await mkdtemp(join(tmpdir(), 'wrs-pgbouncer-'));
  const port = await freePort();
  const packaged = await readFile(PACKAGED_INI, 'utf8');
  const settings: Record<string, string> = {
    logfile: join(dir, 'pgbouncer.log'),
    pidfile: join(dir, 'pgbouncer.pid'),
    unix_socket_dir: dir,
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    auth_type: 'md5',
    auth_file: join(dir, 'userlist.txt'),
    pool_mode: mode,
    // Only the admin console's user; not a behaviour setting.
    admin_users: user,
  };
  const ini = setIni(packaged, settings).replace(
    /^\[databases\]$/m,
    `[databases]\n${database} = host=${target.hostname} port=${target.port || '5432'} dbname=${database}`,
  );
  await writeFile(join(dir, 'pgbouncer.ini'), ini);
  await writeFile(join(dir, 'userlist.txt'), `"${user}" "${password}"\n`);
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const { uid, gid } = postgresIds();
    await chmod(dir, 0o700);
    await chown(dir, uid, gid);
    for (const f of ['pgbouncer.ini', 'userlist.txt']) await chown(join(dir, f), uid, gid);
  }
  const child = asRoot
    ? spawn('runuser', ['-u', 'postgres', '--', 'pgbouncer', join(dir, 'pgbouncer.ini')], {
        stdio: ['ignore', 'ignore', 'pipe'],
      })
    : spawn('pgbouncer', [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitForPort(port, child, () => stderr);
  const auth = `${encodeURIComponent(user)}:${encodeURIComponent(password)}`;
  return {
    url: `postgres://${auth}@127.0.0.1:${port}/${database}`,
    port,
    show: (what) => show(`postgres://${auth}@127.0.0.1:${port}/pgbouncer`, what),
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The packaged file with `settings` put in its [pgbouncer] section, each replacing its (commented) default. */
function setIni(packaged: string, settings: Record<string, string>): string {
  const lines = packaged
    .split('\n')
    .filter((line) => !Object.keys(settings).some((k) => new RegExp(`^\\s*;?\\s*${k}\\s*=`).test(line)));
  const at = lines.findIndex((l) => l.trim() === '[pgbouncer]');
  lines.splice(at + 1, 0, ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`));
  return lines.join('\n');
}

function postgresIds(): { uid: number; gid: number } {
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error('running as root, PgBouncer needs a `postgres` user to run as');
  return { uid, gid };
}

async function waitForPort(port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  const { connect } = await import('node:net');
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${stderr()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`pgbouncer did not listen on ${port}: ${stderr()}`);
}

/** The admin console speaks only the simple query protocol. */
async function show(adminUrl: string, what: string): Promise<Array<Record<string, string>>> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const result = await client.query({ text: `SHOW ${what}`, queryMode: 'simple' } as QueryConfig);
    return (result as unknown as { rows: Array<Record<string, string>> }).rows;
  } finally {
    await client.end();
  }
}
