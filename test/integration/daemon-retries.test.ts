/**
 * The daemon as a child process, with retry delays of seconds: a failure whose cause may pass is
 * tried again (rows linked by retry_of), one that needs a person is not, a retry never runs once
 * the next slot has come, and SIGTERM during the wait stops the daemon at once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli, type CliProcess } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const fx = useSyncFixture('daemon_retries', { simulator: { records: 20 }, each: true });
let receiver: Receiver;
const daemons: CliProcess[] = [];

beforeEach(async () => {
  receiver = await startReceiver();
});
afterEach(async () => {
  for (const d of daemons.splice(0)) {
    d.kill('SIGKILL');
    await d.result;
  }
  await receiver.close();
});

/** Once a year, far from now: only --run-now and the retries run. */
const NEVER_SOON = '0 0 1 1 *';

function daemon(args: string[], extra: Record<string, string>): CliProcess {
  const d = startCli(
    ['schedule', ...args],
    fx.envWith({
      SYNC_CATCH_UP: 'true',
      WINE_API_RETRIES: '1',
      SYNC_NOTIFY_URL: receiver.url,
      SYNC_HEALTH_FILE: `${fx.dir}/health`,
      ...extra,
    }),
  );
  daemons.push(d);
  return d;
}

async function stop(d: CliProcess): Promise<number | null> {
  d.kill('SIGTERM');
  return (await d.result).code;
}

interface Row {
  id: number;
  trigger: string;
  attempt: number;
  retry_of: number | null;
  status: string;
  retry_planned: boolean;
}

const runs = () =>
  fx.db.rows<Row>(
    'SELECT id::int, trigger, attempt, retry_of::int, status, retry_at IS NOT NULL AS retry_planned FROM sync_runs ORDER BY id',
  );

