import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { brotliDecompressSync, constants, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator, type TokenShape } from '../../src/simulator/server.js';
import { rawListing } from '../support/raw-listing.js';

const LOGIN_HEADERS = {
  'content-type': 'application/json',
  'x-requested-with': 'XMLHttpRequest',
  service_app: 'mobile',
};
const LISTING = '/api/bulk-wine-reconciliation-data';

interface Listing {
  message: string;
  count: number;
  bulk_wine_reconciliation: Array<Record<string, unknown>>;
  recordCount: number;
}

function login(
  sim: Simulator,
  body: unknown = { email: sim.email, password: sim.password },
  headers: Record<string, string> = LOGIN_HEADERS,
) {
  return fetch(`${sim.url}/api/login`, { method: 'POST', headers, body: JSON.stringify(body) });
}

async function token(sim: Simulator): Promise<string> {
  const res = await login(sim);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { data: { access_token: string } };
  return body.data.access_token;
}

function listing(
  sim: Simulator,
  jwt: string | undefined,
  query = '?for_reporting=1',
  headers: Record<string, string> = { serviceapp: 'mobile' },
) {
  return fetch(`${sim.url}${LISTING}${query}`, {
    headers: { ...headers, ...(jwt === undefined ? {} : { authorization: `Bearer ${jwt}` }) },
  });
}

async function listingText(sim: Simulator, jwt: string): Promise<string> {
  const res = await listing(sim, jwt);
  expect(res.status).toBe(200);
  return res.text();
}

function decodeClaims(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Reads a body to the end or to its failure: the bytes received and whether it failed. */
async function drain(res: Response): Promise<{ bytes: number; failed: boolean; text: string }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let bytes = 0;
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes, failed: false, text };
      bytes += value.length;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { bytes, failed: true, text };
  }
}

describe('simulator: login', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ records: 20 });
  });
  afterAll(() => sim.close());

  it('listens on 127.0.0.1 with the default credentials', () => {
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sim.email).toBe('demo@example.com');
    expect(sim.password).toBe('demo-password');
    expect(sim.recordCount()).toBe(20);
  });

  it('refuses a login without service_app, naming the header', async () => {
    const { service_app: _, ...headers } = LOGIN_HEADERS;
    const res = await login(sim, undefined, headers);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { message: string };
    expect(body.message).toContain('service_app');
    expect(body.message).not.toContain('X-Requested-With');
  });

  it('refuses a login without X-Requested-With or with another content type', async () => {
    const noXhr = await login(sim, undefined, { 'content-type': 'application/json', service_app: 'mobile' });
    expect(noXhr.status).toBe(400);
    expect(((await noXhr.json()) as { message: string }).message).toContain('X-Requested-With');
    const form = await login(sim, undefined, { ...LOGIN_HEADERS, 'content-type': 'text/plain' });
    expect(form.status).toBe(400);
    expect(((await form.json()) as { message: string }).message).toContain('Content-Type');
  });

  it('compares header names and values case-insensitively', async () => {
    const res = await login(sim, undefined, {
      'Content-Type': 'Application/JSON; charset=utf-8',
      'X-REQUESTED-WITH': 'xmlhttprequest',
      Service_App: 'MOBILE',
    });
    expect(res.status).toBe(200);
  });

  it('answers 401 to a wrong password and 422 to a missing field', async () => {
    const wrong = await login(sim, { email: sim.email, password: 'nope' });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ message: 'Invalid credentials.' });
    const otherUser = await login(sim, { email: 'other@example.com', password: sim.password });
    expect(otherUser.status).toBe(401);
    const missing = await login(sim, { email: sim.email });
    expect(missing.status).toBe(422);
    expect(await missing.json()).toEqual({
      message: 'The password field is required.',
      errors: { password: ['The password field is required.'] },
    });
  });

  it('returns an HS256 JWT under data.access_token by default, valid for tokenTtlSeconds', async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await login(sim);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as {
      message: string;
      data: { user: unknown; access_token: string; token_type: string; expires_in: number };
    };
    expect(body.message).toBe('Login successful');
    expect(body.data.user).toEqual({ id: 1, email: 'demo@example.com' });
    expect(body.data.token_type).toBe('bearer');
    expect(body.data.expires_in).toBe(3600);
    const parts = body.data.access_token.split('.');
    expect(parts).toHaveLength(3);
    expect(parts.every((p) => /^[A-Za-z0-9_-]+$/.test(p))).toBe(true);
    expect(JSON.parse(Buffer.from(parts[0] as string, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(Buffer.from(parts[2] as string, 'base64url')).toHaveLength(32);
    const claims = decodeClaims(body.data.access_token);
    expect(claims.sub).toBe('1');
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
  });

  it('counts login requests, failed ones included', async () => {
    const before = sim.stats.logins;
    await login(sim, { email: sim.email, password: 'bad' });
    await login(sim, undefined, {});
    await login(sim);
    expect(sim.stats.logins).toBe(before + 3);
    expect(Object.keys(sim.stats).sort()).toEqual(['connections', 'listings', 'logins']);
  });

  it('answers 404 JSON elsewhere and 405 to a GET on login', async () => {
    const missing = await fetch(`${sim.url}/api/other`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ message: 'Not Found' });
    const get = await fetch(`${sim.url}/api/login`);
    expect(get.status).toBe(405);
  });
});

