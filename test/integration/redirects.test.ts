/**
 * Credentials never follow a redirect: the login's password stays with the login's origin, the
 * listing's token with the listing's origin, never over http after https, and nothing served
 * after a redirect that broke a rule is loaded. Real servers on loopback addresses, each
 * recording what it received; the CLI as a child process (NODE_EXTRA_CA_CERTS is read at start).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, syncEnv, tableText, tempDir } from '../support/harness.js';
import { listing } from '../support/listing.js';
import { describeWith, runs } from '../support/programs.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';
import { makeTestPki, type TestPki } from '../support/tls-and-proxy.js';

const hasOpenssl = runs('openssl', ['version']);
const LOGIN = '/api/login';
const LISTING = '/api/bulk-wine-reconciliation-data';
const EMAIL = 'a@b.c';
const PASSWORD = 'hunter2-secret';
const TOKEN = 'tok-3f9a7c1e5b2d4068a1c9e7f3b5d20486';

const rec = (id: number) =>
  `{"id":${id},"wpi":"WPI-${id}","inventory_bulk_wine":10,"inventory_finished_goods":2.25` +
  `,"inventory_sales":1.5,"vintage_forecast":null,"vintage_make":0.5,"first_sale":"2022-01-0${(id % 9) + 1}"}`;
const records = (n: number) => listing(Array.from({ length: n }, (_, i) => rec(i + 1)));
const json = (body: string) => ({ status: 200, headers: { 'content-type': 'application/json' }, body });
const redirect = (status: number, location: string) => ({ status, headers: { location }, body: 'moved' });
const loginOk = json(JSON.stringify({ token: TOKEN }));

const fx = useSyncFixture('redirects', { each: true });
let pki: TestPki;

beforeAll(async () => {
  if (hasOpenssl) pki = await makeTestPki('openssl', await tempDir());
});

async function server(options: Parameters<typeof startRecordingServer>[0] = {}): Promise<RecordingServer> {
  const s = await startRecordingServer(options);
  fx.onTeardown(() => s.close());
  return s;
}

/** `run --json` against `upstream`, its CA trusted; `run` is the run's JSON summary. */
async function sync(upstream: RecordingServer, ...args: string[]) {
  return syncWith(upstream, {}, ...args);
}

async function syncWith(upstream: RecordingServer, extra: Record<string, string>, ...args: string[]) {
  const env = {
    ...syncEnv(fx.db, undefined, {
      WINE_API_BASE_URL: upstream.url,
      WINE_API_EMAIL: EMAIL,
      WINE_API_PASSWORD: PASSWORD,
      ...extra,
    }),
    ...(hasOpenssl ? { NODE_EXTRA_CA_CERTS: pki.caFile } : {}),
  };
  const r = await runCli(['run', '--json', ...args], env);
  return { ...r, run: r.stdout ? JSON.parse(r.stdout) : undefined };
}

async function lastRunError(): Promise<string | null> {
  const [row] = await fx.db.rows<{ error: string | null }>('SELECT error FROM sync_runs ORDER BY id DESC LIMIT 1');
  return row!.error;
}

const everything = (s: RecordingServer) => s.requests.map((r) => JSON.stringify(r)).join('\n');

describe('the login', () => {
  it('does not follow a 307 to another host: that host receives nothing, and the run fails naming the Location', async () => {
    const upstream = await server();
    const thief = await server({ host: '127.0.0.2' });
    thief.answers.set(`POST /steal-login`, loginOk);
    upstream.answers.set(
      `POST ${LOGIN}`,
      redirect(307, `http://user:pw@127.0.0.2:${thief.port}/steal-login?ref=q-secret`),
    );

    const r = await sync(upstream);
    expect(r.code).toBe(1);
    expect(thief.requests).toEqual([]);
    // Not retried: a redirect away is no transient failure.
    expect(upstream.requests.map((q) => q.method + ' ' + q.url)).toEqual([`POST ${LOGIN}`]);
    const shown = `http://127.0.0.2:${thief.port}/steal-login`;
    for (const message of [await lastRunError(), r.run.error, r.stderr]) {
      expect(message).toContain(`login redirected (307) to ${shown}, away from ${upstream.url}`);
      expect(message).toContain('WINE_API_BASE_URL / WINE_API_LOGIN_URL');
      expect(message).not.toContain('q-secret');
      expect(message).not.toContain('user:pw');
    }
    expect(r.run.status).toBe('failed');
  });

  it('does not turn the login into a GET on a 302, even within its origin', async () => {
    const upstream = await server();
    upstream.answers.set(`POST ${LOGIN}`, redirect(302, '/auth/login'));
    upstream.answers.set('GET /auth/login', loginOk);
    const r = await sync(upstream);
    expect(r.code).toBe(1);
    expect(upstream.requests.map((q) => q.method + ' ' + q.url)).toEqual([`POST ${LOGIN}`]);
    expect(await lastRunError()).toContain(
      `login answered 302 redirecting to ${upstream.url}/auth/login: only a 307 or 308 may move the login`,
    );
  });
});