describe('run-level retries', () => {
  it('tries an upstream that failed twice again, linking the attempts, and loads the data without paging', async () => {
    fx.sim.setFault('server-error', { status: 503, times: 2 });
    const d = daemon(['--run-now'], { SYNC_SCHEDULE: NEVER_SOON, SYNC_RUN_RETRY_DELAYS: '1s,1s,1s' });
    await d.waitForLog(/"status":"succeeded".*"msg":"sync finished"/, 60_000);
    await d.waitForLog(/next sync scheduled/);
    expect(await stop(d)).toBe(0);
    expect(await runs()).toEqual([
      { id: 1, trigger: 'run-now', attempt: 1, retry_of: null, status: 'failed', retry_planned: true },
      { id: 2, trigger: 'retry', attempt: 2, retry_of: 1, status: 'failed', retry_planned: true },
      { id: 3, trigger: 'retry', attempt: 3, retry_of: 1, status: 'succeeded', retry_planned: false },
    ]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 20 }]);
    // BI users and `status` see the chain.
    expect(
      await fx.db.rows(
        `SELECT last_run_trigger, last_run_attempt, last_run_retry_of::int FROM "${fx.db.schema}_bi".sync_freshness`,
      ),
    ).toEqual([{ last_run_trigger: 'retry', last_run_attempt: 3, last_run_retry_of: 1 }]);
    const status = await runCli(['status'], { ...fx.env, SYNC_RUN_RETRY_DELAYS: '1s,1s,1s' });
    expect(status.stdout).toMatch(/^3\s+retry\s+3 of 4 \(retry of 1\)\s+succeeded\s/m);
    expect(status.stdout).toMatch(/^1\s+run-now\s+1 of 4\s+failed, retry \d{4}-\d\d-\d\d [\d:]+Z\s/m);
    // The failed attempts were retried, and the success is no recovery from a failure anyone was told of.
    expect(receiver.posts.length).toBeLessThanOrEqual(1);
    expect(receiver.posts.map((p) => p.body.event)).not.toContain('failed');
  });

  it('counts attempts out of 1 + SYNC_RUN_RETRY_DELAYS alike in status, /healthz and the page of serve', async () => {
    fx.sim.setFault('server-error', { status: 503, times: 3 });
    const delays = { SYNC_RUN_RETRY_DELAYS: '1s,1s' };
    const port = await freePort();
    const d = daemon(['--run-now'], { SYNC_SCHEDULE: NEVER_SOON, ...delays, SYNC_METRICS_PORT: String(port) });
    await d.waitForLog(/not retried \(retries-spent\)/, 60_000);
    // The health is written just after that line: read it until it names the third attempt.
    let detail = '';
    for (const deadline = Date.now() + 10_000; !detail.includes('last run 3') && Date.now() < deadline;) {
      detail = ((await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { detail: string }).detail;
      if (!detail.includes('last run 3')) await new Promise((r) => setTimeout(r, 100));
    }
    expect(detail).toContain('last run 3 failed (attempt 3 of 3)');
    expect(await stop(d)).toBe(0);
    expect((await runs()).map((r) => [r.id, r.attempt, r.status])).toEqual([
      [1, 1, 'failed'],
      [2, 2, 'failed'],
      [3, 3, 'failed'],
    ]);

    const status = await runCli(['status'], { ...fx.env, ...delays });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^3\s+retry\s+3 of 3 \(retry of 1\)\s+failed\s/m);
    expect(status.stdout).toMatch(/^2\s+retry\s+2 of 3 \(retry of 1\)\s+failed, retry \d{4}-/m);
    expect(status.stdout).toMatch(/^1\s+run-now\s+1 of 3\s+failed, retry \d{4}-/m);

    const serve = startCli(['serve', '--port', '0'], { ...fx.env, ...delays });
    daemons.push(serve);
    const base = JSON.parse(await serve.waitForLog(/serving the status page/)).page as string;
    const page = await (await fetch(base)).text();
    expect(page).toContain('Failing: the last run (3) failed (attempt 3 of 3)');
    expect(page).toContain('attempt 3 of 3, retry of <a href="/runs/1">1</a>');
  });

  it('does not retry a refused login: one attempt, one notification naming it', async () => {
    fx.sim.setFault('login-error', { status: 401 });
    const d = daemon(['--run-now'], { SYNC_SCHEDULE: NEVER_SOON, SYNC_RUN_RETRY_DELAYS: '1s' });
    await d.waitForLog(/not retried \(needs-a-person\)/);
    await d.waitForLog(/next sync scheduled/);
    await new Promise((r) => setTimeout(r, 2_500)); // past the retry delay
    expect(await stop(d)).toBe(0);
    expect(await runs()).toEqual([
      { id: 1, trigger: 'run-now', attempt: 1, retry_of: null, status: 'failed', retry_planned: false },
    ]);
    expect(receiver.posts).toHaveLength(1);
    expect(receiver.posts[0]!.body).toMatchObject({ event: 'failed', attempt: 1, attempts: 2, retry_at: null });
    expect(String(receiver.posts[0]!.body.text)).toContain('attempt 1 of 2, not retried: this failure needs a person');
  });

  it('does not retry a run the mass-delete guard refused', async () => {
    const first = await runCli(['run'], fx.env);
    expect(first.code, first.stderr).toBe(0);
    fx.sim.setFault('empty');
    const d = daemon(['--run-now'], { SYNC_SCHEDULE: NEVER_SOON, SYNC_RUN_RETRY_DELAYS: '1s' });
    await d.waitForLog(/not retried \(needs-a-person\)/);
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await stop(d)).toBe(0);
    expect((await runs()).map((r) => [r.trigger, r.status, r.attempt])).toEqual([
      ['manual', 'succeeded', 1],
      ['run-now', 'failed', 1],
    ]);
  });

  it('leaves a failure to the next slot when the retry would come after it', async () => {
    fx.sim.setFault('server-error', { status: 503, times: 1 });
    // A slot every 3 s, a retry after a minute: the slot's run takes over and the chain ends.
    const d = daemon([], { SYNC_SCHEDULE: '*/3 * * * * *', SYNC_RUN_RETRY_DELAYS: '1m', SYNC_CATCH_UP: 'false' });
    await d.waitForLog(/not retried \(next-slot\)/, 20_000);
    await d.waitForLog(/"status":"succeeded".*"msg":"sync finished"/, 20_000);
    expect(await stop(d)).toBe(0);
    const rows = await runs();
    expect(rows.slice(0, 2)).toEqual([
      { id: 1, trigger: 'schedule', attempt: 1, retry_of: null, status: 'failed', retry_planned: false },
      { id: 2, trigger: 'schedule', attempt: 1, retry_of: null, status: 'succeeded', retry_planned: false },
    ]);
    expect(rows.filter((r) => r.trigger === 'retry')).toEqual([]);
  });

  it('stops at once on SIGTERM during the wait for a retry; the next start catches the chain up', async () => {
    fx.sim.setFault('server-error', { status: 503 });
    // The slot is a moment ago, the next a year away: the wait is for the retry alone.
    const slot = new Date(Date.now() - 1_000);
    const schedule =
      `${slot.getUTCSeconds()} ${slot.getUTCMinutes()} ${slot.getUTCHours()} ` +
      `${slot.getUTCDate()} ${slot.getUTCMonth() + 1} *`;
    const port = await freePort();
    const d = daemon(['--run-now'], {
      SYNC_SCHEDULE: schedule,
      SYNC_RUN_RETRY_DELAYS: '1h',
      SYNC_METRICS_PORT: String(port),
    });
    await d.waitForLog(/it will be tried again/);
    await d.waitForLog(/next sync scheduled/);
    // Visible: the health says which attempt failed and when the next comes; the metrics hold the alert.
    const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: `${fx.dir}/health` });
    expect(check.stdout).toMatch(
      /^healthy: idle, next run \S+, last run 1 failed \(attempt 1 of 2\), retrying at \d{4}-\S+Z, last successful load none\n$/,
    );
    const healthz = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { detail: string };
    expect(healthz.detail).toBe(check.stdout.slice('healthy: '.length).trim());
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^wine_recon_sync_retry_pending 1$/m);
    expect(metrics).toMatch(/^wine_recon_sync_next_attempt_timestamp_seconds 1\d{9}(\.\d+)?$/m);
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(page).toMatch(/Failing: the last run \(1\) failed \(attempt 1 of 2\), retrying at \d{4}-/);
    const asked = Date.now();
    expect(await stop(d)).toBe(0);
    // The contract is a prompt stop: well within the daemon's own 10 s forced-exit limit.
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(await runs()).toEqual([
      { id: 1, trigger: 'run-now', attempt: 1, retry_of: null, status: 'failed', retry_planned: true },
    ]);
    expect(receiver.posts).toEqual([]);

    fx.sim.setFault(null);
    const again = daemon([], { SYNC_SCHEDULE: schedule, SYNC_RUN_RETRY_DELAYS: '1h' });
    await again.waitForLog(/next sync scheduled/);
    expect(await stop(again)).toBe(0);
    expect((await runs())[1]).toEqual({
      id: 2,
      trigger: 'catch-up',
      attempt: 2,
      retry_of: 1,
      status: 'succeeded',
      retry_planned: false,
    });
  });
});