describe('simulator: token shapes', () => {
  const cases: Array<[TokenShape, (body: string) => string, string]> = [
    [
      'data.access_token',
      (b) => (JSON.parse(b) as { data: { access_token: string } }).data.access_token,
      'application/json',
    ],
    ['token', (b) => (JSON.parse(b) as { token: string }).token, 'application/json'],
    ['jwt', (b) => (JSON.parse(b) as { jwt: string }).jwt, 'application/json'],
    ['bare', (b) => b, 'text/plain; charset=UTF-8'],
    [
      'nested-unknown',
      (b) => (JSON.parse(b) as { result: { auth: { value: string } } }).result.auth.value,
      'application/json',
    ],
  ];
  for (const [shape, extract, type] of cases) {
    it(`puts the token at ${shape}, and the token opens the listing`, async () => {
      const sim = await startSimulator({ records: 3, tokenShape: shape });
      try {
        const res = await login(sim);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe(type);
        const body = await res.text();
        const jwt = extract(body);
        expect(jwt).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
        if (shape === 'nested-unknown') {
          expect(body).not.toMatch(/"(token|access_token|accessToken|jwt)"/);
          expect(Object.keys(JSON.parse(body) as object)).not.toContain('data');
        }
        const listed = await listing(sim, jwt);
        expect(listed.status).toBe(200);
        expect(((await listed.json()) as Listing).count).toBe(3);
      } finally {
        await sim.close();
      }
    });
  }
});

