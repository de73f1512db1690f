/**
 * The status page's request gate, over real HTTP to the real commands: without a token the page
 * and its JSON answer only to the names it is served under (a DNS-rebinding page names its own),
 * SYNC_UI_ALLOWED_HOSTS adds a reverse proxy's name, /metrics and /healthz stay open to scrapers
 * and probes, and wrong tokens are limited per client address.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli, type CliProcess } from '../support/harness.js';

const TOKEN = 'gate-token-0123456789abcdef';
const fx = useSyncFixture('pagegate', { simulator: { records: 20 } });

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with exactly these headers (Host included: node sends the one given), from `from` when given. */
function http(
  url: string,
  options: { method?: string; headers?: Record<string, string>; from?: string; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers, localAddress: options.from, agent: false },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const PAGES = ['/', '/index.json', '/runs/1', '/runs/1.json', '/fields.json', '/runs/1/rejects/1/raw'];
const FORGED = [
  'rebind.attacker.example',
  `rebind.attacker.example:PORT`,
  'localhost.attacker.example:PORT',
  '127.0.0.1.nip.io:PORT',
  'localhost:1',
  'localhost:80',
  'user@localhost:PORT',
  'localhost:PORT/x',
];

async function startServe(
  env: Record<string, string> = {},
): Promise<{ serve: CliProcess; base: string; port: string }> {
  const serve = startCli(['serve', '--port', '0'], {
    DATABASE_URL: fx.env.DATABASE_URL!,
    SYNC_DB_SCHEMA: fx.db.schema,
    ...env,
  });
  const base = JSON.parse(await serve.waitForLog(/serving the status page/)).page.replace(/\/$/, '') as string;
  return { serve, base, port: new URL(base).port };
}

beforeAll(async () => {
  // Run 1 with rejects, so that /runs/1/rejects/1/raw holds a record.
  fx.sim.setRecordsJson([
    '{"id":1,"wpi":"A"}',
    '{"id":2,"wpi":"","inventory_sales":"secret-ish text"}',
    '{"id":3,"wpi":"C"}',
  ]);
  expect((await runCli(['run'], { ...fx.env, SYNC_MAX_REJECT_RATIO: '0.5' })).code).toBe(0);
});

describe('serve without a token, on loopback', () => {
  let serve: CliProcess;
  let base: string;
  let port: string;
  beforeAll(async () => ({ serve, base, port } = await startServe()));
  afterAll(async () => {
    serve?.kill('SIGTERM');
    await serve?.result;
  });

  it('answers its own names: localhost, 127.x and [::1] at its port', async () => {
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, `127.0.0.1`]) {
      for (const path of PAGES) {
        const r = await http(`${base}${path}`, { headers: { host } });
        expect(r.status, `${host} ${path}`).toBe(200);
      }
    }
  });

  it('answers 421 with a one-line reason to any other Host, on every page and the raw rejects', async () => {
    const raw = await http(`${base}/runs/1/rejects/1/raw`);
    expect(raw.status).toBe(200);
    expect(raw.body).toMatch(/^\{/);
    for (const forged of FORGED) {
      const host = forged.replace('PORT', port);
      for (const path of PAGES) {
        const r = await http(`${base}${path}`, { headers: { host } });
        expect(r.status, `${host} ${path}`).toBe(421);
        expect(r.body).toMatch(
          /^421: this page answers only to the name it is served under \(loopback, its bound address, or one in SYNC_UI_ALLOWED_HOSTS\)\n$/,
        );
        expect(r.body).not.toContain(raw.body);
      }
    }
  });

  it('refuses a request that would change something unless its Origin is this page (403)', async () => {
    for (const origin of ['http://rebind.attacker.example', `http://localhost:1`, 'null']) {
      const r = await http(`${base}/run-now`, {
        method: 'POST',
        headers: { host: `localhost:${port}`, origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'csrf=x',
      });
      expect(r.status, origin).toBe(403);
      expect(r.body).toBe('refused: this request does not come from this page (Origin)\n');
    }
  });
});

describe('serve behind a reverse proxy, SYNC_UI_ALLOWED_HOSTS', () => {
  it('answers the names listed (any port, or the one given) and its own, and no other', async () => {
    const { serve, base, port } = await startServe({
      SYNC_UI_ALLOWED_HOSTS: 'status.example.com, ops.example.com:8443',
    });
    try {
      for (const host of [
        'status.example.com',
        'status.example.com:443',
        'ops.example.com:8443',
        `localhost:${port}`,
      ]) {
        expect((await http(`${base}/index.json`, { headers: { host } })).status, host).toBe(200);
      }
      for (const host of [
        'ops.example.com',
        'ops.example.com:443',
        'evil.example.com',
        'status.example.com.evil.example',
      ]) {
        expect((await http(`${base}/index.json`, { headers: { host } })).status, host).toBe(421);
      }
    } finally {
      serve.kill('SIGTERM');
      await serve.result;
    }
  });

  it('refuses an entry that is not a host name, naming the variable (exit 2)', async () => {
    const r = await runCli(['serve'], {
      DATABASE_URL: fx.env.DATABASE_URL!,
      SYNC_DB_SCHEMA: fx.db.schema,
      SYNC_UI_ALLOWED_HOSTS: 'https://status.example.com/',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('SYNC_UI_ALLOWED_HOSTS: "https://status.example.com/" is not a host name or name:port');
  });
});

describe('the daemon without a token', () => {
  it('answers /metrics and /healthz to any Host, and the page only to its own', async () => {
    const port = await freePort();
    const daemon = startCli(['schedule'], {
      ...fx.env,
      SYNC_SCHEDULE: '0 0 1 1 *',
      SYNC_METRICS_PORT: String(port),
      SYNC_HEALTH_FILE: `${fx.dir}/health`,
    });
    try {
      await daemon.waitForLog(/daemon started/);
      const base = `http://127.0.0.1:${port}`;
      const host = 'rebind.attacker.example';
      expect((await http(`${base}/metrics`, { headers: { host } })).status).toBe(200);
      expect((await http(`${base}/healthz`, { headers: { host } })).status).toBe(200);
      expect((await http(`${base}/index.json`, { headers: { host } })).status).toBe(421);
      expect((await http(`${base}/runs/1/rejects/1/raw`, { headers: { host } })).status).toBe(421);
      expect((await http(`${base}/index.json`)).status).toBe(200);
    } finally {
      daemon.kill('SIGTERM');
      await daemon.result;
    }
  });
});

describe('wrong tokens', () => {
  let serve: CliProcess;
  let base: string;
  beforeAll(async () => ({ serve, base } = await startServe({ SYNC_UI_TOKEN: TOKEN })));
  afterAll(async () => {
    serve?.kill('SIGTERM');
    await serve?.result;
  });

  it('after 10 from one address in a minute, that address gets 429 with Retry-After, even with the right token; others do not', async () => {
    const wrong = { authorization: 'Bearer wrong-token-0123456789abcdef' };
    const right = { authorization: `Bearer ${TOKEN}` };
    // No token at all (a browser's first request) does not count.
    for (let i = 0; i < 12; i++) expect((await http(`${base}/`)).status).toBe(401);
    expect((await http(`${base}/`, { headers: right })).status).toBe(200);
    for (let i = 0; i < 10; i++)
      expect((await http(`${base}/`, { headers: wrong })).status, `attempt ${i + 1}`).toBe(401);
    const limited = await http(`${base}/`, { headers: wrong });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(limited.body).toMatch(/^429: too many wrong tokens from this address; try again in \d+ s\n$/);
    expect((await http(`${base}/`, { headers: right })).status).toBe(429);
    // Another client address (the whole 127/8 is loopback on Linux) is not held back.
    expect((await http(`${base}/`, { headers: right, from: '127.0.0.2' })).status).toBe(200);
  });
});
