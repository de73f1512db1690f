/**
 * The simulated upstream: login, the bulk wine reconciliation listing (streamed with backpressure,
 * so a million records are served with flat memory) and fault modes switchable at runtime.
 * Used by the tests, `demo`, `simulate` and the benchmark. It writes nothing to the console and
 * keeps no password it is sent.
 *
 * Here: listening (HTTP or HTTPS), the open sockets, routing and the control methods. The
 * endpoints are in login.ts and listing.ts, the fault modes in faults.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { Dataset, type Mutation } from './dataset.js';
import { Faults, type FaultName, type FaultOptions } from './faults.js';
import { JwtIssuer } from './jwt.js';
import { ListingEndpoint, LISTING_PATH } from './listing.js';
import { LoginEndpoint, LOGIN_PATH, type TokenShape } from './login.js';
import { sendJson, type ContentCoding } from './respond.js';

export { FAULT_NAMES, type FaultName, type FaultOptions } from './faults.js';
export { LISTING_MESSAGE, LISTING_PATH } from './listing.js';
export { LOGIN_PATH, type TokenShape } from './login.js';
export type { ContentCoding } from './respond.js';

/** The simulator's own credentials when SIMULATOR_EMAIL / SIMULATOR_PASSWORD are not given: not secrets. */
export const DEFAULT_EMAIL = 'demo@example.com';
export const DEFAULT_PASSWORD = 'demo-password';

export interface SimulatorOptions {
  /** 0 (default) = a random free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Generated records, default 1000. */
  records?: number;
  /** Dataset seed, default 1. */
  seed?: number;
  /** Default 'demo@example.com'. */
  email?: string;
  /** Default 'demo-password'. */
  password?: string;
  /** Token lifetime, default 3600. */
  tokenTtlSeconds?: number;
  /** Where the login response carries the token, default 'data.access_token'. */
  tokenShape?: TokenShape;
  /** Serve HTTPS with this key and certificate (PEM); default plain HTTP. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /**
   * With `tls`: also serve the same API (same tokens, same data) over plain HTTP on this port of
   * `plainHttp.host` (default: the same host; port 0: a free one), as the documented upstream does
   * (login over http://, listing over https://). Its address is `plainUrl`.
   */
  plainHttp?: { host?: string; port?: number };
}

export interface SimulatorStats {
  /** Requests received on POST /api/login, failed ones included. */
  logins: number;
  /** Requests received on the listing path, failed ones included. */
  listings: number;
  /** TCP connections accepted (with HTTPS, also those whose TLS handshake failed). */
  connections: number;
}

export interface Simulator {
  /** e.g. http://127.0.0.1:41234 */
  readonly url: string;
  /** The plain-HTTP address of a TLS simulator started with `plainHttp`; otherwise undefined. */
  readonly plainUrl: string | undefined;
  readonly email: string;
  readonly password: string;
  readonly stats: SimulatorStats;
  /** One fault at a time; null clears it. 'revoke-tokens' revokes at once and leaves the current fault. */
  setFault(name: FaultName | null, options?: FaultOptions): void;
  /** Every token issued so far stops working (the listing answers 401). */
  revokeTokens(): void;
  /** Changes, removes and adds generated records, deterministically. */
  mutate(m: Mutation): void;
  /** Serve exactly these raw record texts (inserted verbatim into the array); null = the generated dataset. */
  setRecordsJson(list: string[] | null): void;
  /**
   * Serve exactly this whole listing body (default content type application/json); null = normal.
   * With `contentEncoding`, that header goes with it: the body is taken as already coded.
   */
  setRawBody(body: string | Buffer | null, contentType?: string, contentEncoding?: string): void;
  /**
   * Compress the listing (generated or set records) in this coding when the request accepts it,
   * as a web server with compression on does; null (the default) = never.
   */
  setContentCoding(coding: ContentCoding | null): void;
  /** Records the listing serves now (the raw records' count when setRecordsJson is active). */
  recordCount(): number;
  /** Closes the server and every open socket promptly, stalled ones included. */
  close(): Promise<void>;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const sim = new SimulatorServer(options);
  await sim.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  if (options.tls && options.plainHttp) {
    await sim.listenPlain(options.plainHttp.port ?? 0, options.plainHttp.host ?? options.host ?? '127.0.0.1');
  }
  return sim;
}

