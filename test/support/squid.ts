/**
 * Debian's Squid as a test fixture, with the rules it is packaged with: /etc/squid/squid.conf is
 * copied as it is, and only what a fixture must change is changed: the listening port (a free
 * one, on 127.0.0.1), where it writes its pid file and logs (a temporary directory), and
 * `pinger_enable off` (the ICMP helper it would start outlives a fast shutdown). The access rules
 * stay the package's: loopback clients allowed, `CONNECT` only to port 443 (`SSL_ports`),
 * forwarded requests to ports 80, 443, 1025-65535 and a few others (`Safe_ports`).
 *
 * Two opt-in deviations, each named by the test that asks for it: `basicAuth` adds the standard
 * "require a login" lines (basic_ncsa_auth with an htpasswd file made by openssl), and
 * `extraSslPort` adds one port to `SSL_ports` for a machine where nothing may listen on 443.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './global-setup.js';
import { waitForPort } from './tls-and-proxy.js';

const run = promisify(execFile);

/** Debian installs it in sbin, which is not on every user's PATH. */
export const SQUID = existsSync('/usr/sbin/squid') ? '/usr/sbin/squid' : 'squid';
export const PACKAGED_CONFIG = '/etc/squid/squid.conf';
const NCSA_AUTH = '/usr/lib/squid/basic_ncsa_auth';

export interface Squid {
  /** http://127.0.0.1:port */
  url: string;
  /** access.log so far (Squid's native format: `… TCP_MISS/200 1234 GET http://host:port/path - HIER_DIRECT/…`). */
  accessLog(): Promise<string>;
  stop(): Promise<void>;
}

export interface SquidOptions {
  /** Require a proxy login (Basic) from every client. */
  basicAuth?: { user: string; password: string };
  /** Allow CONNECT to this port too (only where port 443 cannot be used). */
  extraSslPort?: number;
}

export async function startSquid(openssl: string, options: SquidOptions = {}): Promise<Squid> {
  const port = await freePort();
  // Its own directory, world-writable: started as root, Squid drops to its `cache_effective_user`
  // (Debian: proxy), which must write the logs and read the password file; a test's mkdtemp is 0700.
  const dir = await mkdtemp(join(tmpdir(), 'wrs-squid-'));
  await chmod(dir, 0o777);
  const packaged = await readFile(PACKAGED_CONFIG, 'utf8');

  let config = replaceLine(packaged, /^http_port 3128$/m, `http_port 127.0.0.1:${port}`);
  if (options.extraSslPort !== undefined) {
    config = replaceLine(
      config,
      /^acl SSL_ports port 443$/m,
      `acl SSL_ports port 443\nacl SSL_ports port ${options.extraSslPort}`,
    );
  }
  if (options.basicAuth) {
    const htpasswd = join(dir, 'htpasswd');
    const { stdout } = await run(openssl, ['passwd', '-apr1', options.basicAuth.password]);
    await writeFile(htpasswd, `${options.basicAuth.user}:${stdout.trim()}\n`, { mode: 0o644 });
    // Squid's documented recipe, placed where the packaged file says to insert local rules (before
    // `http_access allow localhost`, which would otherwise let every loopback client through).
    config = replaceLine(
      config,
      /^include \/etc\/squid\/conf\.d\/\*\.conf$/m,
      [
        `auth_param basic program ${NCSA_AUTH} ${htpasswd}`,
        'auth_param basic realm wine-recon-sync test proxy',
        'acl authenticated proxy_auth REQUIRED',
        'http_access deny !authenticated',
        'include /etc/squid/conf.d/*.conf',
      ].join('\n'),
    );
  }
  config += [
    '',
    '# --- test fixture: files in a temporary directory, no ICMP helper ---',
    `pid_filename ${join(dir, 'squid.pid')}`,
    `access_log stdio:${join(dir, 'access.log')}`,
    `cache_log ${join(dir, 'cache.log')}`,
    `coredump_dir ${dir}`,
    'netdb_filename none',
    'pinger_enable off',
    '',
  ].join('\n');
  const configFile = join(dir, 'squid.conf');
  await writeFile(configFile, config, { mode: 0o644 });

  // -N: stay in the foreground, one process, so that the test owns it.
  const child: ChildProcess = spawn(SQUID, ['-N', '-f', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const cacheLog = async () => (existsSync(join(dir, 'cache.log')) ? readFile(join(dir, 'cache.log'), 'utf8') : '');
  try {
    await waitForPort('squid', port, child, () => stderr);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\ncache.log: ${await cacheLog()}`);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    accessLog: async () => (existsSync(join(dir, 'access.log')) ? readFile(join(dir, 'access.log'), 'utf8') : ''),
    stop: async () => {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        // SIGINT is Squid's "shut down now"; SIGTERM waits shutdown_lifetime (30 s) for clients.
        child.kill('SIGINT');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      });
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Replaces the one line `pattern` matches; the packaged file changing under us fails loudly. */
function replaceLine(text: string, pattern: RegExp, replacement: string): string {
  if (!pattern.test(text))
    throw new Error(`${PACKAGED_CONFIG} has no line matching ${pattern}: the packaged default changed`);
  return text.replace(pattern, replacement);
}
