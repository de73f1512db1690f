/**
 * The daemon's health, shared by `healthcheck` (reading the heartbeat file) and `/healthz`
 * (answered by the daemon itself). Unhealthy: the heartbeat is stale or its process gone, or a run
 * has outlived SYNC_RUN_TIMEOUT_MS by more than a grace period, i.e. even its own time limit
 * could not stop it.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** A heartbeat older than this means the daemon is stuck or gone. */
const STALE_MS = 60_000;
/** Time the timeout's abort path (request abort, statement cancel, rollback) gets to finish. */
export const RUN_GRACE_MS = 60_000;

export interface Health {
  pid: number;
  state: 'idle' | 'running' | 'stopping' | 'refused';
  /** Why the daemon refused to start (state 'refused'): a database schema newer than the release, say. */
  refused?: string;
  heartbeatAt: string;
  nextRunAt: string | null;
  lastRun: {
    id: number;
    status: string;
    finishedAt: string | null;
    /** The daemon's chain: which attempt the run was, of how many, and when the next one is due (ISO; null: none). */
    attempt?: number;
    attempts?: number;
    retryAt?: string | null;
    /** Why a failure is not retried (notify.ts chainLine's words). */
    notRetried?: string;
  } | null;
  /**
   * The last successful load (sync_last_load: dry runs excluded), read from the database at start and after each run.
   */
  lastSuccess?: { id: number; finishedAt: string } | null;
  /** When the current run started; null while idle. */
  runStartedAt: string | null;
  runTimeoutMs: number;
}

export interface Verdict {
  healthy: boolean;
  reason: string;
}

/** `heartbeat`: also judge the heartbeat's age (false for the daemon judging itself). */
export function assessHealth(health: Health, nowMs: number, heartbeat: boolean): Verdict {
  if (health.refused !== undefined) return { healthy: false, reason: `the daemon refused to start: ${health.refused}` };
  if (heartbeat) {
    const age = nowMs - Date.parse(health.heartbeatAt);
    if (!(age <= STALE_MS))
      return { healthy: false, reason: `last heartbeat ${Math.round(age / 1000)} s ago from pid ${health.pid}` };
  }
  if (health.runStartedAt !== null) {
    const runMs = nowMs - Date.parse(health.runStartedAt);
    if (runMs > health.runTimeoutMs + RUN_GRACE_MS) {
      return {
        healthy: false,
        reason:
          `a run started ${Math.round(runMs / 1000)} s ago, beyond ` +
          `SYNC_RUN_TIMEOUT_MS=${health.runTimeoutMs} plus ${RUN_GRACE_MS / 1000} s of grace: it is stuck`,
      };
    }
  }
  const last = health.lastRun ? describeLastRun(health.lastRun) : 'none';
  const load = health.lastSuccess
    ? `run ${health.lastSuccess.id} at ${health.lastSuccess.finishedAt}`
    : health.lastSuccess === null
      ? 'none'
      : 'unknown';
  return {
    healthy: true,
    reason: `${health.state}, next run ${health.nextRunAt ?? 'none'}, last run ${last}, last successful load ${load}`,
  };
}

/** `17 failed (attempt 1 of 4), retrying at …`, or `17 succeeded`. */
export function describeLastRun(run: NonNullable<Health['lastRun']>): string {
  const which =
    run.attempt !== undefined && run.attempts !== undefined ? ` (attempt ${run.attempt} of ${run.attempts})` : '';
  if (run.status === 'succeeded') return `${run.id} succeeded${(run.attempt ?? 1) > 1 ? which : ''}`;
  if (run.retryAt) return `${run.id} ${run.status}${which}, retrying at ${run.retryAt}`;
  return `${run.id} ${run.status}${which}${run.notRetried ? `, ${run.notRetried}` : ''}`;
}

/**
 * Writes the heartbeat: to a fresh temporary file (never through a symbolic link planted there),
 * then renamed over the file, so a reader never sees half a file. `path` is SYNC_HEALTH_FILE; with
 * `privateDirs` (the default's directories, when SYNC_HEALTH_FILE is not set) the file is `health`
 * in the first of them that is, or can be made, a private directory of this user's (heartbeatFile).
 * Returns the file written.
 */