describe('simulator: listing', () => {
  let sim: Simulator;
  let jwt: string;
  beforeAll(async () => {
    sim = await startSimulator({ records: 1000 });
    jwt = await token(sim);
  });
  afterAll(() => sim.close());

  it('answers 401 without a token, with a forged one and with a tampered one', async () => {
    const none = await listing(sim, undefined);
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ message: 'Unauthenticated.' });
    expect((await listing(sim, 'abc.def.ghi')).status).toBe(401);
    const [h, p, s] = jwt.split('.') as [string, string, string];
    const claims = decodeClaims(jwt);
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: (claims.exp as number) + 999999 })).toString(
      'base64url',
    );
    expect((await listing(sim, `${h}.${longer}.${s}`)).status).toBe(401);
    expect((await listing(sim, `${h}.${p}.${s.slice(0, -2)}AA`)).status).toBe(401);
    expect(
      (await listing(sim, undefined, '?for_reporting=1', { serviceapp: 'mobile', authorization: `Basic ${jwt}` }))
        .status,
    ).toBe(401);
  });

  it('answers 400 without serviceapp', async () => {
    const res = await listing(sim, jwt, '?for_reporting=1', {});
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain('serviceapp');
  });

  it('serves every record with count == recordCount == length', async () => {
    const res = await listing(sim, jwt);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const body = (await res.json()) as Listing;
    expect(Object.keys(body)).toEqual(['message', 'count', 'bulk_wine_reconciliation', 'recordCount']);
    expect(body.message).toBe('Bulk wine reconciliation data retrieved successfully');
    expect(body.count).toBe(1000);
    expect(body.recordCount).toBe(1000);
    expect(body.bulk_wine_reconciliation).toHaveLength(1000);
    expect(body.bulk_wine_reconciliation.map((r) => r.id)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    const fields = [
      'id',
      'wpi',
      'inventory_bulk_wine',
      'inventory_finished_goods',
      'inventory_sales',
      'vintage_forecast',
      'vintage_make',
      'first_sale',
    ];
    for (const record of body.bulk_wine_reconciliation) {
      expect(Object.keys(record)).toEqual(fields);
      expect(record.wpi).toMatch(/^WPI-20(1\d|2[0-4])-[A-Z]{2}-\d{6}$/);
      expect(String(record.wpi).endsWith(String(record.id).padStart(6, '0'))).toBe(true);
      if (record.first_sale !== null) {
        expect(record.first_sale).toMatch(/^20\d\d-\d\d-\d\d$/);
        expect(new Date(`${record.first_sale as string}T00:00:00Z`).toISOString().slice(0, 10)).toBe(record.first_sale);
      }
    }
    const nulls = (field: string) => body.bulk_wine_reconciliation.filter((r) => r[field] === null).length;
    expect(nulls('first_sale')).toBeGreaterThan(40);
    expect(nulls('first_sale')).toBeLessThan(130);
    expect(nulls('inventory_sales')).toBeGreaterThan(10);
    expect(nulls('vintage_make')).toBeGreaterThan(10);
  });

  it('writes decimals as exact tokens, some with 20-30 fractional digits that JSON.parse would round', async () => {
    const text = await listingText(sim, jwt);
    const long = text.match(/"(?:inventory_sales|vintage_forecast|vintage_make)":-?\d+\.\d{20,30}[,}]/g) ?? [];
    expect(long.length).toBeGreaterThan(150);
    const token = /"inventory_sales":(-?\d+\.\d{20,})/.exec(text)![1] as string;
    expect(String(JSON.parse(token))).not.toBe(token);
    // Canonical numbers: no exponent, no leading zero, no trailing fractional zero.
    const numbers = text.match(/":-?[\d.eE+]+(?=[,}])/g)!.map((t) => t.slice(2));
    expect(numbers.length).toBeGreaterThan(5000);
    for (const n of numbers) expect(n).toMatch(/^-?(0|[1-9]\d*)(\.\d*[1-9])?$/);
    expect(numbers.some((n) => /^\d+$/.test(n) && n !== '0' && Number(n) > 1000)).toBe(true);
    expect(numbers.some((n) => /^-\d/.test(n))).toBe(true);
  });

  it('keeps records about 245 bytes long', async () => {
    const text = await listingText(sim, jwt);
    const envelope =
      '{"message":"Bulk wine reconciliation data retrieved successfully","count":1000,"bulk_wine_reconciliation":[],"recordCount":1000}'
        .length;
    const average = (text.length - envelope - 999) / 1000;
    expect(average).toBeGreaterThan(225);
    expect(average).toBeLessThan(260);
  });

  it('without for_reporting=1 answers a Laravel page of 15 instead', async () => {
    const res = await listing(sim, jwt, '');
    expect(res.status).toBe(200);
    const page = (await res.json()) as {
      data: Array<{ id: number }>;
      links: Record<string, string | null>;
      meta: Record<string, unknown>;
    };
    expect(Object.keys(page)).toEqual(['data', 'links', 'meta']);
    expect(page.data.map((r) => r.id)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
    expect(page.meta).toMatchObject({ current_page: 1, per_page: 15, total: 1000, last_page: 67, from: 1, to: 15 });
    expect(page.links.next).toBe(`${sim.url}${LISTING}?page=2`);
    expect(page.links.prev).toBeNull();
    const last = (await (await listing(sim, jwt, '?page=67')).json()) as {
      data: Array<{ id: number }>;
      meta: Record<string, unknown>;
    };
    expect(last.data.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => 991 + i));
    expect(last.meta).toMatchObject({ current_page: 67, from: 991, to: 1000 });
    expect((await listing(sim, jwt, '?for_reporting=0')).headers.get('content-type')).toBe('application/json');
  });

  it('is the same text for the same seed, and another for another seed', async () => {
    const twin = await startSimulator({ records: 1000, seed: 1 });
    const other = await startSimulator({ records: 1000, seed: 2 });
    try {
      const mine = await listingText(sim, jwt);
      expect(await listingText(twin, await token(twin))).toBe(mine);
      const theirs = await listingText(other, await token(other));
      expect(theirs).not.toBe(mine);
      expect(theirs.length).toBeGreaterThan(200_000);
    } finally {
      await twin.close();
      await other.close();
    }
  });

  it('counts listing requests, failed ones included', async () => {
    const before = sim.stats.listings;
    await listing(sim, undefined);
    await listing(sim, jwt, '?for_reporting=1', {});
    await (await listing(sim, jwt)).text();
    expect(sim.stats.listings).toBe(before + 3);
  });
});

