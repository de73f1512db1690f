/**
 * The upstream API client, over got (which the HTTP agents and notify.ts import too): login with
 * token reuse, and the listing downloaded to a spool file as it streams in, with retries for
 * transient failures. Each attempt rewrites the spool file from its start, and tells a SpoolWatch,
 * when given one, what it wrote: the run parses the file as it grows and starts over when an
 * attempt fails (spool-watch.ts).
 */
import { createHash } from 'node:crypto';
import got, { type Request } from 'got';
import type { ApiConfig, ProxyConfig } from '../../config.js';
import { AbortedError, SyncError, UpstreamError } from '../../errors.js';
import type { Logger, SecretRegistry } from '../../log.js';
import { redactUrl } from '../../outbound/proxy-env.js';
import { connectionError, proxyRefusal } from './connection-errors.js';
import { checkResponse, responseOf, serverMessage, statusError, type Headers, type HeadersOf } from './responses.js';
import { ACCEPT_ENCODING, contentCoding, decodedBody, isGzip } from './content-coding.js';
import { proxyRoute, type ProxyRoute } from './http-agents.js';
import { isRedirect, listingRedirect, loginRedirect, printableUrl, type Hop } from './redirects.js';
import { findToken, jwtExpiryMs } from './token.js';
import { backoffMs, sleep, type RetryPolicy } from './retry.js';
import type { SpoolWatch } from './spool-watch.js';
import { SpoolWriter } from './spool-writer.js';

const LOGIN_REFUSED_STATUS = new Set([400, 401, 403, 404, 422]);
const RENEW_EARLY_MS = 60_000;
/** No login answer is larger; a bigger body is a wrong address or a hostile one. */
const LOGIN_MAX_BYTES = 1024 * 1024;

export interface Download {
  /** Of the listing, decoded. */
  bytes: number;
  sha256: string;
  /** The body exactly as it arrived, when it came gzip-coded and `keepGzipAt` was given. */
  gzip?: { path: string; size: number };
}

export interface WineApiOptions {
  retryBaseMs?: number;
  maxRetryDelayMs?: number;
  now?: () => number;
  /** HTTPS_PROXY/HTTP_PROXY/NO_PROXY; undefined: direct. */
  proxy?: ProxyConfig;
  /**
   * Told of every chunk of the listing as it arrives: bytes so far and Content-Length (both as sent: coded when the
   * body is).
   */
  onDownloadProgress?: (progress: { received: number; declared: number | undefined }) => void;
}

export class WineApi {
  private token: { value: string; expiresAtMs: number | undefined } | undefined;
  private readonly onDownloadProgress: WineApiOptions['onDownloadProgress'];
  private readonly policy: RetryPolicy;
  private readonly now: () => number;
  private readonly proxy: ProxyConfig | undefined;

  constructor(
    private readonly config: ApiConfig,
    private readonly log: Logger,
    private readonly secrets: SecretRegistry,
    options: WineApiOptions = {},
  ) {
    secrets.add(config.password);
    this.policy = {
      attempts: config.retries,
      baseMs: options.retryBaseMs ?? 1000,
      maxDelayMs: options.maxRetryDelayMs ?? 60_000,
    };
    this.now = options.now ?? Date.now;
    this.proxy = options.proxy;
    this.onDownloadProgress = options.onDownloadProgress;
    for (const [request, url] of [
      ['login', config.loginUrl],
      ['listing', config.listingUrl],
    ] as const) {
      const { via } = proxyRoute(this.proxy, url);
      if (via)
        this.log.info({ request, proxy: redactUrl(via.url), from: via.from }, `${request} requests go through a proxy`);
    }
  }

