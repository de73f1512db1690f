/**
 * Loopback targets never go through a proxy, whatever HTTP_PROXY, HTTPS_PROXY and NO_PROXY say: an
 * `http://localhost` login may carry the password in clear only because it never leaves the
 * machine. A recording server stands in for the proxy: it keeps every request sent to it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const fx = useSyncFixture('proxy_loopback', { simulator: { records: 30 } });
let proxy: RecordingServer;
let hook: Receiver;

beforeAll(async () => {
  proxy = await startRecordingServer();
  hook = await startReceiver();
});
afterAll(async () => {
  await proxy?.close();
  await hook?.close();
});

describe('with every proxy variable pointing at a recording proxy', () => {
  it('a loopback upstream and webhook are reached directly: nothing arrives at the proxy, the password included', async () => {
    const port = new URL(fx.sim.url).port;
    for (const base of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) {
      const r = await runCli(
        ['run'],
        fx.envWith({
          WINE_API_BASE_URL: base,
          HTTP_PROXY: proxy.url,
          http_proxy: proxy.url,
          HTTPS_PROXY: proxy.url,
          NO_PROXY: 'intranet.example',
          SYNC_NOTIFY_URL: hook.url,
          SYNC_NOTIFY_ON: 'all',
        }),
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toContain('go through a proxy');
    }
    expect(proxy.requests).toEqual([]);
    expect(hook.posts).toHaveLength(2);
    expect(await fx.db.rows('SELECT status FROM sync_runs ORDER BY id')).toEqual([
      { status: 'succeeded' },
      { status: 'succeeded' },
    ]);
  });

  it('a non-loopback upstream and webhook still go through it', async () => {
    const before = proxy.requests.length;
    const r = await runCli(
      ['run'],
      fx.envWith({
        WINE_API_BASE_URL: 'http://wine.example.invalid:8080',
        WINE_API_ALLOW_INSECURE_HTTP: 'true',
        WINE_API_RETRIES: '1',
        HTTP_PROXY: proxy.url,
        SYNC_NOTIFY_URL: 'http://hooks.example.invalid/hooks/T000/B000/not-a-loopback-hook',
      }),
    );
    expect(r.code).toBe(1);
    const seen = proxy.requests.slice(before).map((q) => `${q.method} ${q.url}`);
    expect(seen).toEqual([
      'POST http://wine.example.invalid:8080/api/login',
      'POST http://hooks.example.invalid/hooks/T000/B000/not-a-loopback-hook',
    ]);
  });
});
