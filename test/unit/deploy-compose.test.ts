/**
 * The Compose files against the Compose Specification's JSON Schema (test/fixtures/compose-spec):
 * deploy/compose/compose.yaml (production: the published image, secrets from files read through
 * *_FILE, no default password, a health check, a stop grace period over the exit bound, a volume for
 * what the job writes) and docker-compose.yml (the demo, which says so in its first line); and
 * the production file as Debian's docker-compose reads it, with and without its required settings.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../support/harness.js';
import { composeSpec } from '../support/json-schemas.js';
import { describeWith, runs } from '../support/programs.js';

const PRODUCTION = join(ROOT, 'deploy', 'compose', 'compose.yaml');
const DEMO = join(ROOT, 'docker-compose.yml');

/** The parts of a Compose file the tests read. */
interface ComposeService {
  image?: string;
  command?: string[];
  environment: Record<string, string>;
  secrets?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  [key: string]: unknown;
}
interface Compose {
  services: Record<string, ComposeService>;
  secrets?: Record<string, { file?: string }>;
  volumes?: Record<string, unknown>;
}

const load = async (path: string) => parse(await readFile(path, 'utf8')) as Compose;

/** A Compose duration (`30s`, `1m30s`) in seconds. */
function seconds(duration: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1 };
  const parts = [...duration.matchAll(/(\d+)([hms])/g)];
  expect(parts.map((p) => p[0]).join(''), duration).toBe(duration);
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]!]!, 0);
}

describe('the Compose files', () => {
  const check = composeSpec();

  it("both are valid Compose files by the specification's schema", async () => {
    expect(check(await load(PRODUCTION))).toEqual([]);
    expect(check(await load(DEMO))).toEqual([]);
    // The schema is real: an unknown service key and a wrong type are errors.
    const bad = await load(PRODUCTION);
    bad.services.sync!.stop_grace = '30s';
    bad.services.sync!.cap_drop = 'ALL';
    const errors = check(bad).join('\n');
    expect(errors).toContain('"additionalProperty":"stop_grace"');
    expect(errors).toContain('/services/sync/cap_drop must be array');
  });

  it('production: the image, secrets from files read through *_FILE, no default password', async () => {
    const compose = await load(PRODUCTION);
    const sync = compose.services.sync!;
    expect(Object.keys(compose.services)).toEqual(['sync']);
    expect(sync.image).toMatch(/\/wine-recon-sync:\d+\.\d+\.\d+$/);
    expect(sync).not.toHaveProperty('build');
    expect(sync.command).toEqual(['schedule']);

    const env = sync.environment;
    const secrets = compose.secrets as Record<string, { file?: string }>;
    expect(Object.values(secrets).every((s) => typeof s.file === 'string')).toBe(true);
    expect(sync.secrets).toEqual(Object.keys(secrets));
    const fileVariables = Object.entries(env).filter(([name]) => /_(PASSWORD|TOKEN|API_KEY|URL)_FILE$/.test(name));
    expect(fileVariables.map(([, path]) => path).sort()).toEqual(
      Object.keys(secrets)
        .map((s) => `/run/secrets/${s}`)
        .sort(),
    );
    // No secret by value, and no variable holding one with a default.
    const text = await readFile(PRODUCTION, 'utf8');
    expect(Object.keys(env).filter((n) => /(PASSWORD|TOKEN|API_KEY)$/.test(n))).toEqual([]);
    expect(text).not.toMatch(/(PASSWORD|TOKEN|API_KEY)[A-Z_]*:-/);
    expect(env.DATABASE_URL).toMatch(/^\$\{DATABASE_URL:\?/);
  });

  it('production: a health check, a grace over the exit bound, writes to a volume only', async () => {
    const compose = await load(PRODUCTION);
    const sync = compose.services.sync!;
    expect(sync.healthcheck?.test).toEqual(['CMD', '/app/bin/wine-recon-sync', 'healthcheck']);
    // The daemon exits within 10 s of SIGTERM (README, "Deploying the daemon").
    expect(seconds(sync.stop_grace_period!)).toBeGreaterThan(10);
    const [volume, at] = sync.volumes![0]!.split(':');
    expect(Object.keys(compose.volumes ?? {})).toEqual([volume]);
    expect([sync.environment.TMPDIR, sync.environment.SYNC_HEALTH_FILE]).toEqual([at, `${at}/health`]);
    expect(sync).toMatchObject({ read_only: true, cap_drop: ['ALL'], security_opt: ['no-new-privileges:true'] });
  });

  it('the demo says in its first line that it is the demo, and where production is', async () => {
    const first = (await readFile(DEMO, 'utf8')).split('\n')[0]!;
    expect(first).toMatch(/^# The demo\b.*deploy\/compose\/compose\.yaml/);
  });
});

describeWith('docker-compose (Debian package)', runs('docker-compose', ['version']), 'docker-compose reads it', () => {
  it('resolves the production file with its three settings, and names a missing one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'wrs-compose-'));
    try {
      await cp(PRODUCTION, join(dir, 'compose.yaml'));
      await mkdir(join(dir, 'secrets'));
      await writeFile(join(dir, 'secrets', 'wine_api_password'), 'x');
      await writeFile(join(dir, 'secrets', 'database_password'), 'x');
      const settings = {
        DATABASE_URL: 'postgres://wine_sync@db.example.com:5432/wine',
        WINE_API_BASE_URL: 'https://wine.example.com',
        WINE_API_EMAIL: 'reporting@example.com',
      };
      const config = (env: Record<string, string>) =>
        spawnSync('docker-compose', ['config'], {
          cwd: dir,
          env: { PATH: process.env.PATH ?? '', ...env },
          encoding: 'utf8',
          timeout: 60_000,
        });
      const ok = config(settings);
      expect(ok.status, ok.stderr).toBe(0);
      const resolved = parse(ok.stdout) as Compose;
      expect(resolved.services.sync?.environment).toMatchObject({ ...settings, SYNC_SCHEDULE: '0 3 * * *' });
      expect(resolved.secrets?.wine_api_password?.file).toBe(join(dir, 'secrets', 'wine_api_password'));

      const missing = config({ ...settings, DATABASE_URL: '' });
      expect(missing.status).not.toBe(0);
      expect(missing.stderr).toContain('set DATABASE_URL in .env');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
