/**
 * Through Debian's Squid with its packaged rules (test/support/squid.ts says what the fixture
 * changes: port, pid and log paths, nothing in the rules), as a corporate proxy would be:
 * `http://` requests are forwarded in absolute form (the packaged rules deny CONNECT to any port
 * but 443, so a tunnel for http:// fails with 403), `https://` goes through CONNECT to 443.
 *
 * The https:// upstream must therefore listen on port 443, and on an address other than loopback
 * (loopback targets are never proxied): the host end of a network of the file's own (a namespace
 * and a veth pair, 198.18.0.0/15, test/support/test-network.ts), which needs root, as CI has.
 * Where binding 443 is refused (or taken), the smallest honest deviation is taken and printed: one
 * line adds the simulator's port to `SSL_ports`.
 */
import { existsSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { beforeAll, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, syncEnv } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';
import { startReceiver } from '../support/receiver.js';
import { PACKAGED_CONFIG, SQUID, startSquid, type Squid } from '../support/squid.js';
import { needs, openTestNetwork } from '../support/test-network.js';
import { issueServerCertificate, makeTestPki, type TestPki } from '../support/tls-and-proxy.js';

const hasOpenssl = runs('openssl', ['version']);
const hasSquid = runs(SQUID, ['-v']) && existsSync(PACKAGED_CONFIG);
const hasPushgateway = runs('prometheus-pushgateway');
/** Where the upstreams, the webhook and the Pushgateway listen: loopback targets are never proxied. */
const network = hasOpenssl && hasSquid ? await openTestNetwork() : undefined;
const SITE = network?.ok ? network.network.address : undefined;
const RECORDS = 90;
const PROXY_USER = 'sync-user';
// '@' and ':' must be percent-encoded in the URL: the test proves they are decoded for the header.
const PROXY_PASSWORD = 'sq@id:Pa55-word';
const PROXY_PASSWORD_IN_URL = encodeURIComponent(PROXY_PASSWORD);

// The only suite of the file: when it is skipped, vitest runs no hooks of the file either.
const fx = useSyncFixture('proxy_squid');
let pki: TestPki;
/** The upstream as documented: login over http://, listing over https:// on 443. */
let upstream: Simulator;
/** A second upstream over plain HTTP only. */
let plainUpstream: Simulator;
let sslPortAdded: number | undefined;
let squid: Squid;
let authSquid: Squid;

const hostOf = (url: string) => new URL(url).host;

/** The TLS simulator on port 443 of SITE, its certificate issued for that address. */
async function upstreamOn443(): Promise<{ sim: Simulator; sslPortAdded?: number }> {
  const host = SITE!;
  const tls = await issueServerCertificate('openssl', fx.dir, 'squid-upstream', host, `IP:${host}`);
  try {
    return { sim: await startSimulator({ records: RECORDS, seed: 31, tls, host, port: 443, plainHttp: {} }) };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'EACCES' && code !== 'EADDRINUSE') throw error;
    const sim = await startSimulator({ records: RECORDS, seed: 31, tls, host, plainHttp: {} });
    const port = Number(new URL(sim.url).port);
    console.warn(
      `\n*** proxy-squid: cannot listen on port 443 of ${host} (${code})` +
        `; Squid's SSL_ports gets port ${port} added (the one deviation from its packaged rules) ***\n`,
    );
    return { sim, sslPortAdded: port };
  }
}

/** Access-log lines with this method and URL (forwarded: http://host:port/path; CONNECT: host:port). */
function logged(log: string, method: string, target: string): string[] {
  return log
    .split('\n')
    .filter((line) => line.split(/\s+/)[5] === method && (line.split(/\s+/)[6] ?? '').startsWith(target));
}

async function lastRun(): Promise<{ status: string; inserted: number; error: string | null }> {
  const [row] = await fx.db.rows<{ status: string; inserted: number; error: string | null }>(
    'SELECT status, inserted::int, error FROM sync_runs ORDER BY id DESC LIMIT 1',
  );
  return row!;
}

