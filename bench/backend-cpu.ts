/**
 * The CPU of the PostgreSQL backends that serve one sync, read from /proc while it runs: only
 * possible when the server runs on this machine, in this PID namespace (otherwise: n/a).
 *
 * The sync's backends are the sessions named `wine-recon-sync` (src/db/pool.ts) whose client port
 * is one of the sync process's own TCP sockets, so another sync on the same server (someone else's
 * bench) is not counted. A backend ends with its connection, and an ended process's CPU can no
 * longer be read: each one's user and system time is sampled every `intervalMs`, and its last
 * sample is what counts. So the last interval of each backend is missed, no more.
 */
import { execFileSync } from 'node:child_process';
import { readFile, readdir, readlink } from 'node:fs/promises';
import type pg from 'pg';

const APPLICATION_NAME = 'wine-recon-sync';

export interface ProcCpu {
  /** Seconds of user and system CPU. */
  user: number;
  system: number;
}

export interface BackendCpu extends ProcCpu {
  /** Each backend of the sync: most of the time is the run's own connection. */
  backends: Array<{ pid: number } & ProcCpu>;
}

let ticks: number | undefined;

/** Clock ticks per second, the unit of /proc/<pid>/stat's times. */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** utime and stime of a /proc/<pid>/stat line (fields 14 and 15; the command name may hold spaces and parentheses). */
export function parseProcStat(text: string, hz: number): ProcCpu & { comm: string } {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  return { comm: text.slice(open + 1, close), user: Number(fields[11]) / hz, system: Number(fields[12]) / hz };
}

async function procCpu(pid: number): Promise<(ProcCpu & { comm: string }) | undefined> {
  try {
    return parseProcStat(await readFile(`/proc/${pid}/stat`, 'utf8'), clockTicks());
  } catch {
    return undefined; // ended, or not on this machine
  }
}

/** Local ports of a process's TCP sockets: its socket inodes, looked up in its network namespace's tables. */
export async function localPorts(pid: number): Promise<Set<number>> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m) inodes.add(m[1]!);
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    const text = await readFile(`/proc/${pid}/net/${table}`, 'utf8').catch(() => '');
    for (const port of portsOfSockets(text, inodes)) ports.add(port);
  }
  return ports;
}

/** From a /proc/net/tcp table: the local port of each row whose inode is one of `inodes`. */
export function portsOfSockets(table: string, inodes: ReadonlySet<string>): number[] {
  const ports: number[] = [];
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    if (f.length > 9 && inodes.has(f[9]!)) ports.push(parseInt(f[1]!.split(':')[1]!, 16));
  }
  return ports;
}

/** Whether the server's backends are processes of this machine: the admin session's own backend is in /proc. */
export async function serverIsLocal(admin: pg.Client): Promise<boolean> {
  const pid = Number((await admin.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  return (await procCpu(pid))?.comm.startsWith('postgres') === true;
}

export class BackendCpuSampler {
  private readonly last = new Map<number, ProcCpu>();
  /** Sessions of that name that are not the sync's (another client's): never sampled. */
  private readonly others = new Set<number>();
  private stopped = false;
  private readonly loop: Promise<void>;

  private constructor(
    private readonly admin: pg.Client,
    private readonly childPid: number,
    private readonly intervalMs: number,
  ) {
    this.loop = this.run();
  }

  /**
   * Samples the backends of the process `childPid` until stop(); undefined when the server's processes cannot be seen.
   */
  static async start(admin: pg.Client, childPid: number, intervalMs = 50): Promise<BackendCpuSampler | undefined> {
    return (await serverIsLocal(admin)) ? new BackendCpuSampler(admin, childPid, intervalMs) : undefined;
  }

  /** After the sync process ended: the last sample of each of its backends. */
  async stop(): Promise<BackendCpu> {
    this.stopped = true;
    await this.loop;
    const backends = [...this.last].map(([pid, cpu]) => ({ pid, ...cpu }));
    // Sums of tick counts: rounded to the tick (1/100 s), not left as float noise in the JSON.
    return {
      user: round(sum(backends.map((b) => b.user))),
      system: round(sum(backends.map((b) => b.system))),
      backends,
    };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await this.sample().catch(() => undefined); // a failed sample is a gap, not a failed bench
      await new Promise((r) => setTimeout(r, this.intervalMs));
    }
  }

  private async sample(): Promise<void> {
    const { rows } = await this.admin.query<{ pid: number; client_port: number | null }>(
      'SELECT pid, client_port FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
      [APPLICATION_NAME],
    );
    const fresh = rows.filter((r) => !this.last.has(r.pid) && !this.others.has(r.pid));
    if (fresh.length > 0) {
      const ports = await localPorts(this.childPid);
      for (const r of fresh) {
        // A Unix-socket session has no port: taken as the sync's (the bench connects over TCP).
        if (r.client_port === null || r.client_port < 0 || ports.has(r.client_port))
          this.last.set(r.pid, { user: 0, system: 0 });
        else if (ports.size > 0) this.others.add(r.pid);
      }
    }
    // Only sessions still listed: an ended backend's pid may already be another process's.
    for (const { pid } of rows) {
      if (!this.last.has(pid)) continue;
      const cpu = await procCpu(pid);
      if (cpu?.comm.startsWith('postgres')) this.last.set(pid, { user: cpu.user, system: cpu.system });
    }
  }
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
