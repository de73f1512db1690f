/**
 * Names what a run waited for when SYNC_LOCK_TIMEOUT_MS ran out, from samples taken while it waited.
 * Rule: sample during the wait; after the cancel the wait is gone.
 */
import type { Pool } from '../db/pool.js';
import { LockTimeoutError } from '../errors.js';
import { loadStatements } from '../db/statements.js';

const SQL = loadStatements('load/lock_wait.sql', ['blocked_by']);
const LOCK_NOT_AVAILABLE = '55P03';

export interface Blocker {
  pid: number;
  user: string | null;
  applicationName: string;
  state: string | null;
  /** What it waits on (pg_stat_activity wait_event_type/wait_event), e.g. Client/ClientRead. */
  waitsOn: string | null;
  seconds: number | null;
}

export interface LockWait {
  relation: string | null;
  mode: string;
  locktype: string;
  blockers: Blocker[];
  sampledAt: number;
}

interface BlockedByRow {
  relation: string | null;
  mode: string;
  locktype: string;
  pid: number | null;
  usename: string | null;
  application_name: string | null;
  state: string | null;
  wait_event_type: string | null;
  wait_event: string | null;
  seconds: number | null;
}

export class LockWaitWatch {
  private latest: LockWait | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly intervalMs: number;

  private readonly pids: number[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly lockTimeoutMs: number,
  ) {
    this.intervalMs = Math.min(1000, Math.max(100, Math.floor(lockTimeoutMs / 5)));
  }

  /** Watches one more of the run's connections (by backend pid). */
  watch(pid: number): void {
    if (pid) this.pids.push(pid);
  }

  start(): this {
    if (this.lockTimeoutMs > 0) this.schedule();
    return this;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * The run's error as a LockTimeoutError naming table and blockers, when it is a lock timeout (on any watched
   * connection).
   */
  explain(error: unknown): unknown {
    if ((error as { code?: unknown })?.code !== LOCK_NOT_AVAILABLE) return error;
    // Only a sample from this wait counts: one taken within the timeout before the error.
    const wait =
      this.latest && Date.now() - this.latest.sampledAt <= this.lockTimeoutMs + 2 * this.intervalMs
        ? this.latest
        : undefined;
    return new LockTimeoutError(describeWait(wait, this.lockTimeoutMs), { cause: error });
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.sample(), this.intervalMs);
  }

  private async sample(): Promise<void> {
    try {
      const { rows } = await this.pool.query<BlockedByRow>(SQL.blocked_by, [this.pids]);
      const first = rows[0];
      if (first) {
        const wait: LockWait = {
          relation: first.relation,
          mode: first.mode,
          locktype: first.locktype,
          blockers: rows
            .filter((r) => r.pid !== null)
            .map((r) => ({
              pid: r.pid!,
              user: r.usename,
              applicationName: r.application_name ?? '',
              state: r.state,
              waitsOn: r.wait_event_type === null ? null : `${r.wait_event_type}/${r.wait_event ?? ''}`,
              seconds: r.seconds,
            })),
          sampledAt: Date.now(),
        };
        // A wait sampled as it ends (its statement cancelled by the timeout between pg_locks and
        // pg_blocking_pids) names nobody: the sample before it, of the same wait, still does.
        // Seen in CI with two of the run's connections waiting on one table.
        const previous = this.latest;
        const sameWait =
          previous !== undefined &&
          previous.relation === wait.relation &&
          previous.mode === wait.mode &&
          wait.sampledAt - previous.sampledAt <= this.lockTimeoutMs;
        if (wait.blockers.length > 0 || !sameWait || previous.blockers.length === 0) this.latest = wait;
      }
    } catch {
      // A failed sample only makes the eventual message less specific.
    }
    if (!this.stopped) this.schedule();
  }
}

export function describeWait(wait: LockWait | undefined, lockTimeoutMs: number): string {
  const limit = `waited longer than SYNC_LOCK_TIMEOUT_MS=${lockTimeoutMs} ms for a lock`;
  if (!wait) return `${limit} (the blocking session was not seen: see pg_locks); nothing was committed`;
  const what = wait.relation ? `on table ${wait.relation} (${wait.mode})` : `(${wait.locktype}, ${wait.mode})`;
  const blockers =
    wait.blockers.length === 0
      ? 'the blocking session ended before it could be named'
      : wait.blockers.map(describeBlocker).join('; ');
  return `${limit} ${what}; blocked by ${blockers}; nothing was committed`;
}

function describeBlocker(b: Blocker): string {
  const parts = [`pid ${b.pid}`];
  if (b.user !== null) parts.push(`user ${JSON.stringify(b.user)}`);
  parts.push(`application_name ${JSON.stringify(b.applicationName)}`);
  if (b.state !== null) parts.push(`state ${JSON.stringify(b.state)}`);
  if (b.waitsOn !== null) parts.push(`waiting on ${b.waitsOn}`);
  if (b.seconds !== null) parts.push(`for ${b.seconds} s`);
  return parts.join(', ');
}
