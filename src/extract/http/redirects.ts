/**
 * Where a redirect of the login or the listing may lead, decided by us for every hop (got follows
 * none). Rule: the password and the token go only to the configured origin (or its https twin),
 * never from https to http.
 */
import { UpstreamError } from '../../errors.js';
import { insecureHttpProblem } from '../../outbound/insecure-http.js';

export const MAX_REDIRECTS = 5;
const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);
const KEEPS_METHOD = new Set([307, 308]);
const SETTINGS = 'WINE_API_BASE_URL / WINE_API_LOGIN_URL';

export function isRedirect(status: number): boolean {
  return REDIRECT_STATUS.has(status);
}

/** A URL as it may be printed: scheme, host and path, without user info, query string or fragment. */
export function printableUrl(url: URL | string): string {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return '(not a URL)';
  }
  const text = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

export interface Hop {
  url: string;
  /** The request may carry the password (login) or the token (listing). */
  credentials: boolean;
}

/** The same origin, or the same host name moved from http to https. */
export function isOwnOrigin(configured: URL, target: URL): boolean {
  if (configured.origin === target.origin) return true;
  return configured.protocol === 'http:' && target.protocol === 'https:' && configured.hostname === target.hostname;
}

/**
 * The login's next hop after `status` from `current`; throws a non-retryable UpstreamError when it may not be followed.
 */
export function loginRedirect(
  configured: string,
  current: string,
  status: number,
  location: string | string[] | undefined,
  allowInsecure: boolean,
  hops: number,
): string {
  const target = resolve('login', current, status, location, hops);
  const shown = printableUrl(target);
  if (!KEEPS_METHOD.has(status)) {
    throw refuse(
      `login answered ${status} redirecting to ${shown}: only a 307 or 308 may move the login (a ${status} ` +
        `would turn it into a GET); set ${SETTINGS} to the address that answers the login itself`,
      status,
    );
  }
  const home = new URL(configured);
  if (!isOwnOrigin(home, target) || isDowngrade(current, target)) {
    throw refuse(
      `login redirected (${status}) to ${shown}, away from ${home.origin}: the password is sent only to ` +
        `the configured login address's origin (or the same host over https); if that address is the right ` +
        `one, set ${SETTINGS} to it`,
      status,
    );
  }
  insecure('login', target, status, allowInsecure);
  return target.href;
}

/**
 * The listing's next hop after `status` from `current`; throws a non-retryable UpstreamError when it may not be
 * followed.
 */
export function listingRedirect(
  configured: string,
  current: Hop,
  status: number,
  location: string | string[] | undefined,
  allowInsecure: boolean,
  hops: number,
): Hop {
  const target = resolve('listing', current.url, status, location, hops);
  if (isDowngrade(current.url, target)) {
    throw refuse(
      `listing redirected (${status}) from https to plain http (${printableUrl(target)}): the token is ` +
        `never sent, nor a listing read, over http after https; have the upstream (or its load balancer) ` +
        `redirect to https://, or set ${SETTINGS} to the final address`,
      status,
    );
  }
  insecure('listing', target, status, allowInsecure);
  return { url: target.href, credentials: current.credentials && isOwnOrigin(new URL(configured), target) };
}

function resolve(
  what: string,
  current: string,
  status: number,
  location: string | string[] | undefined,
  hops: number,
): URL {
  const value = Array.isArray(location) ? location[0] : location;
  if (value === undefined || value.trim() === '')
    throw refuse(`${what} answered ${status} without a Location header`, status);
  let target: URL;
  try {
    target = new URL(value, current);
  } catch {
    throw refuse(`${what} answered ${status} with a Location that is not a URL`, status);
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    throw refuse(
      `${what} answered ${status} redirecting to a ${target.protocol} address; only http(s) is followed`,
      status,
    );
  }
  if (hops > MAX_REDIRECTS) {
    throw refuse(
      `${what} redirected more than ${MAX_REDIRECTS} times (last to ${printableUrl(target)}); set ` +
        `${SETTINGS} to the final address`,
      status,
    );
  }
  return target;
}

function isDowngrade(current: string, target: URL): boolean {
  return new URL(current).protocol === 'https:' && target.protocol === 'http:';
}

function insecure(what: string, target: URL, status: number, allowInsecure: boolean): void {
  const problem = insecureHttpProblem(target, allowInsecure);
  if (problem !== undefined)
    throw refuse(`${what} redirected (${status}) to ${printableUrl(target)}: ${problem}`, status);
}

function refuse(message: string, status: number): UpstreamError {
  return new UpstreamError(message, { retryable: false, status });
}
