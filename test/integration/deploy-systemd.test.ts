/**
 * deploy/systemd/wine-recon-sync.service: systemd's own checker and security rating, and the
 * unit's ExecStart= run the way systemd runs it (its Environment= and EnvironmentFile=, its
 * credentials in a directory of their own, its state and runtime directories, an unprivileged
 * user) against the test PostgreSQL and the simulator: the sync succeeds and `healthcheck` passes.
 */
import { spawnSync } from 'node:child_process';
import { chmod, chown, copyFile, cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownedOutside, itAsRoot, runAs, startAs, unusedId } from '../support/deployed.js';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { ROOT } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

const UNIT_DIR = join(ROOT, 'deploy', 'systemd');
const UNIT = join(UNIT_DIR, 'wine-recon-sync.service');
const EXAMPLE_ENV = join(UNIT_DIR, 'wine-recon-sync.env');
const RECORDS = 1500;

/** Python: PR_SET_MDWE with PR_MDWE_REFUSE_EXEC_GAIN on itself, then exec of argv[1:] (or exit 3 when refused). */
const MDWE_THEN_EXEC = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:
    sys.exit(3)
if len(sys.argv) > 1:
    os.execv(sys.argv[1], sys.argv[1:])
`;

/** True when the kernel has PR_SET_MDWE (Linux 6.3 and later). */
function mdweAvailable(): boolean {
  const r = spawnSync('python3', ['-c', MDWE_THEN_EXEC], { timeout: 30_000 });
  return r.error === undefined && r.status === 0;
}

/** The [Service] section's settings in order, as [key, value] (a key may repeat). */
async function serviceSettings(): Promise<Array<[string, string]>> {
  const text = await readFile(UNIT, 'utf8');
  const settings: Array<[string, string]> = [];
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    const eq = line.indexOf('=');
    if (section === '[Service]') settings.push([line.slice(0, eq), line.slice(eq + 1)]);
  }
  return settings;
}

const all = (settings: Array<[string, string]>, key: string) => settings.filter(([k]) => k === key).map(([, v]) => v);
const one = (settings: Array<[string, string]>, key: string) => {
  const values = all(settings, key);
  expect(values, key).toHaveLength(1);
  return values[0]!;
};

/** Environment='s assignments: space-separated, each optionally in double quotes (systemd.exec). */
function assignments(value: string): Array<[string, string]> {
  const words = value.match(/"[^"]*"|[^\s"]+/g) ?? [];
  return words
    .map((w) => w.replace(/^"(.*)"$/, '$1'))
    .map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]);
}

/** An EnvironmentFile=: VAR=value lines, # comments, surrounding whitespace and quotes removed. */
function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    env[line.slice(0, eq).trim()] = line
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$|^'(.*)'$/, '$1$2');
  }
  return env;
}

describeWith('systemd-analyze', runs('systemd-analyze'), 'systemd checks the unit', () => {
  it('systemd-analyze verify finds nothing to say', async () => {
    // An offline root holding systemd's own units, the unit and an executable at its ExecStart=
    // path: verify then checks the unit as it would be installed, not this machine's state.
    const fx = await import('node:fs/promises').then((fs) => fs.mkdtemp('/tmp/wrs-unit-root-'));
    const settings = await serviceSettings();
    const exec = one(settings, 'ExecStart').split(' ')[0]!;
    await mkdir(join(fx, 'etc', 'systemd', 'system'), { recursive: true });
    await mkdir(join(fx, 'usr', 'lib', 'systemd'), { recursive: true });
    await mkdir(join(fx, exec, '..'), { recursive: true });
    await writeFile(join(fx, exec), '#!/bin/sh\n', { mode: 0o755 });
    await cp('/usr/lib/systemd/system', join(fx, 'usr', 'lib', 'systemd', 'system'), { recursive: true });
    await copyFile(UNIT, join(fx, 'etc', 'systemd', 'system', 'wine-recon-sync.service'));
    const verify = (unit: string) =>
      spawnSync('systemd-analyze', ['verify', `--root=${fx}`, unit], { encoding: 'utf8', timeout: 60_000 });
    const clean = verify('wine-recon-sync.service');
    expect({ status: clean.status, out: clean.stdout + clean.stderr }).toEqual({ status: 0, out: '' });

    // The check is real: a typo in a setting is reported.
    const bad = (await readFile(UNIT, 'utf8')).replace('Type=exec', 'Type=exce');
    await writeFile(join(fx, 'etc', 'systemd', 'system', 'wine-recon-sync.service'), bad);
    expect(verify('wine-recon-sync.service').stderr).toContain('Failed to parse service type');
    await import('node:fs/promises').then((fs) => fs.rm(fx, { recursive: true, force: true }));
  });

  it('systemd-analyze security --offline=true rates the exposure at 2.0 or lower', () => {
    const r = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', UNIT], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const score = /Overall exposure level for wine-recon-sync\.service: (\d+\.\d+)/.exec(r.stdout)?.[1];
    expect(score, r.stdout + r.stderr).toBeDefined();
    expect(Number(score)).toBeLessThanOrEqual(2.0);
    console.info(`wine-recon-sync.service exposure: ${score}`);
  });
});

describeWith('systemd-analyze', runs('systemd-analyze'), 'what the unit leaves out', () => {
  it("names each setting systemd-analyze security counts against it in its 'Left out on purpose' comment", async () => {
    const r = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', UNIT], { encoding: 'utf8' });
    const missing = [...r.stdout.matchAll(/^✗ (\w+)=/gm)].map((m) => m[1]!);
    expect(missing.length, r.stdout).toBeGreaterThan(0);
    const text = await readFile(UNIT, 'utf8');
    const leftOut = text.slice(text.indexOf('# Left out on purpose:'), text.indexOf('[Install]'));
    expect(missing.filter((name) => !leftOut.includes(`${name}=`))).toEqual([]);
  });
});

describeWith('python3', runs('python3'), 'MemoryDenyWriteExecute', () => {
  it('stops Node.js as soon as V8 compiles, which is why the unit leaves it out', (ctx) => {
    if (!mdweAvailable()) {
      console.warn(
        '\n*** SKIPPING the MemoryDenyWriteExecute check: this kernel has no PR_SET_MDWE (Linux < 6.3) ***\n',
      );
      ctx.skip();
    }
    // The kernel's memory-deny-write-execute, which systemd 254 and later apply for
    // MemoryDenyWriteExecute=yes on Linux 6.3 and later, set on a process that then runs Node.js.
    const r = spawnSync(
      'python3',
      ['-c', MDWE_THEN_EXEC, process.execPath, join(ROOT, 'bin', 'wine-recon-sync'), '--help'],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Fatal error|Check failed/);
    expect(r.stdout).not.toContain('usage');
  });
});

describe('the unit file', () => {
  it('runs the daemon, restarts it on failure and waits longer than its exit bound before SIGKILL', async () => {
    const s = await serviceSettings();
    expect(one(s, 'ExecStart')).toMatch(/^\/usr\/(local\/)?bin\/wine-recon-sync schedule$/);
    expect(one(s, 'Restart')).toBe('on-failure');
    // The daemon exits within 10 s of SIGTERM (README, "Deploying the daemon").
    expect(Number(/^(\d+)s$/.exec(one(s, 'TimeoutStopSec'))?.[1])).toBeGreaterThan(10);
    expect(all(s, 'MemoryDenyWriteExecute')).toEqual([]);
  });

  it('holds no secret: passwords come only from credentials, through *_FILE', async () => {
    const s = await serviceSettings();
    const env = Object.fromEntries(all(s, 'Environment').flatMap(assignments));
    const example = parseEnvFile(await readFile(EXAMPLE_ENV, 'utf8'));
    for (const name of [...Object.keys(env), ...Object.keys(example)])
      expect(name).not.toMatch(/^(WINE_API_PASSWORD|DATABASE_PASSWORD|SYNC_UI_TOKEN|PGPASSWORD)$/);
    expect(example.DATABASE_URL).not.toMatch(/:\/\/[^/@]*:[^/@]*@/);
    const credentials = all(s, 'LoadCredential').map((v) => v.split(':')[0]);
    expect(env.WINE_API_PASSWORD_FILE).toBe('%d/wine_api_password');
    expect(env.DATABASE_PASSWORD_FILE).toBe('%d/database_password');
    expect(credentials).toEqual(['wine_api_password', 'database_password']);
  });
});

describe('ExecStart= run the way systemd runs it', () => {
  const fx = useSyncFixture('systemd', { simulator: { records: RECORDS } });

  itAsRoot(
    'the daemon catches up at its first start, loads every record, and healthcheck passes as its user',
    async () => {
      const uid = unusedId();
      const s = await serviceSettings();
      // The machine's directories, under the test's own: /etc/wine-recon-sync, /var/lib (%S), /run (%t).
      const etc = join(fx.dir, 'etc', 'wine-recon-sync');
      const stateRoot = join(fx.dir, 'var', 'lib');
      const runtimeRoot = join(fx.dir, 'run');
      const credentials = join(runtimeRoot, 'credentials', 'wine-recon-sync.service');
      await mkdir(join(etc, 'credentials'), { recursive: true, mode: 0o700 });
      await chmod(fx.dir, 0o755);

      // The operator's steps of docs/deploy.md: the example settings with this site's values, the
      // secrets as root-only files.
      const url = new URL(fx.db.url);
      // A test database without a password (trust, as CI's PostgreSQL 15) still gets a file: an empty
      // one is a configuration error, and a server that trusts the client never asks for it.
      const dbPassword = decodeURIComponent(url.password) || 'trusted-without-password';
      url.password = '';
      const site = (await readFile(EXAMPLE_ENV, 'utf8'))
        .replace(/^DATABASE_URL=.*$/m, `DATABASE_URL=${url.toString()}`)
        .replace(/^SYNC_DB_SCHEMA=.*$/m, `SYNC_DB_SCHEMA=${fx.db.schema}`)
        .replace(/^WINE_API_BASE_URL=.*$/m, `WINE_API_BASE_URL=${fx.sim.url}`)
        .replace(/^WINE_API_EMAIL=.*$/m, `WINE_API_EMAIL=${fx.sim.email}`)
        .replace(/^SYNC_METRICS_PORT=.*$/m, `SYNC_METRICS_PORT=${await freePort()}`);
      await writeFile(join(etc, 'wine-recon-sync.env'), site, { mode: 0o644 });
      await writeFile(join(etc, 'credentials', 'wine_api_password'), fx.sim.password, { mode: 0o600 });
      await writeFile(join(etc, 'credentials', 'database_password'), dbPassword, { mode: 0o600 });

      // What systemd does before ExecStart=: the state and runtime directories owned by the user,
      // the credentials copied into a directory only the user can read.
      const dirMode = (key: string) => Number.parseInt(one(s, key), 8);
      const stateDirs = all(s, 'StateDirectory').flatMap((v) => v.split(' '));
      const runtimeDirs = all(s, 'RuntimeDirectory').flatMap((v) => v.split(' '));
      for (const [root, dirs, mode] of [
        [stateRoot, stateDirs, dirMode('StateDirectoryMode')],
        [runtimeRoot, runtimeDirs, dirMode('RuntimeDirectoryMode')],
      ] as const) {
        for (const d of dirs) {
          await mkdir(join(root, d), { recursive: true });
          await chown(join(root, d), uid, uid);
          await chmod(join(root, d), mode);
        }
      }
      await mkdir(credentials, { recursive: true });
      for (const spec of all(s, 'LoadCredential')) {
        const [name, source] = spec.split(':') as [string, string];
        const from = source.replace('/etc/wine-recon-sync', etc);
        await copyFile(from, join(credentials, name));
        await chown(join(credentials, name), uid, uid);
        await chmod(join(credentials, name), 0o400);
      }
      await chown(credentials, uid, uid);
      await chmod(credentials, 0o500);

      const specifiers: Record<string, string> = { d: credentials, S: stateRoot, t: runtimeRoot, T: '/tmp' };
      const expand = (v: string) => v.replace(/%([dStT])/g, (_, c: string) => specifiers[c]!);
      const envFile = one(s, 'EnvironmentFile').replace('/etc/wine-recon-sync', etc);
      const env: Record<string, string> = {
        PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin',
        HOME: '/nonexistent',
        LANG: 'C.UTF-8',
        CREDENTIALS_DIRECTORY: credentials,
        STATE_DIRECTORY: stateDirs.map((d) => join(stateRoot, d)).join(':'),
        RUNTIME_DIRECTORY: runtimeDirs.map((d) => join(runtimeRoot, d)).join(':'),
        ...Object.fromEntries(
          all(s, 'Environment')
            .flatMap(assignments)
            .map(([k, v]) => [k, expand(v)]),
        ),
        // EnvironmentFile= is read after Environment=: its settings win.
        ...parseEnvFile(await readFile(envFile, 'utf8')),
      };
      const [exec, ...args] = one(s, 'ExecStart').split(' ');
      expect(exec).toMatch(/\/bin\/wine-recon-sync$/);
      const bin = join(ROOT, 'bin', 'wine-recon-sync');

      // ProtectSystem=strict: everything read-only but the state and runtime directories.
      const writable = [...stateDirs.map((d) => join(stateRoot, d)), ...runtimeDirs.map((d) => join(runtimeRoot, d))];
      const who = { uid, writable };
      const daemon = startAs(who, bin, args, env, '/');
      try {
        const finished = await daemon.waitForLog(/"sync finished"/, 120_000);
        expect(JSON.parse(finished)).toMatchObject({ status: 'succeeded' });
        const runs = await fx.db.rows<{ status: string; trigger: string }>('SELECT status, trigger FROM sync_runs');
        expect(runs).toEqual([{ status: 'succeeded', trigger: 'catch-up' }]);
        const [count] = await fx.db.rows<{ n: string }>('SELECT count(*) AS n FROM bulk_wine_reconciliation');
        expect(Number(count?.n)).toBe(RECORDS);

        // The operator's check as docs/deploy.md gives it: `runuser -u wine-recon-sync -- env
        // SYNC_HEALTH_FILE=/run/wine-recon-sync/health wine-recon-sync healthcheck`.
        const healthEnv = { PATH: env.PATH!, HOME: '/nonexistent', SYNC_HEALTH_FILE: env.SYNC_HEALTH_FILE! };
        const health = await runAs(who, bin, ['healthcheck'], healthEnv, '/');
        expect(health.code, health.stderr).toBe(0);
        expect(health.stdout).toMatch(/^healthy: idle, next run .*last run \d+ succeeded/);
        const healthz = await fetch(`http://127.0.0.1:${env.SYNC_METRICS_PORT}/healthz`);
        expect(healthz.status).toBe(200);

        // `systemctl stop`: SIGTERM, then the unit's TimeoutStopSec= before a SIGKILL.
        const stopBy = Date.now() + Number(/^(\d+)s$/.exec(one(s, 'TimeoutStopSec'))![1]) * 1000;
        daemon.kill('SIGTERM');
        const exit = await daemon.result;
        expect(Date.now()).toBeLessThan(stopBy);
        expect(exit.code, exit.stderr).toBe(0);
        expect(exit.stderr).not.toContain(fx.sim.password);
        expect(exit.stderr).not.toContain(dbPassword);
      } finally {
        daemon.kill('SIGKILL');
        await daemon.result;
      }

      // Nothing written outside the state and runtime directories.
      expect(
        await ownedOutside(uid, ['/tmp', '/var/tmp', '/dev/shm', ROOT, fx.dir], [...writable, credentials]),
      ).toEqual([]);
    },
    180_000,
  );
});
