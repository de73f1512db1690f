/**
 * Upstream over HTTPS with a private CA, and through a real proxy (Debian's tinyproxy): the
 * operator's first-day problems. The CLI runs as a child process, as Node reads
 * NODE_EXTRA_CA_CERTS only at start.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { inProcess, runCli, startCli, syncEnv } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';
import { startReceiver } from '../support/receiver.js';
import { needs, openTestNetwork } from '../support/test-network.js';
import {
  issueServerCertificate,
  makeTestPki,
  startTinyproxy,
  type TestPki,
  type Tinyproxy,
} from '../support/tls-and-proxy.js';

const hasOpenssl = runs('openssl', ['version']);
const hasTinyproxy = runs('tinyproxy', ['-v']);
/**
 * Where the proxied upstreams listen: the host end of a network of the file's own (a namespace and a
 * veth pair, 198.18.0.0/15), since loopback targets are never proxied; made only when the proxy runs.
 */
const network = hasOpenssl && hasTinyproxy ? await openTestNetwork() : undefined;
const SITE = network?.ok ? network.network.address : undefined;
const RECORDS = 120;
const PROXY_USER = 'sync-user';
const PROXY_PASSWORD = 'proxy-Pa55word-xyz';

const portOf = (sim: Simulator) => new URL(sim.url).port;
/** tinyproxy logs each request line; a tunnel shows as `CONNECT host:port`. */
const tunnelsTo = (log: string, sim: Simulator) =>
  log.split('\n').filter((l) => l.includes(`CONNECT ${new URL(sim.url).host} `)).length;
/** …and a forwarded request (what http:// targets get, as with curl) as `GET http://host:port/path`. */
const forwardedTo = (log: string, url: string) =>
  log.split('\n').filter((l) => new RegExp(`: (GET|POST|PUT) ${url.replace(/[.?]/g, '\\$&')}`).test(l)).length;

const fx = useSyncFixture('proxy_tls');
let pki: TestPki;

beforeAll(async () => {
  if (hasOpenssl) pki = await makeTestPki('openssl', fx.dir);
});

/** A simulator of this file's records, over HTTPS with `tls`; closed with the fixture. */
async function sim(tls?: { key: Buffer; cert: Buffer }, host?: string): Promise<Simulator> {
  const s = await startSimulator({ records: RECORDS, seed: 12, tls, host });
  fx.onTeardown(() => s.close());
  return s;
}

/** A tinyproxy in the fixture's directory, stopped with the fixture. */
async function tinyproxy(options: Parameters<typeof startTinyproxy>[2]): Promise<Tinyproxy> {
  const p = await startTinyproxy('tinyproxy', fx.dir, options);
  fx.onTeardown(() => p.stop());
  return p;
}