describeWith(
  needs('openssl, squid (Debian packages)', network),
  network?.ok === true,
  'through a stock Squid (Debian packaged rules)',
  () => {
    beforeAll(async () => {
      // Registered first, so closed last: after the upstreams that listen on it.
      if (network?.ok) fx.onTeardown(() => network.network.close());
      pki = await makeTestPki('openssl', fx.dir);
      ({ sim: upstream, sslPortAdded } = await upstreamOn443());
      fx.onTeardown(() => upstream.close());
      plainUpstream = await startSimulator({ records: RECORDS, seed: 31, host: SITE });
      fx.onTeardown(() => plainUpstream.close());
      squid = await startSquid('openssl', { extraSslPort: sslPortAdded });
      fx.onTeardown(() => squid.stop());
      authSquid = await startSquid('openssl', {
        extraSslPort: sslPortAdded,
        basicAuth: { user: PROXY_USER, password: PROXY_PASSWORD },
      });
      fx.onTeardown(() => authSquid.stop());
    });

    /** The upstream's documented addresses: login over http://, listing over https://. */
    const specEnv = (extra: Record<string, string>) => ({
      ...syncEnv(fx.db, upstream, {
        WINE_API_LOGIN_URL: `${upstream.plainUrl!}/api/login`,
        WINE_API_ALLOW_INSECURE_HTTP: 'true',
        ...extra,
      }),
      NODE_EXTRA_CA_CERTS: pki.caFile,
    });

    it('runs an http:// login (forwarded POST) and an https:// listing (CONNECT to 443) through it', async () => {
      expect(new URL(upstream.url).port === '' || sslPortAdded !== undefined).toBe(true);
      const r = await runCli(['run'], specEnv({ HTTP_PROXY: squid.url, HTTPS_PROXY: squid.url }));
      expect(r.code, r.stderr).toBe(0);
      expect(await lastRun()).toMatchObject({ status: 'succeeded', inserted: RECORDS, error: null });
      const log = await squid.accessLog();
      const [login] = logged(log, 'POST', `${upstream.plainUrl!}/api/login`);
      expect(login).toMatch(/ TCP_MISS\/200 /);
      const [tunnel] = logged(
        log,
        'CONNECT',
        hostOf(upstream.url).includes(':') ? hostOf(upstream.url) : `${hostOf(upstream.url)}:443`,
      );
      expect(tunnel).toMatch(/ TCP_TUNNEL\/200 /);
      // Nothing was tunnelled to the http:// port.
      expect(logged(log, 'CONNECT', hostOf(upstream.plainUrl!))).toEqual([]);
      expect(r.stderr).toContain('"msg":"login requests go through a proxy"');
      expect(r.stderr).toContain(`"proxy":"${squid.url}/","from":"HTTP_PROXY"`);
    });

    it('runs an http://-only upstream through it: the login POST and the listing GET are forwarded, never tunnelled', async () => {
      const before = (await squid.accessLog()).length;
      const { logins, listings } = plainUpstream.stats;
      const r = await runCli(
        ['run', '--dry-run'],
        syncEnv(fx.db, plainUpstream, { WINE_API_ALLOW_INSECURE_HTTP: 'true', HTTP_PROXY: squid.url }),
      );
      expect(r.code, r.stderr).toBe(0);
      expect(await lastRun()).toMatchObject({ status: 'succeeded', error: null });
      expect(plainUpstream.stats).toMatchObject({ logins: logins + 1, listings: listings + 1 });
      const log = (await squid.accessLog()).slice(before);
      expect(logged(log, 'POST', `${plainUpstream.url}/api/login`)).toEqual([expect.stringMatching(/ TCP_MISS\/200 /)]);
      // Squid logs the URL without its query (strip_query_terms).
      expect(logged(log, 'GET', `${plainUpstream.url}/api/bulk-wine-reconciliation-data`)).toEqual([
        expect.stringMatching(/ TCP_MISS\/200 /),
      ]);
      expect(log).not.toContain('CONNECT');
      expect(log).not.toContain('TCP_DENIED');
    });

    it('sends the SYNC_NOTIFY_URL webhook through it as a forwarded POST', async () => {
      const hook = await startReceiver(undefined, SITE);
      fx.onTeardown(() => hook.close());
      const before = (await squid.accessLog()).length;
      const env = syncEnv(fx.db, plainUpstream, {
        WINE_API_ALLOW_INSECURE_HTTP: 'true',
        HTTP_PROXY: squid.url,
        NO_PROXY: hostOf(plainUpstream.url),
        SYNC_NOTIFY_URL: hook.url,
        SYNC_NOTIFY_ON: 'all',
      });
      const r = await runCli(['run', '--dry-run'], env);
      expect(r.code, r.stderr).toBe(0);
      expect(hook.posts).toHaveLength(1);
      const log = (await squid.accessLog()).slice(before);
      expect(logged(log, 'POST', `http://${hostOf(hook.url)}/`)).toHaveLength(1);
      // The upstream was exempt (NO_PROXY).
      expect(log).not.toContain(hostOf(plainUpstream.url));
    });

    describeWith('prometheus-pushgateway (Debian package)', hasPushgateway, 'and the Pushgateway', () => {
      let gateway: ChildProcess;
      let gatewayUrl: string;

      beforeAll(async () => {
        const port = await freePort();
        gatewayUrl = `http://${SITE!}:${port}`;
        gateway = spawn('prometheus-pushgateway', [`--web.listen-address=${SITE!}:${port}`], { stdio: 'ignore' });
        fx.onTeardown(() => gateway.kill('SIGKILL'));
        for (const deadline = Date.now() + 30_000; ;) {
          const ready = await fetch(`${gatewayUrl}/-/ready`).then(
            (r) => r.ok,
            () => false,
          );
          if (ready) break;
          if (Date.now() > deadline) throw new Error('the Pushgateway did not become ready');
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      });

      it('pushes the metrics through it as a forwarded PUT', async () => {
        const before = (await squid.accessLog()).length;
        const env = syncEnv(fx.db, plainUpstream, {
          WINE_API_ALLOW_INSECURE_HTTP: 'true',
          HTTP_PROXY: squid.url,
          NO_PROXY: hostOf(plainUpstream.url),
          SYNC_PUSHGATEWAY_URL: gatewayUrl,
        });
        const r = await runCli(['run', '--dry-run'], env);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).toContain('metrics pushed');
        const log = (await squid.accessLog()).slice(before);
        expect(logged(log, 'PUT', `${gatewayUrl}/metrics/job/wine_recon_sync`)).toEqual([
          expect.stringMatching(/ TCP_MISS\/200 /),
        ]);
        expect(await (await fetch(`${gatewayUrl}/metrics`)).text()).toContain('job="wine_recon_sync"');
      });
    });

    it('uses the credentials in the proxy URLs with a Squid that requires a login, and never shows them', async () => {
      const auth = `http://${PROXY_USER}:${PROXY_PASSWORD_IN_URL}@${hostOf(authSquid.url)}`;
      const r = await runCli(['run'], specEnv({ HTTP_PROXY: auth, HTTPS_PROXY: auth, LOG_LEVEL: 'trace' }));
      expect(r.code, r.stderr).toBe(0);
      expect(await lastRun()).toMatchObject({ status: 'succeeded', error: null });
      const log = await authSquid.accessLog();
      // Squid logs the authenticated user name in its 8th field: both requests carried the login.
      const [login] = logged(log, 'POST', `${upstream.plainUrl!}/api/login`);
      expect(login?.split(/\s+/)[7]).toBe(PROXY_USER);
      const [tunnel] = logged(
        log,
        'CONNECT',
        hostOf(upstream.url).includes(':') ? hostOf(upstream.url) : `${hostOf(upstream.url)}:443`,
      );
      expect(tunnel?.split(/\s+/)[7]).toBe(PROXY_USER);
      expect(r.stderr).toContain(`"proxy":"http://***@${hostOf(authSquid.url)}/","from":"HTTP_PROXY"`);
      const basic = Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64');
      for (const secret of [PROXY_PASSWORD, PROXY_PASSWORD_IN_URL, basic]) {
        expect(r.stderr + r.stdout).not.toContain(secret);
        expect(log).not.toContain(secret);
      }
    });

    it('fails at once, naming HTTP_PROXY and what to fix, when the login through it has no or wrong credentials (407)', async () => {
      const logins = upstream.stats.logins;
      const wrong = `http://${PROXY_USER}:wrong-${PROXY_PASSWORD_IN_URL}@${hostOf(authSquid.url)}`;
      for (const HTTP_PROXY of [authSquid.url, wrong]) {
        const before = (await authSquid.accessLog()).length;
        const r = await runCli(['run'], specEnv({ HTTP_PROXY, HTTPS_PROXY: squid.url, WINE_API_RETRIES: '5' }));
        expect(r.code).toBe(1);
        const { error } = await lastRun();
        expect(error).toMatch(
          /^login request to http:\/\/[\d.]+:\d+ failed: the proxy from HTTP_PROXY refused to forward the request to [\d.]+:\d+ \(HTTP 407\); the proxy wants credentials: put them in HTTP_PROXY/,
        );
        expect(r.stderr + error).not.toContain(PROXY_PASSWORD_IN_URL);
        // One request: the refusal is not retried.
        const log = (await authSquid.accessLog()).slice(before);
        expect(logged(log, 'POST', `${upstream.plainUrl!}/api/login`)).toEqual([
          expect.stringMatching(/ TCP_DENIED\/407 /),
        ]);
      }
      expect(upstream.stats.logins).toBe(logins);
    });
  },
);
