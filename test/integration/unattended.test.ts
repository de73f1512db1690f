import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, runCli, startCli } from '../support/harness.js';

const fx = useSyncFixture('ops', { simulator: { records: 50 }, each: true });

const runJson = async (extraEnv: Record<string, string> = {}) => {
  const r = await runCli(['run', '--json'], { ...fx.env, ...extraEnv });
  return { ...r, run: r.stdout ? JSON.parse(r.stdout) : undefined };
};

describe('retries', () => {
  it('heals a 503 burst with backoff, logging each retry with its cause', async () => {
    fx.sim.setFault('server-error', { status: 503, times: 2 });
    const r = await runJson();
    expect(r.code, r.stderr).toBe(0);
    expect(r.run).toMatchObject({ status: 'succeeded', inserted: 50 });
    expect(fx.sim.stats.listings).toBe(3);
    expect(fx.sim.stats.logins).toBe(1);
    expect(r.stderr.match(/upstream request failed; retrying/g)).toHaveLength(2);
    expect(r.stderr).toContain('HTTP 503');
  });

  it('waits for Retry-After on a 429', async () => {
    fx.sim.setFault('rate-limit', { retryAfterSeconds: 1, times: 1 });
    const started = Date.now();
    const r = await runJson();
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(r.stderr).toMatch(/"delayMs":1000/);
  });

  it('retries a 500 on login', async () => {
    fx.sim.setFault('login-error', { status: 500, times: 1 });
    const r = await runJson();
    expect(r.code, r.stderr).toBe(0);
    expect(fx.sim.stats.logins).toBe(2);
  });

  it('retries a body cut off mid-stream', async () => {
    fx.sim.setFault('truncate', { times: 1 });
    const r = await runJson();
    expect(r.code, r.stderr).toBe(0);
    expect(r.run).toMatchObject({ received: 50, inserted: 50 });
    expect(fx.sim.stats.listings).toBe(2);
  });

  it('gives up after WINE_API_RETRIES attempts and says so', async () => {
    fx.sim.setFault('server-error', { status: 502 });
    const r = await runJson({ WINE_API_RETRIES: '3' });
    expect(r.code).toBe(1);
    expect(r.run.error).toMatch(/HTTP 502.*gave up after 3 attempts/);
    expect(fx.sim.stats.listings).toBe(3);
  });

  it('fails fast on an HTML page instead of JSON, with status, type and an excerpt', async () => {
    fx.sim.setFault('html');
    const r = await runJson();
    expect(r.code).toBe(1);
    expect(r.run.error).toMatch(/listing is text\/html.*not JSON \(status 200\): first 200 chars: "<!DOCTYPE html>/i);
    expect(fx.sim.stats.listings).toBe(1);
  });

  it('makes exactly one login attempt with a wrong password, and never logs the password', async () => {
    const r = await runJson({ WINE_API_PASSWORD: 'wrong-password-123' });
    expect(r.code).toBe(1);
    expect(r.run.error).toContain('login refused (401): check WINE_API_EMAIL / WINE_API_PASSWORD');
    expect(fx.sim.stats.logins).toBe(1);
    expect(r.stderr + r.stdout).not.toContain('wrong-password-123');
  });
});

describe('token lifecycle', () => {
  it('reuses the token across runs and logs in again once after a 401 on the listing', async () => {
    const ctx = inProcess(fx.env);
    expect((await ctx.run()).run.status).toBe('succeeded');
    expect((await ctx.run()).run.status).toBe('succeeded');
    expect(fx.sim.stats.logins).toBe(1);
    fx.sim.revokeTokens();
    const third = await ctx.run();
    expect(third.run.status).toBe('succeeded');
    expect(fx.sim.stats.logins).toBe(2);
    expect(ctx.logs.some((l) => l.includes('listing answered 401; logging in again once'))).toBe(true);
    expect(ctx.logs.join('\n')).not.toContain(fx.sim.password);
  });

  it('renews a token that is about to expire instead of using it', async () => {
    await fx.restartSimulator({ records: 5, tokenTtlSeconds: 30 });
    const ctx = inProcess(fx.env);
    await ctx.run();
    await ctx.run();
    // Tokens valid for 30 s are inside the one-minute renewal margin: every listing request
    // (one per run, more if a retry happened on a loaded machine) comes after a fresh login.
    expect(fx.sim.stats.logins).toBeGreaterThanOrEqual(2);
    expect(fx.sim.stats.logins).toBe(fx.sim.stats.listings);
  });
});

describe('transport safety and secrets', () => {
  it('refuses http:// to a non-loopback host with exit 2 unless WINE_API_ALLOW_INSECURE_HTTP=true', async () => {
    const r = await runCli(['run'], { ...fx.env, WINE_API_BASE_URL: 'http://wine.example.com' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('WINE_API_BASE_URL: http:// to wine.example.com would send credentials in clear text');
    expect(r.stderr).not.toContain(fx.sim.password);
  });

  it('says which setting to check when the database cannot be reached, without its password', async () => {
    const r = await runCli(['run'], { ...fx.env, DATABASE_URL: 'postgres://sync:db-secret-pw@127.0.0.1:1/wine' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot use the database at DATABASE_URL (nothing listens there)');
    expect(r.stderr).not.toContain('db-secret-pw');
  });

  it('logs in at WINE_API_LOGIN_URL when it differs from the base URL', async () => {
    const base = fx.sim.url.replace('127.0.0.1', 'localhost');
    const r = await runJson({ WINE_API_BASE_URL: base, WINE_API_LOGIN_URL: `${fx.sim.url}/api/login` });
    expect(r.code, r.stderr).toBe(0);
    expect(fx.sim.stats.logins).toBe(1);
  });

  it('never writes the password or a token, at trace level, through retries, 401s and errors', async () => {
    fx.sim.setFault('server-error', { status: 500, times: 1 });
    const ok = await runCli(['run'], { ...fx.env, LOG_LEVEL: 'trace' });
    expect(ok.code, ok.stderr).toBe(0);
    fx.sim.setFault('expire-token', { times: 1 });
    const expired = await runCli(['run'], { ...fx.env, LOG_LEVEL: 'trace' });
    const bad = await runCli(['run'], { ...fx.env, LOG_LEVEL: 'trace', WINE_API_PASSWORD: 'not-the-password' });
    expect(bad.code).toBe(1);
    const everything = [ok, expired, bad].map((r) => r.stdout + r.stderr).join('\n');
    expect(everything).toMatch(/"level":10.*"msg":"login request"/); // the request, body included, was logged
    expect(everything).toMatch(/"authorization":"\[Redacted\]"/);
    expect(everything).not.toContain(fx.sim.password);
    expect(everything).not.toContain('not-the-password');
    expect(everything).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/); // no JWT
    const rows = JSON.stringify(await fx.db.rows('SELECT * FROM sync_runs'));
    expect(rows).not.toContain(fx.sim.password);
    expect(rows).not.toMatch(/eyJ[\w-]+\.[\w-]+/);
  });
});

describe('one run at a time', () => {
  it('exits 3 when another run holds the lock, and marks a dead run abandoned', async () => {
    const holder = new pg.Client(fx.db.url);
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock(hashtextextended('wine-recon-sync:run:' || $1, 0))", [fx.db.schema]);
      await fx.db.pool.query(
        "INSERT INTO sync_runs (trigger, status, app_version) VALUES ('manual', 'running', 'test')",
      );
      const r = await runCli(['run'], fx.env);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('another sync holds the lock');
      expect(await fx.db.rows('SELECT status FROM sync_runs')).toEqual([{ status: 'running' }]);
    } finally {
      await holder.end();
    }
    const next = await runJson();
    expect(next.code).toBe(0);
    expect(await fx.db.rows('SELECT id::int, status FROM sync_runs ORDER BY id')).toEqual([
      { id: 1, status: 'abandoned' },
      { id: 2, status: 'succeeded' },
    ]);
  });
});

describe('daemon', () => {
  it('runs on a seconds-level schedule with one login, never overlapping, and stops cleanly on SIGTERM', async () => {
    const health = `${fx.dir}/health.json`;
    const daemon = startCli(['schedule', '--run-now'], {
      ...fx.env,
      SYNC_SCHEDULE: '*/2 * * * * *',
      SYNC_HEALTH_FILE: health,
    });
    await daemon.waitForLog(/daemon started/);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const [{ n }] = await fx.db.rows<{ n: number }>(
        "SELECT count(*)::int AS n FROM sync_runs WHERE status = 'succeeded'",
      );
      if (n >= 3) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    const healthy = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: health });
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stdout).toMatch(/^healthy/);
    daemon.kill('SIGTERM');
    const stopped = Date.now();
    const result = await daemon.result;
    expect(result.code).toBe(0);
    expect(Date.now() - stopped).toBeLessThan(10_000);
    const runs = await fx.db.rows<{ status: string; trigger: string }>(
      'SELECT status, trigger FROM sync_runs ORDER BY id',
    );
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs[0]!.trigger).toBe('run-now');
    expect(runs.slice(1).every((r) => r.trigger === 'schedule')).toBe(true);
    expect(runs.every((r) => r.status === 'succeeded' || r.status === 'aborted')).toBe(true);
    expect(fx.sim.stats.logins).toBe(1);
    expect(result.stderr).toMatch(/next sync scheduled/);
    expect((await runCli(['healthcheck'], { SYNC_HEALTH_FILE: health })).code).toBe(1);
  });

  it('refuses an invalid cron expression or time zone with exit 2', async () => {
    const r = await runCli(['schedule'], { ...fx.env, SYNC_SCHEDULE: 'every day', SYNC_TIMEZONE: 'Nowhere/City' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('SYNC_SCHEDULE');
    expect(r.stderr).toContain('SYNC_TIMEZONE');
  });
});

describe('shutdown and crashes', () => {
  it('SIGTERM during a slow listing: run aborted, tables unchanged, exit within 10 s', async () => {
    fx.sim.setFault('slow', { delayMs: 60_000 });
    const cli = startCli(['run'], fx.env);
    await cli.waitForLog(/logged in/);
    await new Promise((r) => setTimeout(r, 300));
    const sent = Date.now();
    cli.kill('SIGTERM');
    const result = await cli.result;
    expect(Date.now() - sent).toBeLessThan(10_000);
    expect(result.code).toBe(1);
    expect(await fx.db.rows('SELECT status, error FROM sync_runs')).toEqual([
      { status: 'aborted', error: expect.stringContaining('aborted') },
    ]);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
  });

  it('SIGKILL in the middle of the load leaves the tables as they were; the next run marks it abandoned', async () => {
    await fx.restartSimulator({ records: 150_000, seed: 3 });
    fx.env.SYNC_MAX_DELETE_RATIO = '1';
    fx.sim.setRecordsJson(['{"id":1,"wpi":"KEEP","inventory_sales":1.25}']);
    expect((await runJson()).code).toBe(0);
    const before = await fx.db.rows('SELECT id, wpi, inventory_sales::text, xmin::text FROM bulk_wine_reconciliation');
    fx.sim.setRecordsJson(null);
    const cli = startCli(['run'], { ...fx.env, LOG_LEVEL: 'debug' });
    await cli.waitForLog(/listing ready/);
    await new Promise((r) => setTimeout(r, 400));
    cli.kill('SIGKILL');
    expect((await cli.result).signal).toBe('SIGKILL');
    expect(await fx.db.rows('SELECT id, wpi, inventory_sales::text, xmin::text FROM bulk_wine_reconciliation')).toEqual(
      before,
    );
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_history')).toEqual([{ n: 1 }]);
    fx.sim.setRecordsJson(['{"id":1,"wpi":"KEEP","inventory_sales":1.25}']);
    // The server may take a moment to notice the dead client and release its lock (exit 3 meanwhile).
    let next = await runJson();
    for (let i = 0; i < 20 && next.code === 3; i++) {
      await new Promise((r) => setTimeout(r, 500));
      next = await runJson();
    }
    expect(next.code, next.stderr).toBe(0);
    expect(await fx.db.rows('SELECT id::int, status FROM sync_runs ORDER BY id')).toEqual([
      { id: 1, status: 'succeeded' },
      { id: 2, status: 'abandoned' },
      { id: 3, status: 'succeeded' },
    ]);
  });
});