async function httpsGet(url: string, caFile: string): Promise<{ status: number }> {
  const ca = await readFile(caFile);
  return new Promise((resolve, reject) => {
    const req = request(url, { ca }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.on('error', reject);
    req.end();
  });
}

async function retryFor<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function lastRun(): Promise<{ status: string; inserted: number; error: string | null }> {
  const [row] = await fx.db.rows<{ status: string; inserted: number; error: string | null }>(
    'SELECT status, inserted::int, error FROM sync_runs ORDER BY id DESC LIMIT 1',
  );
  return row!;
}

describeWith(
  'openssl (Debian package openssl)',
  hasOpenssl,
  'HTTPS upstream with a private certificate authority',
  () => {
    it('fails at once, without retries, naming the host, the TLS reason and NODE_EXTRA_CA_CERTS, when the CA is not trusted', async () => {
      const upstream = await sim(pki.valid);
      const ctx = inProcess(syncEnv(fx.db, upstream, { WINE_API_RETRIES: '5' }));
      const outcome = await ctx.run();
      expect(outcome.run.status).toBe('failed');
      expect(outcome.run.error).toMatch(
        new RegExp(
          `^TLS: the certificate of 127\\.0\\.0\\.1:${portOf(upstream)} is not trusted` +
            ` \\(.*certificate.*\\); .*NODE_EXTRA_CA_CERTS=`,
        ),
      );
      expect(upstream.stats.connections).toBe(1);
      expect(upstream.stats.logins).toBe(0);
    });

    it('succeeds with the CA in NODE_EXTRA_CA_CERTS', async () => {
      const upstream = await sim(pki.valid);
      const r = await runCli(['run'], { ...syncEnv(fx.db, upstream), NODE_EXTRA_CA_CERTS: pki.caFile });
      expect(r.code, r.stderr).toBe(0);
      expect(upstream.url).toMatch(/^https:\/\//);
      expect(await lastRun()).toMatchObject({ status: 'succeeded', error: null });
      expect(await fx.db.rows('SELECT count(*)::int AS n FROM bulk_wine_reconciliation_current')).toEqual([
        { n: RECORDS },
      ]);
    });

    it('says an expired certificate has expired (and does not retry)', async () => {
      const upstream = await sim(pki.expired);
      const r = await runCli(['run'], {
        ...syncEnv(fx.db, upstream, { WINE_API_RETRIES: '5' }),
        NODE_EXTRA_CA_CERTS: pki.caFile,
      });
      expect(r.code).toBe(1);
      const { status, error } = await lastRun();
      expect(status).toBe('failed');
      expect(error).toMatch(
        new RegExp(
          `^TLS: the certificate of 127\\.0\\.0\\.1:${portOf(upstream)} is outside its validity period` +
            ` \\(certificate has expired\\); the server's certificate must be renewed`,
        ),
      );
      expect(upstream.stats.connections).toBe(1);
    });

    it('says a certificate for another host name is for another name', async () => {
      const upstream = await sim(pki.wrongHost);
      const r = await runCli(['run'], {
        ...syncEnv(fx.db, upstream, { WINE_API_RETRIES: '5' }),
        NODE_EXTRA_CA_CERTS: pki.caFile,
      });
      expect(r.code).toBe(1);
      const { error } = await lastRun();
      expect(error).toMatch(
        new RegExp(
          `^TLS: the certificate of 127\\.0\\.0\\.1:${portOf(upstream)} is not issued for that name` +
            ` \\(it names DNS:wrong\\.example\\.com\\)` +
            `; use a host name`,
        ),
      );
      expect(r.stderr).toContain('is not issued for that name');
      expect(upstream.stats.connections).toBe(1);
    });

    it('`simulate --tls-cert --tls-key` serves the simulated upstream over HTTPS', async () => {
      await writeFile(join(fx.dir, 'sim.pem'), pki.valid.cert);
      await writeFile(join(fx.dir, 'sim.key'), pki.valid.key);
      const port = await freePort();
      const cli = startCli(
        [
          'simulate',
          '--port',
          String(port),
          '--records',
          '5',
          '--tls-cert',
          join(fx.dir, 'sim.pem'),
          '--tls-key',
          join(fx.dir, 'sim.key'),
        ],
        {},
      );
      try {
        const body = await retryFor(30_000, () =>
          httpsGet(`https://127.0.0.1:${port}/api/bulk-wine-reconciliation-data`, pki.caFile),
        );
        // The simulator answered over verified TLS (400: this bare request lacks the login headers).
        expect(body.status).toBe(400);
      } finally {
        cli.kill('SIGTERM');
        await cli.result;
      }
    });
  },
);

describeWith(
  needs('openssl, tinyproxy (Debian packages)', network),
  network?.ok === true,
  'through a proxy (tinyproxy)',
  () => {
    let httpsSim: Simulator;
    let httpSim: Simulator;
    let proxy: Tinyproxy;
    let authProxy: Tinyproxy;
    let deadProxy: string;
    let siteCert: { key: Buffer; cert: Buffer };
    /** An http:// upstream on SITE is not loopback: its clear-text login must be allowed. */
    const siteEnv = (upstream: Simulator, extra: Record<string, string> = {}) =>
      syncEnv(fx.db, upstream, { WINE_API_ALLOW_INSECURE_HTTP: 'true', ...extra });

    beforeAll(async () => {
      // Registered first, so closed last: after the upstreams that listen on it.
      if (network?.ok) fx.onTeardown(() => network.network.close());
      siteCert = await issueServerCertificate('openssl', fx.dir, 'site', SITE!, `IP:${SITE!}`);
      httpsSim = await sim(siteCert, SITE);
      httpSim = await sim(undefined, SITE);
      // CONNECT only to the https upstream: http:// requests are forwarded, they need no tunnel.
      const connectPorts = [Number(portOf(httpsSim))];
      proxy = await tinyproxy({ connectPorts });
      authProxy = await tinyproxy({ connectPorts, basicAuth: { user: PROXY_USER, password: PROXY_PASSWORD } });
      // Nothing listens here: a request sent to it fails.
      deadProxy = `http://127.0.0.1:${await freePort()}`;
    });

    it('tunnels login and listing to an https upstream through HTTPS_PROXY (CONNECT), and logs the proxy', async () => {
      const before = tunnelsTo(await proxy.log(), httpsSim);
      const r = await runCli(['run'], {
        ...siteEnv(httpsSim),
        NODE_EXTRA_CA_CERTS: pki.caFile,
        HTTPS_PROXY: proxy.url,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(await lastRun()).toMatchObject({ status: 'succeeded' });
      expect(tunnelsTo(await proxy.log(), httpsSim) - before).toBe(2);
      expect(r.stderr).toContain('"msg":"listing requests go through a proxy"');
      expect(r.stderr).toContain(`"proxy":"${proxy.url}/","from":"HTTPS_PROXY"`);
    });

    it('prefers lower-case http_proxy over HTTP_PROXY for an http upstream, and forwards its requests in absolute form', async () => {
      const before = forwardedTo(await proxy.log(), `${httpSim.url}/api/`);
      const ctx = inProcess(siteEnv(httpSim, { http_proxy: proxy.url, HTTP_PROXY: deadProxy }));
      const outcome = await ctx.run();
      expect(outcome.run.status, outcome.run.error ?? '').toBe('succeeded');
      const log = await proxy.log();
      expect(forwardedTo(log, `${httpSim.url}/api/login`)).toBeGreaterThan(0);
      expect(forwardedTo(log, `${httpSim.url}/api/bulk-wine-reconciliation-data?for_reporting=1`)).toBeGreaterThan(0);
      expect(forwardedTo(log, `${httpSim.url}/api/`) - before).toBe(2);
      expect(tunnelsTo(log, httpSim)).toBe(0);
    });

    it('connects directly to a host listed in NO_PROXY, and only on the listed port', async () => {
      const before = forwardedTo(await proxy.log(), `${httpSim.url}/api/`);
      const bypassed = await inProcess(
        siteEnv(httpSim, { HTTP_PROXY: deadProxy, NO_PROXY: `intranet.example, ${SITE!}:${portOf(httpSim)}` }),
      ).run();
      expect(bypassed.run.status, bypassed.run.error ?? '').toBe('succeeded');

      const otherPort = await inProcess(
        siteEnv(httpSim, { HTTP_PROXY: proxy.url, no_proxy: `${SITE!}:${Number(portOf(httpSim)) + 1}` }),
      ).run();
      expect(otherPort.run.status).toBe('succeeded');
      // Only the second run passed through the proxy.
      expect(forwardedTo(await proxy.log(), `${httpSim.url}/api/`) - before).toBe(2);
    });

    it('sends the credentials in the proxy URL (Proxy-Authorization) and never shows them', async () => {
      const auth = `http://${PROXY_USER}:${PROXY_PASSWORD}@${new URL(authProxy.url).host}`;
      const before = tunnelsTo(await authProxy.log(), httpsSim);
      const r = await runCli(['run', '--dry-run'], {
        ...siteEnv(httpsSim, { LOG_LEVEL: 'trace' }),
        NODE_EXTRA_CA_CERTS: pki.caFile,
        HTTPS_PROXY: auth,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(tunnelsTo(await authProxy.log(), httpsSim) - before).toBe(2);
      expect(r.stderr).toContain(`"proxy":"http://***@${new URL(authProxy.url).host}/"`);
      expect(r.stderr + r.stdout).not.toContain(PROXY_PASSWORD);
    });

    it('fails at once, naming the variable and what to fix, when the proxy wants credentials (401/407)', async () => {
      const wrong = `http://${PROXY_USER}:wrong-${PROXY_PASSWORD}@${new URL(authProxy.url).host}`;
      const logins = httpsSim.stats.logins;
      for (const HTTPS_PROXY of [authProxy.url, wrong]) {
        const before = tunnelsTo(await authProxy.log(), httpsSim);
        const r = await runCli(['run'], {
          ...siteEnv(httpsSim, { WINE_API_RETRIES: '5' }),
          NODE_EXTRA_CA_CERTS: pki.caFile,
          HTTPS_PROXY,
        });
        expect(r.code).toBe(1);
        const { error } = await lastRun();
        expect(error).toMatch(
          /^login request to https:\/\/[\d.]+:\d+ failed: the proxy from HTTPS_PROXY refused to connect to [\d.]+:\d+ \(HTTP 40[17]\); the proxy wants credentials: put them in HTTPS_PROXY/,
        );
        expect(r.stderr + error).not.toContain(PROXY_PASSWORD);
        // One CONNECT: the refusal is not retried.
        expect(tunnelsTo(await authProxy.log(), httpsSim) - before).toBe(1);
      }
      expect(httpsSim.stats.logins).toBe(logins);
    });

    it('sends the SYNC_NOTIFY_URL webhook through the proxy too', async () => {
      const hook = await startReceiver(undefined, SITE);
      // CONNECT to 443 only, like a stock proxy: the http:// webhook is forwarded, not tunnelled.
      const hookProxy = await tinyproxy({ connectPorts: [443] });
      try {
        // The upstream is exempt (NO_PROXY); the webhook is not.
        const env = siteEnv(httpSim, {
          HTTP_PROXY: hookProxy.url,
          NO_PROXY: `${SITE!}:${portOf(httpSim)}`,
          SYNC_NOTIFY_URL: hook.url,
          SYNC_NOTIFY_ON: 'all',
        });
        const r = await runCli(['run'], env);
        expect(r.code, r.stderr).toBe(0);
        expect(hook.posts).toHaveLength(1);
        expect(forwardedTo(await hookProxy.log(), hook.url)).toBe(1);
      } finally {
        await hook.close();
      }
    });

    it('says so when the proxy does not allow a tunnel to the https upstream port (403)', async () => {
      const other = await sim(siteCert, SITE);
      const outcome = await inProcess(siteEnv(other, { HTTPS_PROXY: proxy.url, WINE_API_RETRIES: '5' })).run();
      expect(outcome.run.status).toBe('failed');
      expect(outcome.run.error).toMatch(
        /the proxy from HTTPS_PROXY refused to connect to [\d.]+:\d+ \(HTTP 403\); the proxy does not allow a tunnel/,
      );
      expect(other.stats.connections).toBe(0);
    });
  },
);