describe('within the origin', () => {
  it('follows a 307 of the login and a 302 of the listing within the same origin, and loads', async () => {
    const upstream = await server();
    upstream.answers.set(`POST ${LOGIN}`, redirect(307, '/auth/v2/login'));
    upstream.answers.set('POST /auth/v2/login', loginOk);
    upstream.answers.set(`GET ${LISTING}`, redirect(302, '/exports/listing.json?part=all'));
    upstream.answers.set('GET /exports/listing.json', json(records(7)));

    const r = await sync(upstream);
    expect(r.code, r.stderr).toBe(0);
    expect(r.run).toMatchObject({ status: 'succeeded', inserted: 7 });
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_current')).toEqual([{ n: 7 }]);
    // The password was re-POSTed, and the token sent, within the origin only.
    const moved = upstream.requests.find((q) => q.url === '/auth/v2/login')!;
    expect(moved.method).toBe('POST');
    expect(JSON.parse(moved.body)).toEqual({ email: EMAIL, password: PASSWORD });
    expect(upstream.requests.find((q) => q.url === '/exports/listing.json?part=all')?.headers.authorization).toBe(
      `Bearer ${TOKEN}`,
    );
  });

  it('applies WINE_API_ALLOW_INSECURE_HTTP to every hop: no http:// redirect to a host that is not loopback', async () => {
    const upstream = await server();
    upstream.answers.set(`POST ${LOGIN}`, loginOk);
    upstream.answers.set(`GET ${LISTING}`, redirect(302, 'http://wine.example.invalid/exports/listing.json'));
    const r = await sync(upstream);
    expect(r.code).toBe(1);
    expect(await lastRunError()).toBe(
      'listing redirected (302) to http://wine.example.invalid/exports/listing.json: http:// to wine.example.invalid would send credentials in clear text; use https:// or set WINE_API_ALLOW_INSECURE_HTTP=true',
    );
  });

  it('gives up after 5 redirects, naming the last Location', async () => {
    const upstream = await server();
    upstream.answers.set(`POST ${LOGIN}`, loginOk);
    upstream.answers.set(`GET ${LISTING}`, redirect(302, LISTING));
    const r = await sync(upstream);
    expect(r.code).toBe(1);
    expect(upstream.requests.filter((q) => q.method === 'GET')).toHaveLength(6);
    expect(await lastRunError()).toContain(`listing redirected more than 5 times (last to ${upstream.url}${LISTING})`);
  });
});