describe('simulator: faults', () => {
  let sim: Simulator;
  let jwt: string;
  beforeAll(async () => {
    sim = await startSimulator({ records: 200, seed: 3 });
    jwt = await token(sim);
  });
  afterEach(() => sim.setFault(null));
  afterAll(() => sim.close());

  it('expire-token: issued tokens are already expired and the listing answers 401', async () => {
    sim.setFault('expire-token', { times: 1 });
    const res = await login(sim);
    expect(res.status).toBe(200);
    const expired = ((await res.json()) as { data: { access_token: string; expires_in: number } }).data;
    expect(decodeClaims(expired.access_token).exp).toBeLessThan(Date.now() / 1000);
    expect(expired.expires_in).toBeLessThan(0);
    const refused = await listing(sim, expired.access_token);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ message: 'Unauthenticated.' });
    // times: 1 -> the next login is normal again.
    expect((await listing(sim, await token(sim))).status).toBe(200);
  });

  it('a token past its tokenTtlSeconds is refused', async () => {
    // exp has whole-second precision: a 2 s lifetime leaves at least 1 s for the first listing on a busy machine.
    const short = await startSimulator({ records: 2, tokenTtlSeconds: 2 });
    try {
      const t = await token(short);
      expect((await listing(short, t)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 3100));
      expect((await listing(short, t)).status).toBe(401);
    } finally {
      await short.close();
    }
  });

  it('revokeTokens: tokens issued so far stop working, new ones work', async () => {
    const old = await token(sim);
    expect((await listing(sim, old)).status).toBe(200);
    sim.revokeTokens();
    expect((await listing(sim, old)).status).toBe(401);
    const fresh = await token(sim);
    expect((await listing(sim, fresh)).status).toBe(200);
    sim.setFault('revoke-tokens');
    expect((await listing(sim, fresh)).status).toBe(401);
    jwt = await token(sim);
    expect((await listing(sim, jwt)).status).toBe(200);
  });

  it('rate-limit: 429 with Retry-After, for `times` requests', async () => {
    sim.setFault('rate-limit', { times: 2, retryAfterSeconds: 7 });
    for (let i = 0; i < 2; i++) {
      const res = await listing(sim, jwt);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('7');
      expect(await res.json()).toEqual({ message: 'Too Many Attempts.' });
    }
    expect((await listing(sim, jwt)).status).toBe(200);
    sim.setFault('rate-limit');
    const res = await listing(sim, jwt);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
  });

  it('server-error: a burst of 503 (default) or a chosen status, then normal', async () => {
    sim.setFault('server-error', { times: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await listing(sim, jwt)).status);
    expect(statuses).toEqual([503, 503, 503, 200]);
    sim.setFault('server-error', { status: 502, times: 1 });
    const gateway = await listing(sim, jwt);
    expect(gateway.status).toBe(502);
    expect(gateway.headers.get('content-type')).toBe('text/html');
    expect(await gateway.text()).toContain('502 Bad Gateway');
    sim.setFault('server-error', { status: 500 });
    expect((await listing(sim, jwt)).status).toBe(500);
    expect((await listing(sim, jwt)).status).toBe(500);
    sim.setFault(null);
    expect((await listing(sim, jwt)).status).toBe(200);
  });

  it('login-error: the chosen status on login (default 500), the listing unaffected', async () => {
    sim.setFault('login-error', { times: 1 });
    const res = await login(sim);
    expect(res.status).toBe(500);
    expect((await listing(sim, jwt)).status).toBe(200);
    expect((await login(sim)).status).toBe(200);
    sim.setFault('login-error', { status: 503, times: 1 });
    expect((await login(sim)).status).toBe(503);
  });

  it('html: 200 text/html with a login page instead of JSON', async () => {
    sim.setFault('html', { times: 1 });
    const res = await listing(sim, jwt);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=UTF-8');
    const page = await res.text();
    expect(page.startsWith('<!DOCTYPE html>')).toBe(true);
    expect(page).toContain('<form method="POST" action="/login">');
    expect((await listing(sim, jwt)).headers.get('content-type')).toBe('application/json');
  });

  it('truncate: declares the whole length, sends about half (cut mid-record), drops the connection', async () => {
    const full = Buffer.byteLength(await listingText(sim, jwt));
    sim.setFault('truncate', { times: 1 });
    const res = await listing(sim, jwt);
    expect(res.status).toBe(200);
    expect(Number(res.headers.get('content-length'))).toBe(full);
    const got = await drain(res);
    expect(got.failed).toBe(true);
    expect(got.bytes).toBeGreaterThan(full * 0.45);
    expect(got.bytes).toBeLessThan(full * 0.55);
    expect(got.text).not.toMatch(/[,}\]]$/);
    expect(() => JSON.parse(got.text)).toThrow();
    expect(Buffer.byteLength(await listingText(sim, jwt))).toBe(full);
  });

  it('count-mismatch: count and recordCount exceed the array length', async () => {
    sim.setFault('count-mismatch', { times: 1 });
    const body = (await (await listing(sim, jwt)).json()) as Listing;
    expect(body.bulk_wine_reconciliation).toHaveLength(200);
    expect(body.count).toBe(201);
    expect(body.recordCount).toBe(201);
    sim.setFault('count-mismatch', { count: 5, times: 1 });
    expect(((await (await listing(sim, jwt)).json()) as Listing).count).toBe(205);
    expect(((await (await listing(sim, jwt)).json()) as Listing).count).toBe(200);
  });

  it('duplicate-ids: a few ids repeated later with other values', async () => {
    const normal = (await (await listing(sim, jwt)).json()) as Listing;
    sim.setFault('duplicate-ids', { count: 3, times: 1 });
    const body = (await (await listing(sim, jwt)).json()) as Listing;
    const records = body.bulk_wine_reconciliation;
    expect(records).toHaveLength(203);
    expect(body.count).toBe(203);
    expect(body.recordCount).toBe(203);
    expect(new Set(records.map((r) => r.id)).size).toBe(200);
    expect(records.slice(0, 200)).toEqual(normal.bulk_wine_reconciliation);
    const repeated = records.slice(200);
    expect(repeated.map((r) => r.id)).toEqual([34, 101, 167]);
    for (const copy of repeated) {
      const original = records.find((r) => r.id === copy.id)!;
      expect(copy.wpi).toBe(original.wpi);
      expect(copy).not.toEqual(original);
    }
  });

  it('invalid-records: one record of each invalid kind', async () => {
    sim.setFault('invalid-records', { times: 1 });
    const text = await listingText(sim, jwt);
    expect(text.match(/"inventory_sales":"n\/a"/g)).toHaveLength(1);
    expect(text.match(/"first_sale":"2021-02-30"/g)).toHaveLength(1);
    expect(text.match(/"wpi":""/g)).toHaveLength(1);
    expect(text.match(/"id":-\d+/g)).toHaveLength(1);
    const body = JSON.parse(text) as Listing;
    expect(body.count).toBe(200);
    expect(body.bulk_wine_reconciliation).toHaveLength(200);
    expect(body.bulk_wine_reconciliation.find((r) => r.inventory_sales === 'n/a')!.id).toBe(26);
    expect(body.bulk_wine_reconciliation.map((r) => r.id)).toContain(-176);
    sim.setFault('invalid-records', { count: 8, times: 1 });
    expect((await listingText(sim, jwt)).match(/"inventory_sales":"n\/a"/g)).toHaveLength(2);
    expect(await listingText(sim, jwt)).not.toContain('"n/a"');
  });

  it('empty: an empty array with count 0', async () => {
    sim.setFault('empty', { times: 1 });
    expect(await listingText(sim, jwt)).toBe(
      '{"message":"Bulk wine reconciliation data retrieved successfully","count":0,"bulk_wine_reconciliation":[],"recordCount":0}',
    );
    expect(((await (await listing(sim, jwt)).json()) as Listing).count).toBe(200);
  });

  it('slow: stalls delayMs after the first chunk, then completes', async () => {
    sim.setFault('slow', { delayMs: 700, times: 1 });
    const started = Date.now();
    const res = await listing(sim, jwt);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    const firstAt = Date.now() - started;
    expect(first.done).toBe(false);
    expect(Buffer.from(first.value).toString()).toMatch(
      /^\{"message":"Bulk wine reconciliation data retrieved successfully","count":200,/,
    );
    let text = Buffer.from(first.value).toString();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    expect(firstAt).toBeLessThan(500);
    expect(Date.now() - started).toBeGreaterThanOrEqual(690);
    expect((JSON.parse(text) as Listing).bulk_wine_reconciliation).toHaveLength(200);
  });

  it('refuses an unknown fault name or a bad times', () => {
    expect(() => sim.setFault('teapot' as never)).toThrow(/unknown fault "teapot"/);
    expect(() => sim.setFault('html', { times: 0 })).toThrow(RangeError);
  });

  it('a times-limited fault counts only the requests it applies to', async () => {
    sim.setFault('truncate', { times: 1 });
    expect((await listing(sim, undefined)).status).toBe(401);
    expect((await listing(sim, jwt, '')).status).toBe(200);
    expect((await drain(await listing(sim, jwt))).failed).toBe(true);
    expect((await drain(await listing(sim, jwt))).failed).toBe(false);
  });
});