export async function writeHealth(path: string, health: Health, privateDirs: readonly string[] = []): Promise<string> {
  const file = privateDirs.length === 0 ? path : await heartbeatFile(privateDirs, true);
  const temporary = `${file}.tmp`;
  await rm(temporary, { force: true });
  const handle = await open(
    temporary,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await handle.writeFile(JSON.stringify(health));
  } finally {
    await handle.close();
  }
  await rename(temporary, file);
  return file;
}

/**
 * The default heartbeat's file: `health` in the first of `dirs` that is a private directory (0700)
 * of this user's, made so when `make` and it does not exist. Another local user can make the
 * first one, in the shared $TMPDIR, before the daemon does: it is then refused (that user could
 * read or replace the heartbeat), and the next one, under this user's own home, is used instead.
 * The daemon (make) and `healthcheck` (not) go through the same list with the same rule, so they
 * agree. When none will do, the error says so and names SYNC_HEALTH_FILE.
 */
export async function heartbeatFile(dirs: readonly string[], make: boolean): Promise<string> {
  const problems: string[] = [];
  for (const dir of dirs) {
    try {
      if (make) await mkdir(dir, { mode: 0o700, recursive: true });
      const problem = await privateDirProblem(dir);
      if (problem === undefined) return join(dir, 'health');
      problems.push(problem);
    } catch (error) {
      problems.push(`${dir} cannot be made (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (!make) return join(dirs[0]!, 'health');
  throw new Error(
    `no private directory of this user's (mode 0700) for the heartbeat: ${problems.join('; ')}; remove the ` +
      `one another user made, or set SYNC_HEALTH_FILE to a file in a directory of the daemon's user`,
  );
}

/**
 * Where the heartbeat is to be read (`healthcheck`) or removed (the daemon, as it stops): SYNC_HEALTH_FILE, or the
 * default's file.
 */
export async function heartbeatToRead(file: string, privateDirs: readonly string[]): Promise<string> {
  return privateDirs.length === 0 ? file : heartbeatFile(privateDirs, false);
}

async function privateDirProblem(dir: string): Promise<string | undefined> {
  const stat = await lstat(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory()) return `${dir} is not a directory`;
  if (uid !== undefined && stat.uid !== uid)
    return `${dir} belongs to uid ${stat.uid}, another user, who may have made it first`;
  if ((stat.mode & 0o077) !== 0) return `${dir} is open to other users (mode ${(stat.mode & 0o777).toString(8)})`;
  return undefined;
}

export type HeartbeatRead = { ok: true; health: Health } | { ok: false; problem: string };

/**
 * The heartbeat at `path`, if it can be trusted: a regular file (not followed through a symbolic
 * link) of this user's. Another user's file could say anything.
 */
export async function readHealth(path: string): Promise<HeartbeatRead> {
  let file;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP')
      return { ok: false, problem: `${path} is a symbolic link: not trusted as the daemon's heartbeat` };
    return { ok: false, problem: `no heartbeat at ${path} (is the daemon running?)` };
  }
  try {
    const stat = await file.stat();
    const uid = process.getuid?.();
    if (!stat.isFile())
      return { ok: false, problem: `${path} is not a regular file: not trusted as the daemon's heartbeat` };
    if (uid !== undefined && stat.uid !== uid) {
      return {
        ok: false,
        problem:
          `${path} belongs to uid ${stat.uid}, not to this user (uid ${uid}): not trusted; run ` +
          `healthcheck as the daemon's user`,
      };
    }
    try {
      return { ok: true, health: JSON.parse(await file.readFile('utf8')) as Health };
    } catch {
      return { ok: false, problem: `the heartbeat at ${path} is not JSON` };
    }
  } finally {
    await file.close();
  }
}

/**
 * Whether `pid` is a live process of this user's. EPERM means it lives but is another user's: not
 * this daemon, whose heartbeat a healthcheck run as the same user can always signal.
 */
export function processState(pid: unknown): 'ours' | 'gone' | 'foreign' {
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return 'gone';
  try {
    process.kill(pid, 0);
    return 'ours';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? 'foreign' : 'gone';
  }
}
