import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { ROOT, runCli, startCli } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';

const PROMTOOL = 'promtool';
const PUSHGATEWAY = 'prometheus-pushgateway';

const fx = useSyncFixture('metrics', { simulator: { records: 30 }, each: true });

/** The value of the sample `name{labels}` in a text exposition (labels given in the order they appear). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describeWith('promtool (Debian package prometheus)', runs(PROMTOOL), 'Prometheus metrics and alert rules', () => {
  it('the alert rules pass their promtool unit tests', () => {
    const r = spawnSync(PROMTOOL, ['test', 'rules', 'alerts.test.yml'], {
      cwd: join(ROOT, 'deploy', 'prometheus'),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
  });

  it('the daemon serves /metrics (seeded from sync_runs, valid for promtool) and /healthz', async () => {
    const first = await runCli(['run', '--json'], fx.env);
    expect(first.code, first.stderr).toBe(0);
    const lastSuccess = Date.parse(JSON.parse(first.stdout).finished_at) / 1000;

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    fx.sim.setFault('slow', { delayMs: 5000, times: 1 });
    const daemon = startCli(['schedule', '--run-now'], {
      ...fx.env,
      SYNC_METRICS_PORT: String(port),
      SYNC_HEALTH_FILE: join(fx.dir, 'health'),
    });
    try {
      await daemon.waitForLog(/serving metrics/);
      const scrape = async () => (await fetch(`${base}/metrics`)).text();
      // While the slow listing streams, the run shows as running.
      await until('wine_recon_sync_running 1', async () =>
        sample(await scrape(), 'wine_recon_sync_running') === 1 ? true : undefined,
      );
      const during = await scrape();
      expect(sample(during, 'wine_recon_sync_last_success_timestamp_seconds')).toBeCloseTo(lastSuccess, 2);
      expect(sample(during, 'wine_recon_sync_runs_total{status="succeeded",trigger="manual"}')).toBe(1);
      expect(sample(during, 'wine_recon_sync_last_run_records{kind="inserted"}')).toBe(30);

      const text = await until('the scheduled run to finish', async () => {
        const t = await scrape();
        return sample(t, 'wine_recon_sync_runs_total{status="succeeded",trigger="run-now"}') === 1 ? t : undefined;
      });
      expect(sample(text, 'wine_recon_sync_running')).toBe(0);
      expect(sample(text, 'wine_recon_sync_retry_pending')).toBe(0);
      expect(sample(text, 'wine_recon_sync_next_attempt_timestamp_seconds')).toBe(0);
      expect(sample(text, 'wine_recon_sync_runs_total{status="failed",trigger="schedule"}')).toBe(0);
      expect(sample(text, 'wine_recon_sync_last_run_records{kind="received"}')).toBe(30);
      expect(sample(text, 'wine_recon_sync_last_run_records{kind="unchanged"}')).toBe(30);
      expect(sample(text, 'wine_recon_sync_last_run_records{kind="inserted"}')).toBe(0);
      expect(sample(text, 'wine_recon_sync_last_success_timestamp_seconds')).toBeGreaterThan(lastSuccess);
      expect(sample(text, 'wine_recon_sync_last_run_timestamp_seconds{status="succeeded"}')).toBe(
        sample(text, 'wine_recon_sync_last_success_timestamp_seconds'),
      );
      expect(sample(text, 'wine_recon_sync_run_duration_seconds_count')).toBe(1);
      // the listing stalled for 5 s
      expect(sample(text, 'wine_recon_sync_run_duration_seconds_bucket{le="1"}')).toBe(0);
      expect(text).toMatch(/^process_cpu_seconds_total /m);
      expect(text).not.toMatch(/http|password|127\.0\.0\.1/i);

      const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 60_000 });
      expect(check.status, check.stdout + check.stderr).toBe(0);

      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok' });
      expect((await fetch(`${base}/nothing`)).status).toBe(404);
    } finally {
      daemon.kill('SIGTERM');
    }
    expect((await daemon.result).code).toBe(0);
  });
});

describeWith('prometheus-pushgateway (Debian package)', runs(PUSHGATEWAY), 'Pushgateway', () => {
  let gateway: ChildProcess;
  let gatewayUrl: string;

  beforeAll(async () => {
    const port = await freePort();
    gatewayUrl = `http://127.0.0.1:${port}`;
    // No --persistence.file: the pushed metrics live in memory only.
    gateway = spawn(PUSHGATEWAY, [`--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
    await until('the Pushgateway to be ready', async () =>
      (await fetch(`${gatewayUrl}/-/ready`)).ok ? true : undefined,
    );
  });
  afterAll(() => {
    gateway?.kill('SIGKILL');
  });

  it('run and replay push their metrics under job wine_recon_sync', async () => {
    const ok = await runCli(['run', '--json'], { ...fx.env, SYNC_PUSHGATEWAY_URL: gatewayUrl });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toContain('metrics pushed');
    const finished = Date.parse(JSON.parse(ok.stdout).finished_at) / 1000;
    let text = await (await fetch(`${gatewayUrl}/metrics`)).text();
    expect(sample(text, 'wine_recon_sync_last_run_records{instance="",job="wine_recon_sync",kind="inserted"}')).toBe(
      30,
    );
    expect(
      sample(text, 'wine_recon_sync_last_success_timestamp_seconds{instance="",job="wine_recon_sync"}'),
    ).toBeCloseTo(finished, 2);
    expect(
      sample(text, 'wine_recon_sync_runs_total{instance="",job="wine_recon_sync",status="succeeded",trigger="manual"}'),
    ).toBe(1);

    fx.sim.setFault('html');
    const failed = await runCli(['run'], { ...fx.env, SYNC_PUSHGATEWAY_URL: gatewayUrl });
    expect(failed.code).toBe(1);
    const replay = await runCli(['replay', '--run', '1'], { ...fx.env, SYNC_PUSHGATEWAY_URL: gatewayUrl });
    expect(replay.code, replay.stderr).toBe(0);
    text = await (await fetch(`${gatewayUrl}/metrics`)).text();
    // Every push carries the whole history read from sync_runs, so the group replaced by each push stays complete.
    expect(
      sample(text, 'wine_recon_sync_runs_total{instance="",job="wine_recon_sync",status="failed",trigger="manual"}'),
    ).toBe(1);
    expect(
      sample(text, 'wine_recon_sync_runs_total{instance="",job="wine_recon_sync",status="succeeded",trigger="manual"}'),
    ).toBe(1);
    expect(
      sample(text, 'wine_recon_sync_runs_total{instance="",job="wine_recon_sync",status="succeeded",trigger="replay"}'),
    ).toBe(1);
    expect(sample(text, 'wine_recon_sync_last_run_records{instance="",job="wine_recon_sync",kind="unchanged"}')).toBe(
      30,
    );
    expect(
      sample(text, 'wine_recon_sync_last_run_timestamp_seconds{instance="",job="wine_recon_sync",status="failed"}'),
    ).toBeGreaterThan(finished);
  });
});

it('a Pushgateway that is down is logged without its credentials and changes nothing', async () => {
  const url = `http://pusher:push-secret-99@127.0.0.1:${await freePort()}`;
  const r = await runCli(['run', '--json'], { ...fx.env, SYNC_PUSHGATEWAY_URL: url });
  expect(r.code, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout).status).toBe('succeeded');
  expect(r.stderr).toContain('cannot push the metrics to the Pushgateway; the run is unaffected');
  expect(r.stderr).not.toContain('push-secret-99');
});
