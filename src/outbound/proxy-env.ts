/**
 * Outbound proxy settings, read the way curl reads them: `https_proxy`/`HTTPS_PROXY` for https://
 * targets and `http_proxy`/`HTTP_PROXY` for http:// ones (lower case wins), `no_proxy`/`NO_PROXY`
 * for the exceptions. Pure functions, a leaf shared by config.ts (which hands in the environment)
 * and the HTTP client (extract/http/), which routes each request by them.
 */
import { BlockList, isIP } from 'node:net';
import { decodeOrKeep, urlSecrets } from '../text/secret-registry.js';

export interface ProxySetting {
  /** The proxy URL, credentials included (never log it: see redactUrl). */
  url: string;
  /** The variable it came from, for messages. */
  from: string;
}

export interface ProxyConfig {
  http: ProxySetting | undefined;
  https: ProxySetting | undefined;
  /** NO_PROXY entries as written (lower case). */
  noProxy: string[];
}

type Env = Record<string, string | undefined>;

export function readProxyEnv(env: Env, problems: string[]): ProxyConfig {
  return {
    // curl ignores upper-case HTTP_PROXY (a CGI program would take it from a request header);
    // this job is no CGI program, so both spellings count, lower case first as curl does for the rest.
    http: proxySetting(env, ['http_proxy', 'HTTP_PROXY'], problems),
    https: proxySetting(env, ['https_proxy', 'HTTPS_PROXY'], problems),
    noProxy: (firstSet(env, ['no_proxy', 'NO_PROXY'])?.value ?? '')
      .split(/[\s,]+/)
      .map((entry) => entry.trim().toLowerCase())
      .filter((entry) => entry !== ''),
  };
}

function firstSet(env: Env, names: string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') return { name, value: value.trim() };
  }
  return undefined;
}

function proxySetting(env: Env, names: string[], problems: string[]): ProxySetting | undefined {
  const found = firstSet(env, names);
  if (!found) return undefined;
  // curl takes a proxy without a scheme as http://.
  const raw = /^[a-z][a-z0-9+.-]*:\/\//i.test(found.value) ? found.value : `http://${found.value}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`${found.name}: is not a URL (got "${redactUrl(found.value)}")`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.push(`${found.name}: only http:// and https:// proxies are supported (got "${url.protocol}//…")`);
    return undefined;
  }
  if (url.hostname === '') {
    problems.push(`${found.name}: has no host (got "${redactUrl(found.value)}")`);
    return undefined;
  }
  return { url: url.toString(), from: found.name };
}

/**
 * The proxy for a request to `target`, or undefined to connect directly. A loopback target is
 * never proxied, whatever the variables say, as browsers do (Chromium's implicit bypass rules):
 * `http://localhost` may carry the password in clear (insecure-http.ts) only because that traffic
 * never leaves the machine, and through a proxy it would.
 */
export function proxyFor(config: ProxyConfig, target: string | URL): ProxySetting | undefined {
  const url = typeof target === 'string' ? new URL(target) : target;
  const setting = url.protocol === 'https:' ? config.https : url.protocol === 'http:' ? config.http : undefined;
  if (setting === undefined || isLoopbackHost(url.hostname) || bypassesProxy(config.noProxy, url)) return undefined;
  return setting;
}

const LOOPBACK_V4 = new BlockList();
LOOPBACK_V4.addSubnet('127.0.0.0', 8, 'ipv4');
const LOOPBACK_V6 = new BlockList();
LOOPBACK_V6.addAddress('::1', 'ipv6');
LOOPBACK_V6.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** `localhost` and its subdomains, 127.0.0.0/8, `::1` and IPv4-mapped 127/8, as a URL's hostname writes them. */
export function isLoopbackHost(hostname: string): boolean {
  const host = unbracket(hostname.toLowerCase()).replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 4) return LOOPBACK_V4.check(host, 'ipv4');
  if (family === 6) return LOOPBACK_V6.check(host, 'ipv6');
  return false;
}

/**
 * NO_PROXY as curl reads it: `*` is every host; a name matches itself and its subdomains (a
 * leading `.` or `*.` changes nothing); an IP address or CIDR block matches addresses (not names
 * that resolve to them); `host:port` only that port. Loopback targets are bypassed before NO_PROXY
 * is read (proxyFor).
 */
export function bypassesProxy(noProxy: string[], target: URL): boolean {
  const host = unbracket(target.hostname.toLowerCase()).replace(/\.$/, '');
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  return noProxy.some((entry) => {
    if (entry === '*') return true;
    const { name, entryPort } = splitPort(entry);
    if (entryPort !== undefined && entryPort !== port) return false;
    if (isIP(host) !== 0) return ipMatches(host, name);
    const domain = name.replace(/^\*?\./, '').replace(/\.$/, '');
    return domain !== '' && (host === domain || host.endsWith(`.${domain}`));
  });
}

function splitPort(entry: string): { name: string; entryPort: string | undefined } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { name: bracketed[1]!, entryPort: bracketed[2] };
  // A bare IPv6 address (or block) has colons of its own and no port.
  if (isIP(entry.split('/')[0]!) === 6) return { name: entry, entryPort: undefined };
  const hostPort = /^(.*):(\d+)$/.exec(entry);
  return hostPort ? { name: hostPort[1]!, entryPort: hostPort[2] } : { name: entry, entryPort: undefined };
}

function ipMatches(host: string, entry: string): boolean {
  const [address, prefix] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0) return false;
  const type = family === 6 ? 'ipv6' : 'ipv4';
  const list = new BlockList();
  const bits = prefix === undefined ? (family === 6 ? 128 : 32) : Number(prefix);
  if (!Number.isInteger(bits) || bits < 0 || bits > (family === 6 ? 128 : 32)) return false;
  list.addSubnet(address!, bits, type);
  return list.check(host, isIP(host) === 6 ? 'ipv6' : 'ipv4');
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** A URL fit for logs and errors: user and password replaced. */
export function redactUrl(text: string): string {
  return text.replace(
    /^([a-z][a-z0-9+.-]*:\/\/)?[^/@\s]*@/i,
    (_m, scheme: string | undefined) => `${scheme ?? ''}***@`,
  );
}

/**
 * The proxy passwords (decoded and as written), and the base64 of `user:password` that a
 * Proxy-Authorization header carries, for the logger's secret registry. Not the user names: a name
 * is no secret, and censoring it would mangle every message that mentions it.
 */
export function proxySecrets(config: ProxyConfig): string[] {
  const out: string[] = [];
  for (const setting of [config.http, config.https]) {
    if (!setting) continue;
    const url = new URL(setting.url);
    if (url.password === '') continue;
    out.push(
      Buffer.from(`${decodeOrKeep(url.username)}:${decodeOrKeep(url.password)}`).toString('base64'),
      ...urlSecrets(setting.url),
    );
  }
  return out;
}
