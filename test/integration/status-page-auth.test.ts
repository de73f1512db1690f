/**
 * Who may see the status page and start a run from it, with real HTTP requests to the
 * real commands: SYNC_UI_TOKEN as Bearer or Basic password, the refusal to serve the page beyond
 * loopback without it, the security headers, and run-now's CSRF token and Origin check, in the
 * daemon and, with chromium, by pressing the button.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchBrowser, watchedPage } from '../support/browser.js';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli, type CliProcess } from '../support/harness.js';
import { describeWith } from '../support/programs.js';

const TOKEN = 'page-token-0123456789abcdef';
const fx = useSyncFixture('pageauth', { simulator: { records: 20 } });

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request as curl would send it: only the headers given. */
function http(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}
const bearer = (token = TOKEN) => ({ authorization: `Bearer ${token}` });
const basic = (password = TOKEN, user = 'ops') => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('serve with SYNC_UI_TOKEN', () => {
  let serve: CliProcess;
  let base: string;
  beforeAll(async () => {
    const r = await runCli(['run'], fx.env);
    expect(r.code).toBe(0);
    serve = startCli(['serve', '--port', '0'], {
      DATABASE_URL: fx.env.DATABASE_URL!,
      SYNC_DB_SCHEMA: fx.db.schema,
      SYNC_UI_TOKEN: TOKEN,
    });
    base = JSON.parse(await serve.waitForLog(/serving the status page/)).page.replace(/\/$/, '');
  });
  afterAll(async () => {
    serve?.kill('SIGTERM');
    await serve?.result;
  });

  it('answers 401 without the token or with a wrong one, on every page', async () => {
    for (const path of ['/', '/runs/1', '/runs/1.json', '/fields', '/page.css', '/runs/1/rejects/0/raw']) {
      const r = await http(`${base}${path}`);
      expect(r.status, path).toBe(401);
      expect(r.headers['www-authenticate']).toMatch(/^Basic realm=/);
      expect(r.body).not.toContain(TOKEN);
    }
    expect((await http(`${base}/`, { headers: bearer('page-token-0123456789abcdeX') })).status).toBe(401);
    expect((await http(`${base}/`, { headers: basic('wrong-token-0123456789abcdef') })).status).toBe(401);
    expect(
      (await http(`${base}/`, { headers: { authorization: `Basic ${Buffer.from(TOKEN).toString('base64')}` } })).status,
    ).toBe(401);
  });

  it('answers 200 with Bearer or with Basic (the token as password), with the security headers', async () => {
    for (const headers of [bearer(), basic(), basic(TOKEN, '')]) {
      const r = await http(`${base}/`, { headers });
      expect(r.status).toBe(200);
      expect(r.headers['content-security-policy']).toMatch(/^default-src 'none';/);
      expect(r.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      expect(r.headers['referrer-policy']).toBe('no-referrer');
      expect(r.body).toContain('Fresh');
      // No secret reaches a page.
      expect(r.body).not.toContain(TOKEN);
      expect(r.body).not.toContain(fx.env.DATABASE_URL);
      expect(r.body).not.toContain(fx.sim.password);
    }
    const run = await http(`${base}/runs/1.json`, { headers: bearer() });
    expect(run.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(run.body).run).toMatchObject({ id: '1', status: 'succeeded', received: '20' });
    expect(JSON.parse((await http(`${base}/index.json`, { headers: bearer() })).body).freshness.state).toBe('fresh');
    expect(JSON.parse((await http(`${base}/fields.json`, { headers: bearer() })).body).discovered).toEqual([]);
  });

  it('never shows a secret of its own, even one that reached the database', async () => {
    await fx.db.rows(`UPDATE sync_runs SET error = $1 WHERE id = 1`, [`a proxy said: token ${TOKEN} & more`]);
    try {
      for (const path of ['/', '/runs/1', '/runs/1.json']) {
        const r = await http(`${base}${path}`, { headers: bearer() });
        expect(r.body, path).not.toContain(TOKEN);
        expect(r.body, path).toContain('[Redacted]');
      }
    } finally {
      await fx.db.rows(`UPDATE sync_runs SET error = NULL WHERE id = 1`);
    }
  });

  it('has no run-now: `serve` only reads', async () => {
    const r = await http(`${base}/run-now`, {
      method: 'POST',
      headers: { ...bearer(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'csrf=x',
    });
    expect(r.status).toBe(404);
    expect((await http(`${base}/`, { headers: bearer() })).body).not.toContain('/run-now');
  });
});

it('serve only reads: on a schema never migrated it exits 2 and asks for migrate', async () => {
  const r = await runCli(['serve', '--port', '0'], {
    DATABASE_URL: fx.env.DATABASE_URL!,
    SYNC_DB_SCHEMA: `${fx.db.schema}_none`,
  });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('run `wine-recon-sync migrate` first');
  const [{ n }] = await fx.db.rows<{ n: string }>('SELECT count(*) AS n FROM pg_namespace WHERE nspname = $1', [
    `${fx.db.schema}_none`,
  ]);
  expect(n).toBe('0');
});

describe('beyond loopback without SYNC_UI_TOKEN', () => {
  it('serve refuses to start (exit 2, naming the variable)', async () => {
    const r = await runCli(['serve', '--host', '0.0.0.0', '--port', '0'], {
      DATABASE_URL: fx.env.DATABASE_URL!,
      SYNC_DB_SCHEMA: fx.db.schema,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('SYNC_UI_TOKEN: is not set');
  });

  it('schedule serves /metrics and /healthz only, and logs why the page is off', async () => {
    const port = await freePort();
    const daemon = startCli(['schedule'], {
      ...fx.env,
      SYNC_METRICS_PORT: String(port),
      SYNC_METRICS_HOST: '0.0.0.0',
      SYNC_HEALTH_FILE: `${fx.dir}/health-off`,
    });
    try {
      const line = await daemon.waitForLog(/status page off/);
      expect(line).toContain('SYNC_UI_TOKEN is not set');
      await daemon.waitForLog(/serving metrics/);
      expect((await http(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
      expect((await http(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const page = await http(`http://127.0.0.1:${port}/`);
      expect(page.status).toBe(404);
      expect(page.body).not.toContain('<html');
    } finally {
      daemon.kill('SIGTERM');
      await daemon.result;
    }
  });
});

it('schedule on loopback without SYNC_UI_TOKEN serves the page, without run-now', async () => {
  const port = await freePort();
  const daemon = startCli(['schedule'], {
    ...fx.env,
    SYNC_METRICS_PORT: String(port),
    SYNC_HEALTH_FILE: `${fx.dir}/health-loop`,
  });
  try {
    await daemon.waitForLog(/serving metrics/);
    const base = `http://127.0.0.1:${port}`;
    const page = await http(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="freshness"');
    expect(page.body).not.toContain('/run-now');
    expect((await http(`${base}/run-now`, { method: 'POST', headers: { origin: base }, body: 'csrf=x' })).status).toBe(
      404,
    );
    expect((await http(`${base}/metrics`)).status).toBe(200);
  } finally {
    daemon.kill('SIGTERM');
    await daemon.result;
  }
});

describe('run-now in the daemon', () => {
  let daemon: CliProcess;
  let base: string;
  const runs = async () => Number((await fx.db.rows<{ n: string }>('SELECT count(*) AS n FROM sync_runs'))[0]!.n);
  const settled = (before: number) =>
    waitFor('the run to finish', async () => {
      const rows = await fx.db.rows<{ n: string; going: string }>(
        `SELECT count(*) AS n, count(*) FILTER (WHERE status = 'running') AS going FROM sync_runs`,
      );
      return Number(rows[0]!.n) > before && rows[0]!.going === '0' ? Number(rows[0]!.n) : undefined;
    });
  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    daemon = startCli(['schedule'], {
      ...fx.env,
      SYNC_METRICS_PORT: String(port),
      SYNC_UI_TOKEN: TOKEN,
      SYNC_HEALTH_FILE: `${fx.dir}/health-now`,
    });
    await daemon.waitForLog(/serving metrics/);
  });
  afterAll(async () => {
    daemon?.kill('SIGTERM');
    await daemon?.result;
  });

  const csrfOf = async () =>
    /name="csrf" value="([0-9a-f]+)"/.exec((await http(`${base}/`, { headers: bearer() })).body)?.[1];
  const post = (headers: Record<string, string>, body: string) =>
    http(`${base}/run-now`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
    });

  it("judges freshness by the daemon's schedule, and shows its next run", async () => {
    const page = (await http(`${base}/`, { headers: bearer() })).body;
    expect(page).toContain('The schedule runs every 24 h: late when the last successful load is older than 25 h.');
    expect(page).toMatch(/Next scheduled run: \d{4}-\d\d-\d\d 03:00:00 UTC/);
  });

  it('refuses a POST without the CSRF token, from another Origin, or without an Origin; no run starts', async () => {
    const csrf = await csrfOf();
    expect(csrf).toMatch(/^[0-9a-f]{64}$/);
    const before = await runs();
    expect((await post({ origin: base }, '')).status).toBe(403);
    expect((await post({ origin: base }, 'csrf=0123')).status).toBe(403);
    const evil = await post({ origin: 'http://evil.example' }, `csrf=${csrf}`);
    expect(evil.status).toBe(403);
    expect(evil.body).toContain('Origin');
    expect((await post({}, `csrf=${csrf}`)).status).toBe(403);
    expect((await post({ origin: base, 'sec-fetch-site': 'cross-site' }, `csrf=${csrf}`)).status).toBe(403);
    // A browser under no-referrer sends Origin: null; from another site its Sec-Fetch-Site says so.
    expect((await post({ origin: 'null', 'sec-fetch-site': 'cross-site' }, `csrf=${csrf}`)).status).toBe(403);
    expect((await post({ origin: 'null' }, `csrf=${csrf}`)).status).toBe(403);
    // Without the token, no page and no run-now at all.
    expect(
      (await http(`${base}/run-now`, { method: 'POST', headers: { origin: base }, body: `csrf=${csrf}` })).status,
    ).toBe(401);
    await new Promise((r) => setTimeout(r, 300));
    expect(await runs()).toBe(before);
  });

  it('starts a run with the token, the CSRF token and this Origin, recorded with trigger page', async () => {
    const before = await runs();
    const r = await post({ origin: base }, `csrf=${await csrfOf()}`);
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe('/?run-now=started');
    await settled(before);
    const [last] = await fx.db.rows<{ status: string; trigger: string }>(
      'SELECT status, trigger FROM sync_runs ORDER BY id DESC LIMIT 1',
    );
    expect(last).toEqual({ status: 'succeeded', trigger: 'page' });
  });

  it('works while a run holds the lock: shows it in progress, and a second run-now is "already running"', async () => {
    const before = await runs();
    fx.sim.setFault('slow', { delayMs: 2_500, times: 1 });
    expect((await post({ origin: base }, `csrf=${await csrfOf()}`)).headers.location).toBe('/?run-now=started');
    const running = await waitFor(
      'the run row',
      async () => (await fx.db.rows<{ id: string }>(`SELECT id FROM sync_runs WHERE status = 'running'`))[0]?.id,
    );
    const page = await http(`${base}/`, { headers: bearer() });
    expect(page.status).toBe(200);
    expect(page.body).toContain(`id="running"`);
    expect(page.body).toContain(`<meta http-equiv="refresh" content="5">`);
    expect((await http(`${base}/runs/${running}`, { headers: bearer() })).status).toBe(200);
    const again = await post({ origin: base }, `csrf=${await csrfOf()}`);
    expect(again.headers.location).toBe('/?run-now=busy');
    expect((await http(`${base}/?run-now=busy`, { headers: bearer() })).body).toContain('A run is already going');
    expect(await settled(before)).toBe(before + 1);
  });

  describeWith('chromium and playwright-core', chromiumAvailable, 'in chromium', () => {
    it('pressing "Run now" records a run', async () => {
      const browser = await launchBrowser();
      try {
        const context = await browser.newContext({ httpCredentials: { username: 'ops', password: TOKEN } });
        const { page, problems } = await watchedPage(context);
        const before = await runs();
        await page.goto(`${base}/`);
        await page.getByRole('button', { name: 'Run now' }).click();
        await page.waitForURL(/run-now=started/);
        expect(await page.locator('#notice').textContent()).toContain('A run was started');
        await settled(before);
        expect(await runs()).toBe(before + 1);
        expect(problems).toEqual([]);
      } finally {
        await browser.close();
      }
    });
  });
});
