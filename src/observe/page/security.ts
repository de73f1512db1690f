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
export const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

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

export function authorized(req: IncomingMessage, token: string | undefined): boolean {
  if (token === undefined) return true;
  const given = presentedToken(req);
  return given !== undefined && sameSecret(given, token);
}

export function refuseUnauthorized(res: ServerResponse): void {
  res
    .writeHead(401, { ...securityHeaders(), 'content-type': 'text/plain; charset=utf-8', 'www-authenticate': 'Basic realm="wine-recon-sync", charset="UTF-8"' })
    .end('401: this page needs SYNC_UI_TOKEN (Authorization: Bearer <token>, or Basic auth with the token as the password)\n');
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
