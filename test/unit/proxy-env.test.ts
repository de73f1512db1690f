import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { insecureHttpProblem } from '../../src/outbound/insecure-http.js';
import {
  bypassesProxy,
  isLoopbackHost,
  proxyFor,
  proxySecrets,
  readProxyEnv,
  redactUrl,
} from '../../src/outbound/proxy-env.js';

const read = (env: Record<string, string>) => {
  const problems: string[] = [];
  const config = readProxyEnv(env, problems);
  return { config, problems };
};
const bypass = (noProxy: string, url: string) =>
  bypassesProxy(read({ NO_PROXY: noProxy }).config.noProxy, new URL(url));

describe('proxy variables, read as curl reads them', () => {
  it('uses https_proxy/HTTPS_PROXY for https targets and http_proxy/HTTP_PROXY for http targets', () => {
    const { config } = read({ HTTPS_PROXY: 'http://secure-proxy:3128', HTTP_PROXY: 'http://plain-proxy:8080' });
    expect(proxyFor(config, 'https://wine.example.com/api/login')?.url).toBe('http://secure-proxy:3128/');
    expect(proxyFor(config, 'http://wine.example.com/api/login')?.url).toBe('http://plain-proxy:8080/');
    expect(proxyFor(read({ HTTP_PROXY: 'http://p:1' }).config, 'https://wine.example.com')).toBeUndefined();
  });

  it('lets lower case win over upper case, and names the variable used', () => {
    const { config } = read({
      https_proxy: 'http://lower:1',
      HTTPS_PROXY: 'http://upper:2',
      http_proxy: 'http://l:3',
      HTTP_PROXY: 'http://u:4',
    });
    expect(config.https).toEqual({ url: 'http://lower:1/', from: 'https_proxy' });
    expect(config.http).toEqual({ url: 'http://l:3/', from: 'http_proxy' });
    expect(read({ HTTPS_PROXY: 'http://upper:2', https_proxy: ' ' }).config.https?.from).toBe('HTTPS_PROXY');
    expect(read({ no_proxy: 'a.example', NO_PROXY: 'b.example' }).config.noProxy).toEqual(['a.example']);
  });

  it('takes a proxy without a scheme as http://, keeps credentials, refuses other schemes naming the variable', () => {
    expect(read({ HTTPS_PROXY: 'proxy.corp:3128' }).config.https?.url).toBe('http://proxy.corp:3128/');
    expect(read({ HTTPS_PROXY: 'https://u:p%40ss@proxy.corp:443' }).config.https?.url).toBe(
      'https://u:p%40ss@proxy.corp/',
    );
    expect(read({ HTTPS_PROXY: 'socks5://u:secret-pw@proxy:1080' }).problems).toEqual([
      'HTTPS_PROXY: only http:// and https:// proxies are supported (got "socks5://…")',
    ]);
    const bad = read({ http_proxy: 'http://user:secret-pw@[bad' }).problems;
    expect(bad).toEqual(['http_proxy: is not a URL (got "http://***@[bad")']);
  });

  it('reports a bad proxy variable through loadConfig as a configuration error without its password', () => {
    try {
      loadConfig(
        { DATABASE_URL: 'postgres://h/db', HTTPS_PROXY: 'ftp://user:hunter22-secret@proxy:21' },
        { api: false, database: true },
      );
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain('HTTPS_PROXY: only http:// and https:// proxies are supported');
      expect((error as Error).message).not.toContain('hunter22');
    }
  });

  it('lists the proxy password, decoded and as written, for the secret registry, and never the user name', () => {
    // The base64 of `alice:p@ss-word` is what a Proxy-Authorization header carries.
    const basic = Buffer.from('alice:p@ss-word').toString('base64');
    expect(proxySecrets(read({ HTTPS_PROXY: 'http://alice:p%40ss-word@proxy:3128' }).config)).toEqual([
      basic,
      'p%40ss-word',
      'p@ss-word',
    ]);
    expect(proxySecrets(read({ HTTPS_PROXY: 'http://alice@proxy:3128' }).config)).toEqual([]);
    expect(proxySecrets(read({}).config)).toEqual([]);
  });

  it('redacts the user information of a URL', () => {
    expect(redactUrl('http://alice:secret@proxy:3128/')).toBe('http://***@proxy:3128/');
    expect(redactUrl('alice:secret@proxy:3128')).toBe('***@proxy:3128');
    expect(redactUrl('http://proxy:3128/')).toBe('http://proxy:3128/');
  });
});

