/**
 * A throwaway cluster of Debian's PostgreSQL 15 (the server sites run), or of the server programs in
 * another directory (`binDir`: the registry's binaries of another major, see global-setup.ts),
 * started with the postgresql.conf and pg_hba.conf lines a test needs (ssl = on, hostssl/hostnossl,
 * scram-sha-256). As root the server runs as the `postgres` user. The test's own admin connections
 * go through the Unix socket (trusted), so pg_hba lines only describe TCP.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports.js';

const run = promisify(execFile);

export const PG15_BIN = '/usr/lib/postgresql/15/bin';
export const hasPg15 = (): boolean => existsSync(join(PG15_BIN, 'postgres')) && existsSync(join(PG15_BIN, 'initdb'));

export interface StockPostgresOptions {
  /** Where initdb, pg_ctl and postgres are (default: Debian's PostgreSQL 15). */
  binDir?: string;
  /** Lines added to postgresql.conf (e.g. `ssl = on`). */
  conf?: string[];
  /** pg_hba.conf's TCP lines, in order (default: `host all all 127.0.0.1/32 trust`). */
  hba?: string[];
  /** Files written into the data directory before the start (server.crt, server.key, ca.pem), owned by the server. */
  files?: Record<string, string | Buffer>;
}

export interface StockPostgres {
  port: number;
  /** The data directory and the directory of its Unix socket (and log). */
  dataDir: string;
  socketDir: string;
  /** postgres://user[:password]@host:port/postgres with these query parameters. */
  url(user: string, options?: { password?: string; host?: string; params?: Record<string, string> }): string;
  /** A superuser connection through the Unix socket; ended by the caller. */
  admin(): Promise<pg.Client>;
  /** The server's log so far. */
  log(): Promise<string>;
  /** `pg_ctl restart -m <mode>`: `fast` ends every session (admin_shutdown), `immediate` kills them. */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  stop(): Promise<void>;
}

const asRoot = userInfo().uid === 0;

/** Runs a server program as the `postgres` user when this process is root (initdb and postgres refuse root). */
export function asPostgres(command: string, args: string[]): Promise<unknown> {
  return asRoot ? run('runuser', ['-u', 'postgres', '--', command, ...args]) : run(command, args);
}

export async function startStockPostgres(options: StockPostgresOptions = {}): Promise<StockPostgres> {
  const bin = options.binDir ?? PG15_BIN;
  const dir = await mkdtemp(join(tmpdir(), 'wrs-pg-'));
  await chmod(dir, 0o755);
  const data = join(dir, 'data');
  if (asRoot) await run('chown', ['postgres', dir]);
  await asPostgres(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '-A',
    'trust',
    '--no-sync',
    '--encoding=UTF8',
    '--locale=C',
  ]);
  const port = await freePort();
  for (const [name, content] of Object.entries(options.files ?? {})) {
    const file = join(data, name);
    await writeFile(file, content, { mode: 0o600 });
    if (asRoot) await run('chown', ['postgres', file]);
  }
  const conf = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    'fsync = off',
    ...(options.conf ?? []),
  ];
  await writeFile(join(data, 'postgresql.auto.conf'), `${conf.join('\n')}\n`);
  const hba = ['local all all trust', ...(options.hba ?? ['host all all 127.0.0.1/32 trust'])];
  await writeFile(join(data, 'pg_hba.conf'), `${hba.join('\n')}\n`);
  if (asRoot) await run('chown', ['-R', 'postgres', data]);
  const logFile = join(dir, 'log');
  try {
    await asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', logFile, '-w', '-t', '60', 'start']);
  } catch (error) {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    await rm(dir, { recursive: true, force: true });
    throw new Error(`the PostgreSQL of ${bin} did not start: ${(error as Error).message}\n${log}`);
  }
  return {
    port,
    dataDir: data,
    socketDir: dir,
    url: (user, { password, host = '127.0.0.1', params = {} } = {}) => {
      const query = new URLSearchParams(params).toString();
      const auth =
        password === undefined
          ? encodeURIComponent(user)
          : `${encodeURIComponent(user)}:${encodeURIComponent(password)}`;
      return `postgres://${auth}@${host}:${port}/postgres${query ? `?${query}` : ''}`;
    },
    admin: async () => {
      const client = new pg.Client({ host: dir, port, user: 'postgres', database: 'postgres', ssl: false });
      await client.connect();
      return client;
    },
    log: () => readFile(logFile, 'utf8').catch(() => ''),
    restart: async (mode) => {
      await asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', logFile, '-m', mode, '-w', '-t', '60', 'restart']);
    },
    stop: async () => {
      await asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A client certificate for `user` (CN), signed by the CA that makeTestPki made in `dir`. */
export async function issueClientCertificate(
  openssl: string,
  dir: string,
  user: string,
): Promise<{ certFile: string; keyFile: string }> {
  const file = (f: string) => join(dir, f);
  await run(openssl, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=${user}`,
    '-keyout',
    file(`client-${user}.key`),
    '-out',
    file(`client-${user}.csr`),
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    '-addext',
    'keyUsage=critical,digitalSignature',
    '-addext',
    'extendedKeyUsage=clientAuth',
  ]);
  await run(openssl, [
    'ca',
    '-batch',
    '-notext',
    '-config',
    file('ca.cnf'),
    '-cert',
    file('ca.pem'),
    '-keyfile',
    file('ca.key'),
    '-in',
    file(`client-${user}.csr`),
    '-out',
    file(`client-${user}.pem`),
    '-days',
    '30',
  ]);
  await chmod(file(`client-${user}.key`), 0o600);
  return { certFile: file(`client-${user}.pem`), keyFile: file(`client-${user}.key`) };
}