describeWith('openssl (Debian package openssl)', hasOpenssl, 'redirects over HTTPS', () => {
  it('follows a 307 of the login from http to https on the same host, and never back down', async () => {
    const secure = await server({ tls: pki.valid });
    const plain = await server();
    plain.answers.set(`POST ${LOGIN}`, redirect(307, `https://127.0.0.1:${secure.port}${LOGIN}`));
    secure.answers.set(`POST ${LOGIN}`, loginOk);
    secure.answers.set(`GET ${LISTING}`, json(records(3)));
    const r = await syncWith(secure, { WINE_API_LOGIN_URL: `${plain.url}${LOGIN}` });
    expect(r.code, r.stderr).toBe(0);
    expect(r.run).toMatchObject({ status: 'succeeded', inserted: 3 });
    expect(JSON.parse(secure.requests.find((q) => q.method === 'POST')!.body)).toEqual({
      email: EMAIL,
      password: PASSWORD,
    });

    // From https back to http, even on the same host: refused before the request.
    secure.answers.set(`POST ${LOGIN}`, redirect(308, `http://127.0.0.1:${plain.port}/login-again`));
    const before = plain.requests.length;
    const down = await sync(secure);
    expect(down.code).toBe(1);
    expect(plain.requests.length).toBe(before);
    expect(await lastRunError()).toContain(
      `login redirected (308) to http://127.0.0.1:${plain.port}/login-again, away from ${secure.url}`,
    );
  });

  it('never sends the token from https to http on the same host, loads nothing, and changes no row even with --allow-mass-delete', async () => {
    const upstream = await server({ tls: pki.valid });
    const plain = await server();
    upstream.answers.set(`POST ${LOGIN}`, loginOk);
    upstream.answers.set(`GET ${LISTING}`, json(records(10)));
    expect((await sync(upstream)).run).toMatchObject({ status: 'succeeded', inserted: 10 });
    const before = await tableText(fx.db);

    // A load balancer's `Location: http://…`, and a one-record listing on the plain-HTTP side.
    plain.answers.set(`GET ${LISTING}`, json(records(1)));
    upstream.answers.set(`GET ${LISTING}`, redirect(301, `http://127.0.0.1:${plain.port}${LISTING}?for_reporting=1`));
    const r = await sync(upstream, '--allow-mass-delete');
    expect(r.code).toBe(1);
    expect(plain.requests).toEqual([]);
    expect(everything(plain)).not.toContain(TOKEN);
    expect(r.run).toMatchObject({ status: 'failed', inserted: 0, deleted: 0 });
    expect(await lastRunError()).toBe(
      `listing redirected (301) from https to plain http` +
        ` (http://127.0.0.1:${plain.port}${LISTING})` +
        `: the token is never sent, nor a listing read, over http after https` +
        `; have the upstream (or its load balancer) redirect to https://` +
        `, or set WINE_API_BASE_URL / WINE_API_LOGIN_URL to the final address`,
    );
    expect(await tableText(fx.db)).toEqual(before);
  });

  it('follows a redirect to another https origin without the token (a pre-signed address), and loads it', async () => {
    const upstream = await server({ tls: pki.valid });
    // localhost is another origin than 127.0.0.1; the test certificate names both.
    const storage = await server({ tls: pki.valid, host: '127.0.0.1' });
    const storageUrl = `https://localhost:${storage.port}/exports/listing.json`;
    upstream.answers.set(`POST ${LOGIN}`, loginOk);
    upstream.answers.set(`GET ${LISTING}`, redirect(302, `${storageUrl}?X-Amz-Signature=sig-0042`));
    storage.answers.set('GET /exports/listing.json', json(records(4)));

    const r = await sync(upstream);
    expect(r.code, r.stderr).toBe(0);
    expect(r.run).toMatchObject({ status: 'succeeded', inserted: 4 });
    expect(storage.requests).toHaveLength(1);
    expect(storage.requests[0]!.headers.authorization).toBeUndefined();
    expect(everything(storage)).not.toContain(TOKEN);
    expect(upstream.requests.find((q) => q.method === 'GET')?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('fails clearly when the other origin wants the token (403), and loads nothing', async () => {
    const upstream = await server({ tls: pki.valid });
    const storage = await server({ tls: pki.valid });
    upstream.answers.set(`POST ${LOGIN}`, loginOk);
    upstream.answers.set(`GET ${LISTING}`, redirect(307, `https://localhost:${storage.port}/exports/listing.json`));
    storage.answers.set('GET /exports/listing.json', { status: 403, body: 'AccessDenied' });

    const r = await sync(upstream);
    expect(r.code).toBe(1);
    expect(storage.requests).toHaveLength(1);
    expect(everything(storage)).not.toContain(TOKEN);
    expect(await lastRunError()).toBe(
      `listing redirected to https://localhost:${storage.port}/exports/listing.json` +
        `, which answered 403` +
        `: the token is not sent to another origin than ${upstream.url}` +
        `; the upstream must redirect to an address that needs no token (a pre-signed one)` +
        `, or set WINE_API_BASE_URL to the address that serves the listing`,
    );
    expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation')).toEqual([{ n: 0 }]);
  });
});
