/**
 * A request that got no HTTP answer, as an UpstreamError a person can act on. Certificate and
 * proxy refusals are permanent (retrying cannot help) and each gets its own sentence; everything
 * else (refused, reset, timed out) is retried.
 */
import { RequestError } from 'got';
import { UpstreamError } from '../../errors.js';
import { ProxyRefusedError } from './http-agents.js';
import {
  EXPIRED_CERT as EXPIRED,
  OTHER_CERT,
  UNTRUSTED_CERT as UNTRUSTED,
  WRONG_HOST_CERT as WRONG_HOST,
} from '../../outbound/tls-codes.js';

export function connectionError(what: string, url: string, error: unknown, bytes = 0): UpstreamError {
  const root = error instanceof RequestError && error.cause instanceof Error ? error.cause : error;
  const code = (root as { code?: unknown })?.code ?? (error as { code?: unknown })?.code;
  const reason = root instanceof Error ? root.message : String(root);
  const { host, origin } = new URL(url);

  if (root instanceof ProxyRefusedError) return proxyRefusal(what, url, root.status, root.proxyVariable, 'tunnel');
  if (typeof code === 'string') {
    if (UNTRUSTED.has(code)) {
      return tls(
        `TLS: the certificate of ${host} is not trusted (${reason}); if the server uses a private ` +
          `certificate authority, start the job with NODE_EXTRA_CA_CERTS=/path/to/ca.pem (the CA certificate in PEM)`,
      );
    }
    if (EXPIRED.has(code)) {
      return tls(
        `TLS: the certificate of ${host} is outside its validity period (${reason}); the server's ` +
          `certificate must be renewed (or the clock of this machine is wrong)`,
      );
    }
    if (code === WRONG_HOST) {
      const names = (root as { cert?: { subjectaltname?: unknown } }).cert?.subjectaltname;
      const presented = typeof names === 'string' ? `it names ${names}` : reason;
      return tls(
        `TLS: the certificate of ${host} is not issued for that name (${presented}); use a host name the ` +
          `certificate names in WINE_API_BASE_URL / WINE_API_LOGIN_URL`,
      );
    }
    if (OTHER_CERT.has(code)) return tls(`TLS: the certificate of ${host} was rejected (${code}: ${reason})`);
  }
  const where = bytes > 0 ? ` after ${bytes} bytes` : '';
  // The got error is not kept as `cause`: it carries the request options (headers, body).
  return new UpstreamError(
    `${what} request to ${origin} failed${where}: ${typeof code === 'string' ? code : 'error'} ` +
      `${error instanceof Error ? error.message : String(error)}`,
    {
      retryable: true,
    },
  );
}

/**
 * The proxy said no: to a CONNECT tunnel (https:// targets), or with its own 407 to a forwarded
 * http:// request (a 407 can only come from a proxy; its other refusals look like the upstream's).
 */
export function proxyRefusal(
  what: string,
  url: string,
  status: number,
  proxyVariable: string,
  how: 'tunnel' | 'forward',
): UpstreamError {
  const { host, origin } = new URL(url);
  // 407 is the standard answer; some proxies (tinyproxy) answer a CONNECT without credentials with 401.
  const hint =
    status === 407 || status === 401
      ? `the proxy wants credentials: put them in ${proxyVariable} as http://user:password@proxy:port (percent-encoded)`
      : `the proxy does not allow a tunnel to ${host}; ask its operator, or list the host in NO_PROXY if ` +
        `it is reachable directly`;
  const refused = how === 'tunnel' ? `refused to connect to ${host}` : `refused to forward the request to ${host}`;
  return new UpstreamError(
    `${what} request to ${origin} failed: the proxy from ${proxyVariable} ${refused} (HTTP ${status}); ${hint}`,
    {
      retryable: status === 502 || status === 503 || status === 504,
      code: 'PROXY',
    },
  );
}

function tls(message: string): UpstreamError {
  return new UpstreamError(message, { retryable: false, code: 'TLS' });
}