class SimulatorServer implements Simulator {
  readonly email: string;
  readonly password: string;
  readonly stats: SimulatorStats = { logins: 0, listings: 0, connections: 0 };
  private readonly dataset: Dataset;
  private readonly jwt = new JwtIssuer();
  private readonly faults = new Faults();
  private readonly login: LoginEndpoint;
  private readonly listing: ListingEndpoint;
  private readonly server: Server | HttpsServer;
  private readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  private plainServer: Server | undefined;
  private plainBaseUrl: string | undefined;
  private readonly scheme: 'http' | 'https';
  private readonly sockets = new Set<Socket>();
  private readonly closing = new AbortController();
  private baseUrl = '';

  constructor(options: SimulatorOptions) {
    this.email = options.email ?? DEFAULT_EMAIL;
    this.password = options.password ?? DEFAULT_PASSWORD;
    this.dataset = new Dataset(options.seed ?? 1, options.records ?? 1000);
    this.login = new LoginEndpoint(
      {
        email: this.email,
        password: this.password,
        tokenTtlSeconds: options.tokenTtlSeconds ?? 3600,
        tokenShape: options.tokenShape ?? 'data.access_token',
      },
      this.jwt,
      this.faults,
    );
    this.listing = new ListingEndpoint(this.dataset, this.jwt, this.faults, this.closing.signal);
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.handle(req, res).catch(() => {
        if (!res.headersSent) sendJson(res, 500, { message: 'Server Error' });
        else res.destroy();
      });
    };
    this.handler = handler;
    this.scheme = options.tls ? 'https' : 'http';
    this.server = options.tls
      ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, handler)
      : createServer(handler);
    // A failed handshake is the client's business (the test asserts it there); keep serving.
    this.server.on('tlsClientError', () => {});
    this.track(this.server);
  }

  private track(server: Server | HttpsServer): void {
    server.on('connection', (socket) => {
      this.stats.connections++;
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  get url(): string {
    return this.baseUrl;
  }

  get plainUrl(): string | undefined {
    return this.plainBaseUrl;
  }

  async listen(port: number, host: string): Promise<void> {
    this.baseUrl = await listenOn(this.server, this.scheme, port, host);
  }

  /** The second, plain-HTTP listener of a TLS simulator (`plainHttp`). */
  async listenPlain(port: number, host: string): Promise<void> {
    this.plainServer = createServer(this.handler);
    this.track(this.plainServer);
    this.plainBaseUrl = await listenOn(this.plainServer, 'http', port, host);
  }

  setFault(name: FaultName | null, options: FaultOptions = {}): void {
    if (name === 'revoke-tokens') this.revokeTokens();
    else this.faults.set(name, options);
  }

  revokeTokens(): void {
    this.jwt.rotate();
  }

  mutate(m: Mutation): void {
    this.dataset.mutate(m);
  }

  setRecordsJson(list: string[] | null): void {
    this.listing.setRecordsJson(list);
  }

  setRawBody(body: string | Buffer | null, contentType?: string, contentEncoding?: string): void {
    this.listing.setRawBody(body, contentType, contentEncoding);
  }

  setContentCoding(coding: ContentCoding | null): void {
    this.listing.setContentCoding(coding);
  }

  recordCount(): number {
    return this.listing.recordCount();
  }

  async close(): Promise<void> {
    this.closing.abort();
    const servers = this.plainServer ? [this.server, this.plainServer] : [this.server];
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            for (const socket of this.sockets) socket.destroy();
            server.closeAllConnections();
          }),
      ),
    );
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on('error', () => {});
    const url = new URL(req.url ?? '/', 'http://simulator');
    const path = url.pathname.replace(/\/+$/, '');
    if (path === LOGIN_PATH) {
      this.stats.logins++;
      if (req.method !== 'POST')
        return sendJson(res, 405, {
          message: `The ${req.method} method is not supported for route api/login. Supported methods: POST.`,
        });
      return this.login.handle(req, res);
    }
    if (path === LISTING_PATH) {
      this.stats.listings++;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return sendJson(res, 405, {
          message:
            `The ${req.method} method is not supported for route api/bulk-wine-reconciliation-data. ` +
            `Supported methods: GET, HEAD.`,
        });
      }
      return this.listing.handle(req, res, url, this.baseUrl);
    }
    req.resume();
    sendJson(res, 404, { message: 'Not Found' });
  }
}

/** Listens and returns the base URL (a wildcard host is shown as loopback). */
function listenOn(server: Server | HttpsServer, scheme: 'http' | 'https', port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : address.address;
      resolve(`${scheme}://${shown.includes(':') ? `[${shown}]` : shown}:${address.port}`);
    });
  });
}
