/**
 * Who may see the page and what a browser may do with it. SYNC_UI_TOKEN, when set, is required on
 * every request: `Authorization: Bearer <token>`, or Basic with the token as the password (any
 * user name), so that a browser can log in through its own dialog. Compared in constant time.
 * Run-now also needs a CSRF token (derived from SYNC_UI_TOKEN and a secret of this process) and
 * an Origin header naming this very host.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** default-src 'none', then exactly what the page uses: its stylesheet and icon, forms to itself. */
export const CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export function securityHeaders(): Record<string, string> {
  return {
    'content-security-policy': CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
  };
}

/** Equal strings, in a time that does not depend on where they differ (both hashed to one length first). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The credential a request carries: a Bearer token, or the password of Basic auth. */
export function presentedToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!basic) return undefined;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

export function refuseUnauthorized(res: ServerResponse): void {
  res
    .writeHead(401, {
      ...securityHeaders(),
      'content-type': 'text/plain; charset=utf-8',
      'www-authenticate': 'Basic realm="wine-recon-sync", charset="UTF-8"',
    })
    .end(
      '401: this page needs SYNC_UI_TOKEN (Authorization: Bearer <token>, or Basic auth with the token as the password)\n',
    );
}

export class CsrfTokens {
  private readonly key: Buffer;
  constructor(uiToken: string) {
    // A process secret beside the UI token: a token seen once is useless after a restart.
    this.key = createHmac('sha256', uiToken).update(randomBytes(32)).digest();
  }

  token(): string {
    return createHmac('sha256', this.key).update('run-now').digest('hex');
  }

  valid(given: string | undefined): boolean {
    return given !== undefined && sameSecret(given, this.token());
  }
}

/**
 * The request comes from a page of this very server: its Origin names the host it was sent to,
 * and a browser's Sec-Fetch-Site (when sent) says same-origin. Under `Referrer-Policy:
 * no-referrer` a browser sends `Origin: null` on a form POST; that passes only with
 * `Sec-Fetch-Site: same-origin`, which a browser sets itself and no page can forge. A POST
 * without Origin is refused.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  const host = req.headers.host;
  const site = req.headers['sec-fetch-site'];
  if (origin === undefined || host === undefined) return false;
  if (origin === 'null') return site === 'same-origin';
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (parsed.host !== host.toLowerCase()) return false;
  return site === undefined || site === 'same-origin';
}

/** Loopback: only this machine can reach the server. */
export function isLoopback(host: string): boolean {
  return /^(localhost|127(?:\.\d{1,3}){3}|::1|\[::1\])$/i.test(host);
}

/**
 * Whom the page answers to, by the `Host` a request names. A DNS-rebinding page (a name of the
 * attacker's that first resolves to their server, then to 127.0.0.1) reaches a loopback port from
 * the operator's own browser, as the same origin as itself: only the `Host` header still says whose
 * name was used. So the page answers only to the names of where it listens: loopback names and
 * addresses at its own port, the address it was bound to, and the names a reverse proxy forwards
 * (SYNC_UI_ALLOWED_HOSTS, `name` or `name:port`), as Jupyter, webpack-dev-server and Vite do.
 */
export function hostAllowed(req: IncomingMessage, bound: string, allowed: readonly string[]): boolean {
  const header = req.headers.host;
  if (header === undefined) return false;
  const [name, port] = splitHost(header);
  // A plain name or address: no user information, path or other decoration.
  if (!/^(?:[a-z0-9-]+\.)*[a-z0-9-]+\.?$|^\[[0-9a-f:.]+\]$/.test(name)) return false;
  const bare = name.replace(/\.$/, '');
  const boundName = bound.toLowerCase();
  const ownPort = port === undefined || port === String(req.socket.localPort);
  if ((isLoopback(bare) || bare === boundName || bare === `[${boundName}]`) && ownPort) return true;
  return allowed.some((entry) => {
    const [entryName, entryPort] = splitHost(entry);
    return entryName === bare && (entryPort === undefined || entryPort === (port ?? '80'));
  });
}

/** `name[:port]` (IPv6 in brackets) as name and port. */
function splitHost(entry: string): [string, string | undefined] {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(entry.toLowerCase());
  return m ? [m[1]!, m[2]] : [entry.toLowerCase(), undefined];
}

export function refuseHost(res: ServerResponse): void {
  res
    .writeHead(421, { ...securityHeaders(), 'content-type': 'text/plain; charset=utf-8' })
    .end(
      '421: this page answers only to the name it is served under (loopback, its bound address, or one in SYNC_UI_ALLOWED_HOSTS)\n',
    );
}

/**
 * Wrong tokens, counted per client address: after `limit` in `windowMs`, that address gets 429
 * until the oldest of them leaves the window, whatever it sends (checking the token then would
 * still tell a guess that is right). A token of 16 characters or more cannot be guessed at a few
 * attempts a minute; behind a reverse proxy every client shares the proxy's address, so a
 * stranger's guesses can keep an operator out for at most one window. Requests that bring no
 * token (a browser's first, before its login dialog) do not count.
 */
export class TokenAttempts {
  private readonly failures = new Map<string, number[]>();
  constructor(
    private readonly limit = 10,
    private readonly windowMs = 60_000,
    /** Addresses remembered at most (the oldest forgotten first): a flood of addresses costs bounded memory. */
    private readonly addresses = 10_000,
  ) {}

  /** Seconds until `address` may try again, or undefined when it may now. */
  retryAfter(address: string, now: number): number | undefined {
    const recent = this.recent(address, now);
    if (recent.length < this.limit) return undefined;
    return Math.max(1, Math.ceil((recent[0]! + this.windowMs - now) / 1000));
  }

  failed(address: string, now: number): void {
    const recent = this.recent(address, now);
    recent.push(now);
    this.failures.delete(address); // re-inserted last: Map order is the forgetting order
    this.failures.set(address, recent);
    if (this.failures.size > this.addresses) this.failures.delete(this.failures.keys().next().value!);
  }

  private recent(address: string, now: number): number[] {
    return (this.failures.get(address) ?? []).filter((t) => now - t < this.windowMs);
  }
}

export function refuseTooMany(res: ServerResponse, retryAfterSeconds: number): void {
  res
    .writeHead(429, {
      ...securityHeaders(),
      'content-type': 'text/plain; charset=utf-8',
      'retry-after': String(retryAfterSeconds),
    })
    .end(`429: too many wrong tokens from this address; try again in ${retryAfterSeconds} s\n`);
}
