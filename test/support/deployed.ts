/**
 * Runs the program the way a deployment file starts it: as an unprivileged user (setpriv, as root),
 * with only the environment the file gives, and finds afterwards what that user wrote outside the
 * directories the file makes writable. Used by the systemd and Kubernetes tests (test/integration/deploy-*).
 */
import { spawn } from 'node:child_process';
import { readdir, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { it } from 'vitest';
import type { CliProcess, CliResult } from './harness.js';

/** True as root: only root can start a process as another user. */
export const isRoot = process.getuid?.() === 0;

/**
 * A test that needs root to switch users: it fails under CI=true without root, and skips loudly
 * otherwise (the same rule as the outside programs of programs.ts).
 */
export function itAsRoot(name: string, body: () => Promise<void>, timeoutMs: number): void {
  if (isRoot) {
    it(name, body, timeoutMs);
    return;
  }
  if (process.env.CI === 'true') {
    it(name, () => {
      throw new Error('this test starts the program as another user, which needs root; CI=true runs as root');
    });
    return;
  }
  console.warn(`\n*** SKIPPING "${name}": it needs root to start the program as another user ***\n`);
  it.skip(name, body);
}

/** A uid and gid that no account and no other test uses, so that whatever it owns, this run wrote. */
export function unusedId(): number {
  return 61_000 + Math.floor(Math.random() * 900);
}

/** Who the program runs as: a uid, its gid (default: the uid) and supplementary groups (default: none). */
export interface RunAs {
  uid: number;
  gid?: number;
  groups?: number[];
  /**
   * When given, the program runs in a mount namespace of its own where every file system is
   * read-only but these directories (as ProtectSystem=strict or readOnlyRootFilesystem leave it).
   */
  writable?: string[];
}

/**
 * Run by root in the new mount namespace (`unshare --mount`), before it becomes the user: binds each
 * writable directory onto itself, remounts every other mount read-only, then execs the rest of its
 * arguments. $1 is the number of writable directories that follow.
 */
const READ_ONLY_BUT = `
set -eu
n=$1; shift
keep=""
while [ "$n" -gt 0 ]; do mount --bind "$1" "$1"; keep="$keep
$1"; shift; n=$((n - 1)); done
for m in $(awk '{ print $2 }' /proc/self/mounts | sort -u); do
  printf '%s\n' "$keep" | grep -qxF -- "$m" && continue
  mount -o remount,bind,ro "$m" 2>/dev/null || true
done
exec "$@"
`;

/** Starts `node script args` as `who` with exactly `env` (nothing of the test's environment leaks in), in `cwd`. */
export function startAs(
  who: RunAs,
  script: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): CliProcess {
  const groups = who.groups?.length ? ['--groups', who.groups.join(',')] : ['--clear-groups'];
  const ids = ['--reuid', String(who.uid), '--regid', String(who.gid ?? who.uid), ...groups];
  const setpriv = ['setpriv', ...ids, '--', process.execPath, script, ...args];
  const writable = who.writable ?? [];
  // unshare and sh exec what follows: the pid is the program's, and signals reach it.
  const [command, ...argv] = who.writable
    ? [
        'unshare',
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        READ_ONLY_BUT,
        'sh',
        String(writable.length),
      ].concat(writable, setpriv)
    : setpriv;
  const child = spawn(command!, argv, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const lines = new PassThrough();
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    lines.write(d);
  });
  const result = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return {
    pid: child.pid!,
    result,
    kill: (signal) => child.kill(signal),
    waitForLog: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const line = stderr.split('\n').find((l) => pattern.test(l));
          if (line === undefined) return;
          clearTimeout(timer);
          lines.off('data', check);
          resolve(line);
        };
        const timer = setTimeout(() => {
          lines.off('data', check);
          reject(new Error(`no log line matching ${pattern} within ${timeoutMs} ms; stderr:\n${stderr}`));
        }, timeoutMs);
        lines.on('data', check);
        check();
      }),
  };
}

/** Runs `node script args` as `who` to its end (killed after `timeoutMs`). */
export async function runAs(
  who: RunAs,
  script: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
  timeoutMs = 60_000,
): Promise<CliResult> {
  const cli = startAs(who, script, args, env, cwd);
  const timer = setTimeout(() => cli.kill('SIGKILL'), timeoutMs);
  const result = await cli.result;
  clearTimeout(timer);
  return result;
}

/**
 * Paths under `roots` owned by `uid`, apart from those under `allowed`: what the program wrote
 * where the deployment does not let it. The world-writable places (/tmp, /var/tmp, /dev/shm) and
 * the checkout are the ones an unprivileged user could write to at all.
 */
export async function ownedOutside(uid: number, roots: string[], allowed: string[]): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return; // gone meanwhile, or not readable: another test's private directory
    }
    for (const name of names) {
      const path = join(dir, name);
      if (allowed.some((a) => path === a || path.startsWith(`${a}/`))) continue;
      const st = await lstat(path).catch(() => undefined);
      if (!st) continue;
      if (st.uid === uid) found.push(path);
      if (st.isDirectory() && name !== 'node_modules' && name !== '.git') await walk(path);
    }
  };
  for (const root of roots) await walk(root);
  return found;
}