describe('simulator: close', () => {
  it('closes promptly with a listing stalled by slow, failing that download', async () => {
    const sim = await startSimulator({ records: 5000 });
    const jwt = await token(sim);
    sim.setFault('slow', { delayMs: 60_000 });
    const res = await listing(sim, jwt);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    const started = Date.now();
    await sim.close();
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return 'ended';
      })(),
    ).rejects.toThrow();
    await expect(fetch(`${sim.url}/api/login`)).rejects.toThrow();
  });
});

describe('simulator: dataset changes', () => {
  const byId = (body: Listing) => new Map(body.bulk_wine_reconciliation.map((r) => [r.id as number, r]));

  it('mutate changes, removes and adds records deterministically', async () => {
    const sim = await startSimulator({ records: 100, seed: 9 });
    const twin = await startSimulator({ records: 100, seed: 9 });
    try {
      const jwt = await token(sim);
      const before = byId((await (await listing(sim, jwt)).json()) as Listing);
      sim.mutate({ change: 10, remove: 5, add: 7 });
      expect(sim.recordCount()).toBe(102);
      const afterText = await listingText(sim, jwt);
      const after = JSON.parse(afterText) as Listing;
      expect(after.count).toBe(102);
      expect(after.recordCount).toBe(102);
      const now = byId(after);
      const removed = [...before.keys()].filter((id) => !now.has(id));
      const added = [...now.keys()].filter((id) => !before.has(id));
      const changed = [...now.keys()].filter(
        (id) => before.has(id) && JSON.stringify(before.get(id)) !== JSON.stringify(now.get(id)),
      );
      expect(removed).toHaveLength(5);
      expect(added).toEqual([101, 102, 103, 104, 105, 106, 107]);
      expect(changed).toHaveLength(10);
      for (const id of changed) expect(now.get(id)!.wpi).toBe(before.get(id)!.wpi);
      const ids = after.bulk_wine_reconciliation.map((r) => r.id as number);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));

      twin.mutate({ change: 10, remove: 5, add: 7 });
      expect(await listingText(twin, await token(twin))).toBe(afterText);

      sim.mutate({ remove: 1000 });
      expect(sim.recordCount()).toBe(0);
      sim.mutate({ add: 2 });
      expect(((await (await listing(sim, jwt)).json()) as Listing).bulk_wine_reconciliation.map((r) => r.id)).toEqual([
        108, 109,
      ]);
    } finally {
      await sim.close();
      await twin.close();
    }
  });

  it('setRecordsJson serves the raw record texts verbatim, null goes back to the dataset', async () => {
    const sim = await startSimulator({ records: 10 });
    try {
      const jwt = await token(sim);
      const raw = [
        '{"id": 1, "inventory_sales": 0.1234567890123456789012345678901, "wpi": "Château"}',
        '{"id":"2","x":[1,2]}',
        '  {"id":3}  ',
      ];
      sim.setRecordsJson(raw);
      expect(sim.recordCount()).toBe(3);
      expect(await listingText(sim, jwt)).toBe(
        '{"message":"Bulk wine reconciliation data retrieved successfully","count":3,' +
          `"bulk_wine_reconciliation":[${raw.join(',')}],"recordCount":3}`,
      );
      sim.setFault('invalid-records', { count: 3, times: 1 });
      const spoiled = await listingText(sim, jwt);
      expect(spoiled).toContain('"inventory_sales": "n/a"');
      expect(spoiled).toContain('"first_sale":"2021-02-30"');
      sim.setFault('duplicate-ids', { count: 1, times: 1 });
      expect(((await (await listing(sim, jwt)).json()) as Listing).bulk_wine_reconciliation.map((r) => r.id)).toEqual([
        1,
        '2',
        3,
        '2',
      ]);
      sim.setRecordsJson(null);
      expect(((await (await listing(sim, jwt)).json()) as Listing).count).toBe(10);
    } finally {
      await sim.close();
    }
  });

  it('setRawBody serves exactly the given body and content type', async () => {
    const sim = await startSimulator({ records: 10 });
    try {
      const jwt = await token(sim);
      sim.setRawBody(
        '{"message":"x","count":2,"bulk_wine_reconciliation":[{"id":1}',
        'application/json; charset=utf-8',
      );
      const res = await listing(sim, jwt);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await res.text()).toBe('{"message":"x","count":2,"bulk_wine_reconciliation":[{"id":1}');
      const bytes = Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d, 0xff]);
      sim.setRawBody(bytes);
      const binary = await listing(sim, jwt);
      expect(binary.headers.get('content-type')).toBe('application/json');
      expect(Buffer.from(await binary.arrayBuffer())).toEqual(bytes);
      expect((await listing(sim, undefined)).status).toBe(401);
      sim.setRawBody(null);
      expect(((await (await listing(sim, jwt)).json()) as Listing).count).toBe(10);
    } finally {
      await sim.close();
    }
  });
});

