/**
 * A PostgreSQL 15 primary and a streaming standby made from it with `pg_basebackup -R`, from
 * Debian's binaries, as a site runs a pair that fails over: the primary can be stopped at once
 * (`pg_ctl stop -m immediate`, a crash as far as clients can tell) and the standby promoted.
 * As root the servers run as the `postgres` user (stock-postgres.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './global-setup.js';
import { asPostgres, hasPg15, PG15_BIN, startStockPostgres, type StockPostgres } from './stock-postgres.js';

const run = promisify(execFile);

export const hasReplicationTools = (): boolean =>
  hasPg15() && existsSync(join(PG15_BIN, 'pg_basebackup')) && existsSync(join(PG15_BIN, 'pg_ctl'));

export interface Node {
  name: 'primary' | 'standby';
  port: number;
  /** A superuser connection through the Unix socket; ended by the caller. */
  admin(): Promise<pg.Client>;
  /** `pg_ctl stop -m immediate`: every backend killed, no shutdown checkpoint. */
  stopImmediately(): Promise<void>;
  log(): Promise<string>;
}

export interface ReplicatedPostgres {
  primary: Node;
  standby: Node & {
    /** `pg_ctl promote`, waiting until the server accepts writes. */
    promote(): Promise<void>;
  };
  /** postgres://postgres@127.0.0.1:<first>,127.0.0.1:<second>/postgres with these query parameters. */
  url(order: Node[], params?: Record<string, string>): string;
  /** Waits until the standby has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
}

export async function startReplicatedPostgres(): Promise<ReplicatedPostgres> {
  const primary = await startStockPostgres({
    hba: ['host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust'],
  });
  let standby: StandbyServer | undefined;
  try {
    standby = await startStandby(primary);
  } catch (error) {
    await primary.stop();
    throw error;
  }
  const primaryNode: Node = {
    name: 'primary',
    port: primary.port,
    admin: () => primary.admin(),
    stopImmediately: () => pgCtl(primary.dataDir, ['-m', 'immediate', '-w', 'stop']),
    log: () => primary.log(),
  };
  const s = standby;
  return {
    primary: primaryNode,
    standby: s.node,
    url: (order, params = {}) => {
      const query = new URLSearchParams(params).toString();
      const hosts = order.map((n) => `127.0.0.1:${n.port}`).join(',');
      return `postgres://postgres@${hosts}/postgres${query ? `?${query}` : ''}`;
    },
    caughtUp: async () => {
      const p = await primary.admin();
      const q = await s.node.admin();
      try {
        const lsn = (await p.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
        for (let i = 0; i < 600; i++) {
          const { rows } = await q.query<{ done: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [
            lsn,
          ]);
          if (rows[0]!.done) return;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`the standby did not replay up to ${lsn} within 30 s`);
      } finally {
        await p.end();
        await q.end();
      }
    },
    stop: async () => {
      await s.stop();
      await primary.stop();
    },
  };
}

interface StandbyServer {
  node: ReplicatedPostgres['standby'];
  stop(): Promise<void>;
}

/** A base backup of `primary` with `-R` (standby.signal, primary_conninfo), started on its own port. */
async function startStandby(primary: StockPostgres): Promise<StandbyServer> {
  const dir = await mkdtemp(join(tmpdir(), 'wrs-pg15-standby-'));
  await chmod(dir, 0o755);
  if (userInfo().uid === 0) await run('chown', ['postgres', dir]);
  const data = join(dir, 'data');
  const logFile = join(dir, 'log');
  const port = await freePort();
  try {
    await asPostgres(join(PG15_BIN, 'pg_basebackup'), [
      '-D',
      data,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
    ]);
    // The backup copied the primary's postgresql.auto.conf: its own port and socket, later lines winning.
    await appendFile(join(data, 'postgresql.auto.conf'), `port = ${port}\nunix_socket_directories = '${dir}'\n`);
    await pgCtl(data, ['-l', logFile, '-w', '-t', '60', 'start']);
  } catch (error) {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    await rm(dir, { recursive: true, force: true });
    throw new Error(`the standby did not start: ${(error as Error).message}\n${log}`);
  }
  const admin = async () => {
    const client = new pg.Client({ host: dir, port, user: 'postgres', database: 'postgres', ssl: false });
    await client.connect();
    return client;
  };
  return {
    node: {
      name: 'standby',
      port,
      admin,
      stopImmediately: () => pgCtl(data, ['-m', 'immediate', '-w', 'stop']),
      promote: () => pgCtl(data, ['-w', '-t', '60', 'promote']),
      log: () => readFile(logFile, 'utf8').catch(() => ''),
    },
    stop: async () => {
      await pgCtl(data, ['-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function pgCtl(data: string, args: string[]): Promise<void> {
  await asPostgres(join(PG15_BIN, 'pg_ctl'), ['-D', data, ...args]);
}