/** A schedule firing once a year, at `at` (UTC, whole seconds). */
function yearlyAt(at: Date): string {
  return `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} *`;
}

describe('catch-up at start', () => {
  it('makes up a slot missed while the daemon was stopped, once, however often it is restarted after', async () => {
    const slot = new Date(Math.ceil((Date.now() + 4_000) / 1000) * 1000);
    const env = { SYNC_SCHEDULE: yearlyAt(slot), SYNC_RUN_RETRY_DELAYS: '1s' };
    // Up before the slot (without catching up last year's), stopped before it comes.
    const before = daemon([], { ...env, SYNC_CATCH_UP: 'false' });
    await before.waitForLog(/daemon started/);
    expect(await stop(before)).toBe(0);
    await new Promise((r) => setTimeout(r, Math.max(0, slot.getTime() - Date.now() + 500)));
    expect(await runs()).toEqual([]);

    const first = daemon([], env);
    await first.waitForLog(/catching up the last scheduled run/);
    await first.waitForLog(/next sync scheduled/);
    expect(await stop(first)).toBe(0);
    for (let restart = 0; restart < 2; restart++) {
      const again = daemon([], env);
      await again.waitForLog(/no catch-up needed/);
      expect(await stop(again)).toBe(0);
    }
    expect(await runs()).toEqual([
      { id: 1, trigger: 'catch-up', attempt: 1, retry_of: null, status: 'succeeded', retry_planned: false },
    ]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 20 }]);
  });

  it('does not catch up twice after a catch-up that failed for good', async () => {
    fx.sim.setFault('login-error', { status: 401 });
    const env = { SYNC_SCHEDULE: yearlyAt(new Date(Date.now() - 1_000)), SYNC_RUN_RETRY_DELAYS: '1s' };
    const first = daemon([], env);
    await first.waitForLog(/next sync scheduled/);
    expect(await stop(first)).toBe(0);
    const again = daemon([], env);
    await again.waitForLog(/no catch-up needed/);
    expect(await stop(again)).toBe(0);
    expect(await runs()).toEqual([
      { id: 1, trigger: 'catch-up', attempt: 1, retry_of: null, status: 'failed', retry_planned: false },
    ]);
  });

  it('is off with SYNC_CATCH_UP=false', async () => {
    const d = daemon([], { SYNC_SCHEDULE: yearlyAt(new Date(Date.now() - 1_000)), SYNC_CATCH_UP: 'false' });
    await d.waitForLog(/daemon started/);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await stop(d)).toBe(0);
    expect(await runs()).toEqual([]);
  });
});