describe('simulator: content coding', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ records: 300 });
  });
  afterEach(() => {
    sim.setContentCoding(null);
    sim.setFault(null);
  });
  afterAll(() => sim.close());

  it('compresses the listing only when a coding is set and the request accepts it', async () => {
    const plain = await rawListing(sim, 'gzip, deflate, br');
    expect(plain.headers['content-encoding']).toBeUndefined();
    sim.setContentCoding('gzip');
    const gzip = await rawListing(sim, 'gzip, deflate, br');
    expect(gzip.headers).toMatchObject({ 'content-encoding': 'gzip', vary: 'Accept-Encoding' });
    expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true);
    // A web server's default level, not the archive's level 1.
    expect(gzip.body.equals(gzipSync(plain.body, { level: 1 }))).toBe(false);
    expect((await rawListing(sim, 'gzip, deflate, br')).body.equals(gzip.body)).toBe(true);
    for (const refusing of ['identity', 'br', 'gzip;q=0'])
      expect((await rawListing(sim, refusing)).headers['content-encoding']).toBeUndefined();
    sim.setContentCoding('x-gzip');
    expect((await rawListing(sim, 'gzip')).headers['content-encoding']).toBe('x-gzip');
    sim.setContentCoding('deflate');
    expect(inflateSync((await rawListing(sim, 'deflate')).body).equals(plain.body)).toBe(true);
    sim.setContentCoding('br');
    expect(brotliDecompressSync((await rawListing(sim, 'br')).body).equals(plain.body)).toBe(true);
  });

  it('truncate, coded: half the listing decodable, then the response ends cleanly without the gzip end', async () => {
    const plain = await rawListing(sim, 'identity');
    sim.setContentCoding('gzip');
    sim.setFault('truncate', { times: 1 });
    const cut = await rawListing(sim, 'gzip');
    expect(cut.cut).toBe(false);
    expect(cut.headers['content-length']).toBeUndefined();
    expect(() => gunzipSync(cut.body)).toThrow(/unexpected end of file/);
    const part = gunzipSync(cut.body, { finishFlush: constants.Z_SYNC_FLUSH });
    expect(part.length).toBeGreaterThan(plain.body.length * 0.45);
    expect(part.length).toBeLessThan(plain.body.length * 0.55);
    expect(plain.body.subarray(0, part.length).equals(part)).toBe(true);
  });

  it('setRawBody with a content encoding sends that header with the body as given', async () => {
    const coded = Buffer.concat([gzipSync('{"a":'), gzipSync('1}')]);
    sim.setRawBody(coded, 'application/json', 'gzip');
    try {
      const raw = await rawListing(sim, 'gzip');
      expect(raw.headers).toMatchObject({ 'content-encoding': 'gzip', 'content-length': String(coded.length) });
      expect(raw.body.equals(coded)).toBe(true);
    } finally {
      sim.setRawBody(null);
    }
  });
});