describe('NO_PROXY', () => {
  it('bypasses nothing when empty', () => {
    expect(bypass('', 'http://127.0.0.1:8080')).toBe(false);
    expect(bypass('', 'http://localhost:8080')).toBe(false);
    expect(proxyFor(read({ HTTP_PROXY: 'http://p:1' }).config, 'http://wine.example.com:9')?.url).toBe('http://p:1/');
  });
});

describe('loopback targets', () => {
  const proxies = read({ HTTP_PROXY: 'http://p:1', HTTPS_PROXY: 'http://p:2' }).config;
  const LOOPBACK = [
    'localhost',
    'LOCALHOST.',
    'wine.localhost',
    '127.0.0.1',
    '127.1.2.3',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[0:0:0:0:0:0:0:1]',
  ];

  it('are never proxied, whatever HTTP_PROXY, HTTPS_PROXY and NO_PROXY say', () => {
    for (const host of LOOPBACK) {
      expect(isLoopbackHost(new URL(`http://${host}/`).hostname), host).toBe(true);
      for (const scheme of ['http', 'https'])
        expect(proxyFor(proxies, `${scheme}://${host}:8080/api/login`), `${scheme} ${host}`).toBeUndefined();
    }
  });

  it('are exactly what is: other names and addresses still go through the proxy', () => {
    for (const host of [
      'localhost.example.com',
      'mylocalhost',
      '128.0.0.1',
      '10.0.0.1',
      '[::2]',
      '[::ffff:10.0.0.1]',
      '0x7f.example',
    ]) {
      expect(isLoopbackHost(new URL(`http://${host}/`).hostname), host).toBe(false);
      expect(proxyFor(proxies, `http://${host}/`)?.url, host).toBe('http://p:1/');
    }
  });

  it('cover every host the clear-text rule lets an http:// password go to', () => {
    for (const host of ['localhost', '127.0.0.1', '127.9.9.9', '[::1]', 'wine.example.com', '10.0.0.1']) {
      const url = new URL(`http://${host}:8080/`);
      if (insecureHttpProblem(url, false) === undefined) expect(proxyFor(proxies, url), host).toBeUndefined();
    }
  });

  it('* bypasses every host', () => {
    expect(bypass('*', 'https://wine.example.com')).toBe(true);
  });

  it('a name matches itself and its subdomains, with or without a leading dot, case-insensitively', () => {
    for (const entry of ['example.com', '.example.com', '*.example.com', 'EXAMPLE.COM']) {
      expect(bypass(entry, 'https://example.com'), entry).toBe(true);
      expect(bypass(entry, 'https://api.Example.com.'), entry).toBe(true);
      expect(bypass(entry, 'https://badexample.com'), entry).toBe(false);
      expect(bypass(entry, 'https://example.com.evil.org'), entry).toBe(false);
    }
  });

  it('splits on commas and spaces and checks every entry', () => {
    expect(bypass('intranet.local, other.example ,wine.example.com', 'https://wine.example.com')).toBe(true);
    expect(bypass('intranet.local other.example', 'https://wine.example.com')).toBe(false);
  });

  it('host:port bypasses only that port (the scheme default when the URL has none)', () => {
    expect(bypass('wine.example.com:8443', 'https://wine.example.com:8443')).toBe(true);
    expect(bypass('wine.example.com:8443', 'https://wine.example.com')).toBe(false);
    expect(bypass('wine.example.com:443', 'https://wine.example.com')).toBe(true);
    expect(bypass('127.0.0.1:8080', 'http://127.0.0.1:8080')).toBe(true);
    expect(bypass('127.0.0.1:8080', 'http://127.0.0.1:8081')).toBe(false);
  });

  it('IP addresses and CIDR blocks match addresses, IPv6 too', () => {
    expect(bypass('127.0.0.1', 'http://127.0.0.1:8080')).toBe(true);
    expect(bypass('10.0.0.0/8', 'https://10.20.30.40')).toBe(true);
    expect(bypass('10.0.0.0/8', 'https://11.0.0.1')).toBe(false);
    expect(bypass('::1', 'http://[::1]:8080')).toBe(true);
    expect(bypass('[::1]:8080', 'http://[::1]:8080')).toBe(true);
    expect(bypass('[::1]:8080', 'http://[::1]:9090')).toBe(false);
    expect(bypass('fd00::/8', 'https://[fd12::5]')).toBe(true);
    // An address entry does not match a name, nor a name an address.
    expect(bypass('127.0.0.1', 'http://localhost:8080')).toBe(false);
    expect(bypass('localhost', 'http://127.0.0.1:8080')).toBe(false);
  });
});
