/**
 * sync_runs.error is read by BI users (sync_freshness.last_run_error): the upstream's error text
 * stored there passes through the same secret scrubbing as the logs, and only secrets are censored.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, syncEnv } from '../support/harness.js';

const fx = useSyncFixture('stored_errors');
const PASSWORD = 'pw9'; // shorter than any value the logs would censor
const TOKEN = 'ab.cd.ef'; // JWT-shaped, 8 characters

/** An upstream that echoes what it was sent in its error bodies, as some frameworks' debug pages do. */
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.url?.startsWith('/fail/api/login')) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`internal error while handling ${body}`);
      } else if (req.url?.startsWith('/ok/api/login')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: TOKEN }));
      } else {
        res
          .writeHead(502, { 'content-type': 'text/plain' })
          .end(`bad gateway for Authorization: ${req.headers.authorization ?? ''}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('sync_runs.error', () => {
  const env = (base: string) => ({
    ...syncEnv(fx.db),
    WINE_API_BASE_URL: base,
    WINE_API_EMAIL: 'a@b.c',
    WINE_API_PASSWORD: PASSWORD,
    WINE_API_RETRIES: '1',
  });

  it('holds the login error body with the password censored, however short', async () => {
    const r = await runCli(['run', '--json'], env(`${url}/fail`));
    expect(r.code, r.stderr).toBe(1);
    const [row] = await fx.db.rows<{ error: string }>('SELECT error FROM sync_runs ORDER BY id DESC LIMIT 1');
    expect(row!.error).toContain('login failed with HTTP 500');
    expect(row!.error).toContain('[Redacted]');
    expect(row!.error).not.toContain(PASSWORD);
    expect(JSON.parse(r.stdout).error).not.toContain(PASSWORD);
  });

  it('holds the listing error body with the token censored', async () => {
    const r = await runCli(['run', '--json'], env(`${url}/ok`));
    expect(r.code, r.stderr).toBe(1);
    const [row] = await fx.db.rows<{ error: string }>('SELECT error FROM sync_runs ORDER BY id DESC LIMIT 1');
    expect(row!.error).toContain('listing failed with HTTP 502');
    expect(row!.error).toContain('Bearer [Redacted]');
    expect(row!.error).not.toContain(TOKEN);
    const [bi] = await fx.db.rows<{ last_run_error: string }>(
      `SELECT last_run_error FROM "${fx.db.schema}_bi".sync_freshness`,
    );
    expect(bi!.last_run_error).toContain('[Redacted]');
    expect(bi!.last_run_error).not.toContain(TOKEN);
  });

  it('keeps the rest of the text intact: a webhook path `/` and a proxy user name are not secrets', async () => {
    const r = await runCli(['run'], {
      ...env(`${url}/fail`),
      WINE_API_EMAIL: 'proxyuser@b.c',
      SYNC_NOTIFY_URL: 'http://127.0.0.1:9/',
      HTTPS_PROXY: 'http://proxyuser:proxy-Passw0rd-long@127.0.0.1:9',
    });
    expect(r.code, r.stderr).toBe(1);
    const [row] = await fx.db.rows<{ error: string }>('SELECT error FROM sync_runs ORDER BY id DESC LIMIT 1');
    expect(row!.error).toBe(
      'login failed with HTTP 500 (text/plain): "internal error while handling {\\"email\\":\\"proxyuser@b.c\\",\\"password\\":\\"[Redacted]\\"}" (gave up after 1 attempts)',
    );
  });
});