/**
 * The simulator in a process of its own (its memory measured apart from the client's): a child Node
 * that loads the TypeScript sources through a loader hook transpiling them with `typescript`.
 */
const LOADER = `
import { readFile } from 'node:fs/promises';
let ts;
export async function initialize(data) { ts = (await import(data.typescript)).default; }
export async function resolve(specifier, context, next) {
  try { return await next(specifier, context); } catch (error) {
    if (specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
      return next(specifier.slice(0, -3) + '.ts', context);
    }
    throw error;
  }
}
export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const source = await readFile(new URL(url), 'utf8');
  const compilerOptions = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 };
  const { outputText } = ts.transpileModule(source, { fileName: url, compilerOptions });
  return { format: 'module', source: outputText, shortCircuit: true };
}`;

interface ChildSimulator {
  url: string;
  email: string;
  password: string;
  /** RSS now, which becomes the base of the peak tracking. */
  baseline(): Promise<number>;
  /** Highest RSS sampled (every 5 ms) since the baseline. */
  peak(): Promise<number>;
  /** CPU time used by the child so far, in ms. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

async function startChildSimulator(options: { records: number; seed: number }): Promise<ChildSimulator> {
  const typescript = pathToFileURL(createRequire(import.meta.url).resolve('typescript')).href;
  const server = new URL('../../src/simulator/server.ts', import.meta.url).href;
  const script = `
    import { register } from 'node:module';
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(LOADER)}), {
      data: { typescript: ${JSON.stringify(typescript)} },
    });
    const { startSimulator } = await import(${JSON.stringify(server)});
    const sim = await startSimulator(${JSON.stringify(options)});
    let peak = process.memoryUsage().rss;
    const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
    process.on('message', async (m) => {
      if (m === 'baseline') { peak = process.memoryUsage().rss; process.send({ value: peak }); }
      if (m === 'peak') process.send({ value: Math.max(peak, process.memoryUsage().rss) });
      if (m === 'cpu') { const { user, system } = process.cpuUsage(); process.send({ value: (user + system) / 1000 }); }
      if (m === 'close') { clearInterval(timer); await sim.close(); process.disconnect(); }
    });
    process.send({ url: sim.url, email: sim.email, password: sim.password });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = () => reject(new Error(`child simulator exited: ${stderr}`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve(m as T);
      });
    });
  const ask = async (what: string) => {
    const reply = next<{ value: number }>();
    child.send(what);
    return (await reply).value;
  };
  const ready = await next<{ url: string; email: string; password: string }>();
  return {
    ...ready,
    baseline: () => ask('baseline'),
    peak: () => ask('peak'),
    cpu: () => ask('cpu'),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('close');
      const timer = setTimeout(() => child.kill(), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

describe('simulator: large listings', () => {
  it('streams 200,000 records from a simulator process whose RSS stays flat', { timeout: 120_000 }, async () => {
    const child = await startChildSimulator({ records: 200_000, seed: 4 });
    try {
      const sim = { url: child.url, email: child.email, password: child.password } as Simulator;
      const jwt = await token(sim);
      const baseline = await child.baseline();
      const cpuBefore = await child.cpu();
      const res = await listing(sim, jwt);
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let bytes = 0;
      let tail = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.length;
        tail = (tail + Buffer.from(value.subarray(-512)).toString('latin1')).slice(-512);
      }
      const growth = (await child.peak()) - baseline;
      const cpu = (await child.cpu()) - cpuBefore;
      if (process.env.SIM_DEBUG) console.log({ growthMB: growth / 2 ** 20, bytes, cpuMs: cpu });
      expect(bytes).toBeGreaterThan(200_000 * 225);
      expect(bytes).toBeLessThan(200_000 * 260);
      expect(tail).toMatch(/\{"id":200000,"wpi":"WPI-\d{4}-[A-Z]{2}-200000",[^{}]*\}\],"recordCount":200000\}$/);
      // The body is ~48 MB: growth well below that means it was never held whole.
      expect(growth).toBeLessThan(30 * 1024 * 1024);
    } finally {
      await child.stop();
    }
  });
});
