/**
 * Bounded bodies: a listing larger than WINE_API_MAX_BYTES once decoded, and a login answer over
 * 1 MiB, fail at once, naming what to change, and load nothing. Real servers on 127.0.0.1.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, syncEnv } from '../support/harness.js';
import { listing } from '../support/listing.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const LOGIN = 'POST /api/login';
const LISTING = 'GET /api/bulk-wine-reconciliation-data';
const rec = (id: number) =>
  `{"id":${id},"wpi":"WPI-${id}","inventory_bulk_wine":10,"inventory_finished_goods":2.25` +
  `,"inventory_sales":1.5,"vintage_forecast":null,"vintage_make":0.5,"first_sale":"2022-01-0${(id % 9) + 1}"}`;
const body = (n: number) => listing(Array.from({ length: n }, (_, i) => rec(i + 1)));
const loginOk = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"token":"tok-limits-1"}' };

const fx = useSyncFixture('upstream_limits', { each: true });

async function upstream(): Promise<RecordingServer> {
  const s = await startRecordingServer();
  fx.onTeardown(() => s.close());
  return s;
}

const env = (s: RecordingServer, extra: Record<string, string> = {}) =>
  syncEnv(fx.db, undefined, {
    WINE_API_BASE_URL: s.url,
    WINE_API_EMAIL: 'a@b.c',
    WINE_API_PASSWORD: 'pw-limits',
    WINE_API_RETRIES: '3',
    ...extra,
  });

const listings = (s: RecordingServer) => s.requests.filter((r) => r.method === 'GET').length;

describe('WINE_API_MAX_BYTES', () => {
  it('fails a listing larger than the limit once decoded, naming the variable, without retrying or loading', async () => {
    const s = await upstream();
    const text = body(200);
    s.answers.set(LOGIN, loginOk);
    // Gzip-coded: what arrives is far smaller than the limit, what it decodes to is not.
    s.answers.set(LISTING, {
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(text),
    });
    const limit = 20 * 1024;
    expect(gzipSync(text).length).toBeLessThan(limit);
    expect(text.length).toBeGreaterThan(limit);

    const outcome = await inProcess(env(s, { WINE_API_MAX_BYTES: '20KiB' })).run();
    expect(outcome.run.status).toBe('failed');
    expect(outcome.run.error).toBe(
      `listing is larger than WINE_API_MAX_BYTES=${limit} bytes (decoded)` +
        `; nothing was loaded.` +
        ` Raise WINE_API_MAX_BYTES if the upstream's listing really is that large`,
    );
    expect(listings(s)).toBe(1);
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
  });

  it('loads a listing of exactly the limit', async () => {
    const s = await upstream();
    const text = body(20);
    s.answers.set(LOGIN, loginOk);
    s.answers.set(LISTING, { status: 200, headers: { 'content-type': 'application/json' }, body: text });
    const outcome = await inProcess(env(s, { WINE_API_MAX_BYTES: String(Buffer.byteLength(text)) })).run();
    expect(outcome.run.status, outcome.run.error ?? '').toBe('succeeded');
    expect(outcome.run.inserted).toBe(20);
  });
});

describe('the login answer', () => {
  it('fails at once when the login body is over 1 MiB, naming the addresses to check', async () => {
    const s = await upstream();
    s.answers.set(LOGIN, {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: `{"token":"tok","pad":"${'x'.repeat(1024 * 1024)}"}`,
    });
    s.answers.set(LISTING, { status: 200, headers: { 'content-type': 'application/json' }, body: body(3) });
    const outcome = await inProcess(env(s)).run();
    expect(outcome.run.status).toBe('failed');
    expect(outcome.run.error).toBe(
      `login response from ${s.url}/api/login is larger than 1 MiB` +
        `: no login answer is; check WINE_API_BASE_URL / WINE_API_LOGIN_URL`,
    );
    expect(s.requests.map((r) => r.method)).toEqual(['POST']);
  });
});