  /**
   * Downloads the whole listing into `path`, retrying transient failures; returns its size and
   * SHA-256. With `keepGzipAt`, a gzip-coded body is also written there as it arrived. `watch`
   * hears of every attempt, every write, and the outcome.
   */
  async downloadListing(
    path: string,
    signal: AbortSignal,
    options: { keepGzipAt?: string; watch?: SpoolWatch } = {},
  ): Promise<Download> {
    const { watch } = options;
    try {
      const download = await this.download(path, signal, options.keepGzipAt, watch);
      watch?.complete();
      return download;
    } catch (error) {
      watch?.fail(error);
      throw error;
    }
  }

  private async download(
    path: string,
    signal: AbortSignal,
    keepGzipAt: string | undefined,
    watch: SpoolWatch | undefined,
  ): Promise<Download> {
    let reloggedAfter401 = false;
    for (let attempt = 1; ; attempt++) {
      try {
        const token = await this.validToken(signal);
        return await this.fetchListing(token, path, signal, keepGzipAt, watch);
      } catch (error) {
        watch?.attemptFailed();
        if (signal.aborted) throw new AbortedError();
        if (!(error instanceof UpstreamError)) throw error;
        if (error.status === 401 && error.code !== 'LOGIN_REFUSED' && !reloggedAfter401) {
          // The token was revoked or expired early: one fresh login, one more try.
          reloggedAfter401 = true;
          this.token = undefined;
          this.log.warn({ attempt }, 'listing answered 401; logging in again once');
          attempt--;
          continue;
        }
        if (!error.retryable || attempt >= this.policy.attempts) {
          if (error.retryable) error.message = `${error.message} (gave up after ${attempt} attempts)`;
          throw error;
        }
        const delayMs = backoffMs(this.policy, attempt, error.retryAfterMs);
        this.log.warn(
          { attempt, of: this.policy.attempts, delayMs, status: error.status, cause: error.message },
          'upstream request failed; retrying',
        );
        await sleep(delayMs, signal).catch(() => {
          throw new AbortedError();
        });
      }
    }
  }

  get listingUrl(): string {
    return this.config.listingUrl;
  }

  private async validToken(signal: AbortSignal): Promise<string> {
    const cached = this.token;
    if (cached && (cached.expiresAtMs === undefined || this.now() < cached.expiresAtMs - RENEW_EARLY_MS))
      return cached.value;
    this.token = undefined;
    const value = await this.login(signal);
    const expiresAtMs = jwtExpiryMs(value);
    this.token = { value, expiresAtMs };
    this.log.info(
      { expiresAt: expiresAtMs === undefined ? undefined : new Date(expiresAtMs).toISOString() },
      'logged in',
    );
    return value;
  }

  private async login(signal: AbortSignal): Promise<string> {
    const { loginUrl, email, password, tokenField, allowInsecureHttp } = this.config;
    const headers = { 'X-Requested-With': 'XMLHttpRequest', service_app: 'mobile', accept: 'application/json' };
    // At trace level the request is logged whole; `redact` censors the password.
    this.log.trace({ url: loginUrl, headers, body: { email, password } }, 'login request');
    let url = loginUrl;
    let answer: { statusCode: number; headers: Headers; body: string; via: string | undefined };
    for (let hops = 1; ; hops++) {
      answer = await this.post(url, { email, password }, headers, signal);
      if (!isRedirect(answer.statusCode)) break;
      const next = loginRedirect(loginUrl, url, answer.statusCode, answer.headers.location, allowInsecureHttp, hops);
      this.log.info(
        { status: answer.statusCode, to: printableUrl(next) },
        'login redirected; following it within its origin',
      );
      url = next;
    }
    const { statusCode, body } = answer;
    if (statusCode === 407 && answer.via) throw proxyRefusal('login', url, statusCode, answer.via, 'forward');
    if (LOGIN_REFUSED_STATUS.has(statusCode)) {
      throw new UpstreamError(
        `login refused (${statusCode}): check WINE_API_EMAIL / WINE_API_PASSWORD${serverMessage(body)}`,
        { retryable: false, status: statusCode, code: 'LOGIN_REFUSED' },
      );
    }
    if (statusCode < 200 || statusCode >= 300) throw statusError('login', statusCode, answer.headers, body, this.now());
    const found = findToken(body, tokenField);
    if (!found.ok) {
      const where = tokenField
        ? `at WINE_API_TOKEN_FIELD=${tokenField}`
        : 'under the usual names (token, access_token, accessToken, jwt, data.*) or in JWT form';
      const keys = found.keysSeen.length > 0 ? found.keysSeen.join(', ') : '(none: the body is not a JSON object)';
      throw new UpstreamError(
        `login succeeded (${statusCode}) but no token was found ${where}; keys in the response: ${keys}. ` +
          `Set WINE_API_TOKEN_FIELD.`,
        {
          retryable: false,
          status: statusCode,
        },
      );
    }
    this.secrets.add(found.token);
    this.log.debug({ foundAt: found.foundAt }, 'token found');
    return found.token;
  }

