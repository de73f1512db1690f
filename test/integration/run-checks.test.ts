/**
 * The checks every run makes before it commits, against the simulator over HTTP: silent over 30
 * nights of ordinary 1% churn; each built-in check trips on a listing made for it (30% fewer
 * records, every volume x1000, a field nulled in 60% of the records); an error refuses the run with
 * the tables unchanged, one notification and no retry by the daemon, until --accept-check; a bad
 * checks file is a configuration error naming its line.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DECIMALS } from '../../bench/realistic-records.js';
import { recordText } from '../../src/simulator/dataset.js';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, runCli, startCli, type CliProcess } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const SEED = 7;
const N = 1000;

const fx = useSyncFixture('checks', { simulator: {}, each: true });
let receiver: Receiver;
const daemons: CliProcess[] = [];
/** The upstream's records: id -> version. */
let versions: Map<number, number>;
let nextId: number;

beforeEach(async () => {
  receiver = await startReceiver();
  versions = new Map(Array.from({ length: N }, (_, i) => [i + 1, 0]));
  nextId = N + 1;
});
afterEach(async () => {
  for (const d of daemons.splice(0)) {
    d.kill('SIGKILL');
    await d.result;
  }
  await receiver.close();
});

/** The listing the simulator serves: every record, each passed through `shape` (id, its text). */
function serve(shape: (id: number, text: string) => string = (_, t) => t): void {
  const ids = [...versions.keys()].sort((a, b) => a - b);
  fx.sim.setRecordsJson(ids.map((id) => shape(id, recordText(SEED, id, versions.get(id)!))));
}

/** One ordinary night: 1% of the records change, 0.5% go, as many new ones come. */
function churn(night: number): void {
  const ids = [...versions.keys()];
  for (let k = 0; k < N / 100; k++) {
    const id = ids[(night * 7919 + k * 104729) % ids.length]!;
    versions.set(id, versions.get(id)! + 1);
  }
  for (let k = 0; k < N / 200; k++) versions.delete(ids[(night * 31 + k * 197) % ids.length]!);
  for (let k = 0; k < N / 200; k++) versions.set(nextId++, 0);
}

/** Quiet nights before a test's own listing, in process (no notification is sent by them). */
async function nights(n: number): Promise<void> {
  const ctx = inProcess(fx.env);
  for (let night = 0; night < n; night++) {
    if (night > 0) churn(night);
    serve();
    const { run } = await ctx.run();
    expect(run.status, run.error ?? '').toBe('succeeded');
  }
}

/** `run --json` as a person starts it, with notifications to the receiver. */
async function run(args: string[] = [], extra: Record<string, string> = {}) {
  const r = await runCli(['run', '--json', ...args], fx.envWith({ SYNC_NOTIFY_URL: receiver.url, ...extra }));
  return { ...r, run: r.stdout ? (JSON.parse(r.stdout) as Record<string, unknown>) : undefined };
}

async function failedChecks(runId: unknown) {
  return fx.db.rows<{ check_name: string; severity: string; observed: string; expected: string; message: string }>(
    'SELECT check_name, severity, observed, expected, message FROM sync_run_checks WHERE run_id = $1 AND NOT passed ORDER BY check_name',
    [runId],
  );
}

/** Every row of the data, history and fingerprint tables with its tuple version. */
async function snapshot() {
  return {
    rows: await fx.db.rows('SELECT xmin::text, * FROM bulk_wine_reconciliation ORDER BY id'),
    closed: await fx.db.rows(
      'SELECT xmin::text, * FROM bulk_wine_reconciliation_closed_versions ORDER BY id, valid_from',
    ),
    fingerprints: await fx.db.rows('SELECT xmin::text, * FROM bulk_wine_reconciliation_source_hash ORDER BY id'),
  };
}