  /** One login POST, redirects not followed, its body read up to LOGIN_MAX_BYTES (decoded). */
  private async post(url: string, json: object, headers: Record<string, string>, signal: AbortSignal) {
    const route = proxyRoute(this.proxy, url);
    const request = got.stream.post(url, {
      json,
      headers,
      followRedirect: false,
      throwHttpErrors: false,
      retry: { limit: 0 },
      timeout: { request: Math.min(this.config.timeoutMs, 60_000) },
      agent: route.agent,
      signal,
    });
    try {
      const response = await responseOf(request);
      if (isRedirect(response.statusCode))
        return { statusCode: response.statusCode, headers: response.headers, body: '', via: route.via?.from };
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of request as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > LOGIN_MAX_BYTES) {
          throw new UpstreamError(
            `login response from ${printableUrl(url)} is larger than ${LOGIN_MAX_BYTES / 1024 / 1024} MiB: ` +
              `no login answer is; check WINE_API_BASE_URL / WINE_API_LOGIN_URL`,
            { retryable: false, status: response.statusCode },
          );
        }
        chunks.push(chunk);
      }
      return {
        statusCode: response.statusCode,
        headers: response.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        via: route.via?.from,
      };
    } catch (error) {
      if (error instanceof SyncError) throw error;
      throw connectionError('login', url, error);
    } finally {
      request.destroy();
    }
  }

  private async fetchListing(
    token: string,
    path: string,
    signal: AbortSignal,
    keepGzipAt: string | undefined,
    watch: SpoolWatch | undefined,
  ): Promise<Download> {
    const configured = this.config.listingUrl;
    const spool = await SpoolWriter.open(path, watch && ((total) => watch.wrote(total)));
    // Once the file exists. A reader of the previous attempt cannot take these bytes for its own:
    // that attempt was marked failed before this one started.
    watch?.begin();
    let request: Request | undefined;
    let kept: SpoolWriter | undefined;
    try {
      let hop: Hop = { url: configured, credentials: true };
      let response: HeadersOf;
      let route: ProxyRoute;
      for (let hops = 1; ; hops++) {
        const headers = {
          serviceapp: 'mobile',
          ...(hop.credentials ? { authorization: `Bearer ${token}` } : {}),
          accept: 'application/json',
          'accept-encoding': ACCEPT_ENCODING,
        };
        // A pre-signed address's query string is its key: logged without it.
        this.log.trace({ url: hop.url === configured ? hop.url : printableUrl(hop.url), headers }, 'listing request');
        route = proxyRoute(this.proxy, hop.url);
        request = got.stream(hop.url, {
          headers,
          followRedirect: false,
          // We decode (content-coding.ts): a gzip body is kept as it arrived, for the archive.
          decompress: false,
          throwHttpErrors: false,
          retry: { limit: 0 },
          timeout: { request: this.config.timeoutMs },
          agent: route.agent,
          signal,
        });
        try {
          response = await responseOf(request);
        } catch (error) {
          throw connectionError('listing', hop.url, error);
        }
        if (!isRedirect(response.statusCode)) break;
        request.destroy();
        const next = listingRedirect(
          configured,
          hop,
          response.statusCode,
          response.headers.location,
          this.config.allowInsecureHttp,
          hops,
        );
        this.log.info(
          { status: response.statusCode, to: printableUrl(next.url), token: next.credentials },
          'listing redirected',
        );
        hop = next;
      }
      const url = hop.url;
      if (!hop.credentials && (response.statusCode === 401 || response.statusCode === 403)) {
        // No status on the error: a 401 here is no reason to log in again.
        throw new UpstreamError(
          `listing redirected to ${printableUrl(url)}, which answered ${response.statusCode}: the token is ` +
            `not sent to another origin than ${new URL(configured).origin}; the upstream must redirect to ` +
            `an address that needs no token (a pre-signed one), or set WINE_API_BASE_URL to the address ` +
            `that serves the listing`,
          { retryable: false },
        );
      }
      return await this.readListing(request, response, route, url, spool, keepGzipAt, (k) => (kept = k));
    } finally {
      request?.destroy();
      await spool.close();
      await kept?.close();
    }
  }

  /** The final response's body, decoded, into the spool (and, gzip-coded, into `keepGzipAt`). */
  private async readListing(
    request: Request,
    response: HeadersOf,
    route: ProxyRoute,
    url: string,
    spool: SpoolWriter,
    keepGzipAt: string | undefined,
    keeping: (kept: SpoolWriter) => void,
  ): Promise<Download> {
    const { maxBytes } = this.config;
    // Listing bytes (decoded) and bytes as they arrived (coded, when the body is).
    let bytes = 0;
    let received = 0;
    let kept: SpoolWriter | undefined;
    // Only a 200's gzip body is the listing's; decided on its first bytes, which follow the headers.
    const keepsGzip = () =>
      keepGzipAt !== undefined && response.statusCode === 200 && isGzip(contentCoding(response.headers));
    const onDownload = this.onDownloadProgress;
    // Content-Length counts the bytes as sent: coded ones when the body is coded.
    const declared = Number(response.headers['content-length']);
    const declaredBytes = Number.isFinite(declared) && declared > 0 ? declared : undefined;
    const arriving = async function* (): AsyncGenerator<Buffer> {
      for await (const chunk of request as AsyncIterable<Buffer>) {
        if (received === 0 && keepsGzip()) keeping((kept = await SpoolWriter.open(keepGzipAt!)));
        received += chunk.length;
        onDownload?.({ received, declared: declaredBytes });
        await kept?.write(chunk);
        yield chunk;
      }
    };
    const body = decodedBody(arriving(), () => contentCoding(response.headers));
    const hash = createHash('sha256');
    try {
      for await (const chunk of body) {
        if (bytes === 0) await checkResponse(response, chunk, body, this.now(), url, route.via?.from);
        bytes += chunk.length;
        if (bytes > maxBytes) {
          throw new UpstreamError(
            `listing is larger than WINE_API_MAX_BYTES=${maxBytes} bytes (decoded); nothing was loaded. ` +
              `Raise WINE_API_MAX_BYTES if the upstream's listing really is that large`,
            { retryable: false, status: response.statusCode },
          );
        }
        hash.update(chunk);
        await spool.write(chunk);
      }
      await kept?.flush();
      await spool.flush();
    } catch (error) {
      if (error instanceof SyncError) throw error;
      throw connectionError('listing', url, error, bytes);
    }
    if (bytes === 0) await checkResponse(response, Buffer.alloc(0), body, this.now(), url, route.via?.from);
    if (Number.isFinite(declared) && declared !== received) {
      const coding = contentCoding(response.headers);
      const cut = coding
        ? `${received} of ${declared} ${coding} bytes (${bytes} bytes of listing)`
        : `${bytes} of ${declared} bytes`;
      throw new UpstreamError(`listing body cut off after ${cut}`, { retryable: true, status: response.statusCode });
    }
    return { bytes, sha256: hash.digest('hex'), ...(kept ? { gzip: { path: keepGzipAt!, size: kept.written } } : {}) };
  }
}