/** A decimal's exact text times 1000 (the decimal point moved), `null` as it is. */
function times1000(value: string): string {
  if (value === 'null') return value;
  const negative = value.startsWith('-');
  const [whole, fraction = ''] = value.replace('-', '').split('.');
  const padded = fraction.padEnd(3, '0');
  const digits = `${whole}${padded.slice(0, 3)}`.replace(/^0+(?=\d)/, '');
  const rest = padded.slice(3);
  return `${negative ? '-' : ''}${digits}${rest ? `.${rest}` : ''}`;
}

const nulled = (field: string, share: number) => (id: number, text: string) =>
  (id * 2654435761) % 1000 < share * 1000 ? text.replace(new RegExp(`"${field}":[^,}]+`), `"${field}":null`) : text;

describe('the built-in checks', () => {
  it('stay silent over 30 nights of ordinary 1% churn', async () => {
    await nights(30);
    const checks = await fx.db.rows<{ runs: string; checks: string; failed: string; compared: string }>(
      `SELECT count(DISTINCT run_id) AS runs, count(*) AS checks, count(*) FILTER (WHERE NOT passed) AS failed,
              count(*) FILTER (WHERE expected IS NOT NULL) AS compared
       FROM sync_run_checks`,
    );
    // Per run: volume, a total per numeric field, nulls per numeric and date field.
    expect(checks[0]).toMatchObject({ runs: '30', checks: String(30 * 12), failed: '0' });
    // Compared with the runs before from the second night on (the volume from the fourth).
    expect(Number(checks[0]!.compared)).toBe(29 * 11 + 27);
  }, 120_000);

  it('volume: a listing with 30% fewer records warns, commits, exits 0 and notifies once', async () => {
    await nights(5);
    for (const id of [...versions.keys()].filter((id) => id % 10 < 3)) versions.delete(id);
    const kept = versions.size; // about 700
    serve();
    const r = await run([], { SYNC_MAX_DELETE_RATIO: '0.5' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.run).toMatchObject({ status: 'succeeded', received: kept });
    const failed = await failedChecks(r.run!.id);
    expect(failed.map((c) => [c.check_name, c.severity, c.observed])).toEqual([['volume', 'warn', String(kept)]]);
    expect(failed[0]!.expected).toBe('1000 ± 20% (median of the last 5 successful runs)');
    expect(receiver.posts).toHaveLength(1);
    expect(receiver.posts[0]!.body).toMatchObject({ event: 'checks', status: 'succeeded' });
    expect(String(receiver.posts[0]!.body.text)).toContain(
      `check volume (warn): observed ${kept}, expected 1000 ± 20% (median of the last 5 successful runs)`,
    );
    const summary = await runCli(['status', '--run', String(r.run!.id)], fx.env);
    expect(summary.stdout).toMatch(
      /^checks\s+\[\{"check_name":"volume","field":null,"severity":"warn","passed":false/m,
    );
    const status = await runCli(['status'], fx.env);
    expect(status.stdout).toMatch(new RegExp(`^${String(r.run!.id)}\\s.*\\s1 warn\\s*$`, 'm'));
    const json = JSON.parse((await runCli(['status', '--json', '--limit', '1'], fx.env)).stdout) as Array<{
      checks: Array<{ check_name: string; passed: boolean }>;
      profile: Array<{ field: string; row_count: string }>;
    }>;
    expect(json[0]!.checks[0]).toMatchObject({ check_name: 'volume', passed: false });
    expect(json[0]!.profile.find((p) => p.field === 'id')).toMatchObject({ row_count: String(kept) });
  }, 120_000);

  it('total: every volume x1000 warns on each numeric field, in one notification', async () => {
    await nights(2);
    serve((_, text) =>
      text.replace(/"(inventory_\w+|vintage_\w+)":([^,}]+)/g, (_, f: string, v: string) => `"${f}":${times1000(v)}`),
    );
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    const failed = await failedChecks(r.run!.id);
    expect(failed.map((c) => [c.check_name, c.severity])).toEqual(DECIMALS.map((f) => [`total:${f}`, 'warn']));
    const profiles = await fx.db.rows<{ field: string; now: string; before: string }>(
      `SELECT p.field, p.total::text AS now, b.total::text AS before FROM sync_run_profiles p
       JOIN sync_run_profiles b ON b.field = p.field AND b.run_id = $1 - 1 WHERE p.run_id = $1 AND p.total IS NOT NULL`,
      [r.run!.id],
    );
    for (const p of profiles) {
      const c = failed.find((f) => f.check_name === `total:${p.field}`)!;
      expect(c.observed).toBe(p.now);
      expect(c.expected).toBe(`${p.before} ± 50% (run ${Number(r.run!.id) - 1})`);
      expect(c.message).toContain('is +99900% from');
    }
    expect(receiver.posts).toHaveLength(1);
    const text = String(receiver.posts[0]!.body.text);
    for (const f of DECIMALS) expect(text).toContain(`check total:${f} (warn): observed `);
  }, 120_000);

  it('nulls: a field almost never null, now null in 60% of the records, refuses the run until --accept-check', async () => {
    await nights(2);
    const before = await snapshot();
    serve(nulled('inventory_bulk_wine', 0.6));
    const refused = await run();
    expect(refused.code).toBe(1);
    expect(refused.run).toMatchObject({ status: 'failed', inserted: 0, updated: 0 });
    const failed = await failedChecks(refused.run!.id);
    // Its total falls with it: a warning beside the error.
    expect(failed.map((c) => [c.check_name, c.severity])).toEqual([
      ['nulls:inventory_bulk_wine', 'error'],
      ['total:inventory_bulk_wine', 'warn'],
    ]);
    expect(failed[0]!.observed).toMatch(/^6\d(\.\d)?% \(6\d\d of 1000 live rows\)$/);
    const error = String(refused.run!.error);
    expect(error).toContain('check nulls:inventory_bulk_wine failed (error): nulls:inventory_bulk_wine: null in 6');
    expect(error).toContain('(a rise of at most 10 points allowed); it was null in at most 5% of them');
    expect(error).toContain('run again with --accept-check nulls:inventory_bulk_wine');
    expect(refused.stderr).toContain(error);
    // Nothing committed; the refused run's profile and checks are stored all the same.
    expect(await snapshot()).toEqual(before);
    const profile = await fx.db.rows<{ null_count: string }>(
      "SELECT null_count::text FROM sync_run_profiles WHERE run_id = $1 AND field = 'inventory_bulk_wine'",
      [refused.run!.id],
    );
    expect(Number(profile[0]!.null_count)).toBeGreaterThan(550);
    expect(receiver.posts.map((p) => p.body.event)).toEqual(['failed']);
    expect(String(receiver.posts[0]!.body.text)).toContain('check nulls:inventory_bulk_wine failed (error)');

    const again = await run();
    expect(again.code).toBe(1);
    const accepted = await run(['--accept-check', 'nulls:inventory_bulk_wine']);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.run).toMatchObject({ status: 'succeeded', accepted_checks: ['nulls:inventory_bulk_wine'] });
    const loaded = await fx.db.rows<{ n: string }>(
      'SELECT count(*)::text AS n FROM bulk_wine_reconciliation WHERE deleted_at IS NULL AND inventory_bulk_wine IS NULL',
    );
    expect(Number(loaded[0]!.n)).toBeGreaterThan(550);
  }, 120_000);

  it('the daemon does not retry a run a check refused: one attempt, one notification', async () => {
    await nights(2);
    serve(nulled('inventory_bulk_wine', 0.6));
    const d = startCli(
      ['schedule', '--run-now'],
      fx.envWith({
        SYNC_SCHEDULE: '0 0 1 1 *',
        SYNC_RUN_RETRY_DELAYS: '1s',
        SYNC_NOTIFY_URL: receiver.url,
        SYNC_HEALTH_FILE: `${fx.dir}/health`,
      }),
    );
    daemons.push(d);
    await d.waitForLog(/not retried \(needs-a-person\)/);
    await new Promise((r) => setTimeout(r, 2_500)); // past the retry delay
    d.kill('SIGTERM');
    expect((await d.result).code).toBe(0);
    const runs = await fx.db.rows<{ trigger: string; status: string }>(
      "SELECT trigger, status FROM sync_runs WHERE trigger <> 'manual' ORDER BY id",
    );
    expect(runs).toEqual([{ trigger: 'run-now', status: 'failed' }]);
    expect(receiver.posts).toHaveLength(1);
    expect(receiver.posts[0]!.body).toMatchObject({ event: 'failed', retry_at: null });
  }, 120_000);
});

describe('SYNC_CHECKS_FILE', () => {
  it('an error-level rule on values refuses the run; thresholds and off apply', async () => {
    const file = join(fx.dir, 'checks.yaml');
    await writeFile(
      file,
      [
        'checks:',
        '  - {field: inventory_bulk_wine, min: 0, severity: error}',
        '  - {field: first_sale, max: today, not_null: false, severity: warn}',
        '  - {volume: false}',
        '  - {total: inventory_sales, max_change_percent: 0.001, severity: warn}',
        '',
      ].join('\n'),
    );
    await nights(2);
    const before = await snapshot();
    versions.set(3, 1); // a changed inventory_sales: the 0.001% total rule trips
    serve((id, text) => (id === 17 ? text.replace(/"inventory_bulk_wine":[^,]+/, '"inventory_bulk_wine":-0.5') : text));
    const r = await run([], { SYNC_CHECKS_FILE: file });
    expect(r.code).toBe(1);
    expect(String(r.run!.error)).toContain(
      'check min:inventory_bulk_wine failed (error): min:inventory_bulk_wine: the smallest live value is -0.5, expected >= 0',
    );
    expect(await snapshot()).toEqual(before);
    const names = await fx.db.rows<{ check_name: string; passed: boolean }>(
      'SELECT check_name, passed FROM sync_run_checks WHERE run_id = $1 ORDER BY check_name',
      [r.run!.id],
    );
    expect(names.map((c) => c.check_name)).not.toContain('volume');
    expect(names.filter((c) => !c.passed).map((c) => c.check_name)).toEqual([
      'min:inventory_bulk_wine',
      'total:inventory_sales',
    ]);
    expect(names.find((c) => c.check_name === 'max:first_sale')).toMatchObject({ passed: true });
  }, 120_000);

  it('a bad file is a configuration error naming the file, the line and the rule (exit 2, no run recorded)', async () => {
    const file = join(fx.dir, 'bad.yaml');
    await writeFile(
      file,
      'checks:\n  - {volume: true, max_change_percent: 20, severity: warn}\n  - {total: inventory_sales, max_change_percent: lots, severity: warn}\n',
    );
    const bad = await run([], { SYNC_CHECKS_FILE: file });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      `SYNC_CHECKS_FILE: ${file} line 3, rule {total: inventory_sales, max_change_percent: lots, severity: warn}` +
        `: max_change_percent must be a number of 0 or more, not "lots"`,
    );
    await writeFile(file, 'checks:\n  - {nulls: inventory_bulk, max_increase_points: 5, severity: warn}\n');
    const unknown = await run([], { SYNC_CHECKS_FILE: file });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      `SYNC_CHECKS_FILE: ${file} line 2, rule {nulls: inventory_bulk, max_increase_points: 5, severity: warn}` +
        ` (nulls:inventory_bulk): unknown field "inventory_bulk"`,
    );
    await writeFile(file, 'checks:\n  - {volume: true, max_change_percent: 20, severity: warn\n');
    const yaml = await run([], { SYNC_CHECKS_FILE: file });
    expect(yaml.code).toBe(2);
    expect(yaml.stderr).toMatch(new RegExp(`SYNC_CHECKS_FILE: ${file} line \\d: not valid YAML`));
    expect(await fx.db.rows('SELECT id FROM sync_runs')).toEqual([]);
  }, 60_000);
});
