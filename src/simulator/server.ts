/**
 * The simulated upstream: login, the bulk wine reconciliation listing (streamed with backpressure,
 * so a million records are served with flat memory) and fault modes switchable at runtime.
 * Used by the tests, `demo`, `simulate` and the benchmark. It writes nothing to the console and
 * keeps no password it is sent.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { Dataset, INVALID_KINDS, Invalid, MAX_RECORD_BYTES, spreadPositions, type Mutation } from './dataset.js';
import { JwtIssuer } from './jwt.js';


/** The simulator's own credentials when SIMULATOR_EMAIL / SIMULATOR_PASSWORD are not given: not secrets. */
export const DEFAULT_EMAIL = 'demo@example.com';
export const DEFAULT_PASSWORD = 'demo-password';
export type TokenShape = 'data.access_token' | 'token' | 'jwt' | 'bare' | 'nested-unknown';

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
   * `plainHttp.host` (default: the same host; port 0: a free one), as the spec's upstream does
   * (login over http://, listing over https://). Its address is `plainUrl`.
   */
  plainHttp?: { host?: string; port?: number };
}

export type FaultName =
  | 'expire-token'
  | 'revoke-tokens'
  | 'rate-limit'
  | 'server-error'
  | 'login-error'
  | 'html'
  | 'truncate'
  | 'count-mismatch'
  | 'duplicate-ids'
  | 'invalid-records'
  | 'slow'
  | 'empty';

export const FAULT_NAMES: readonly FaultName[] = [
  'expire-token',
  'revoke-tokens',
  'rate-limit',
  'server-error',
  'login-error',
  'html',
  'truncate',
  'count-mismatch',
  'duplicate-ids',
  'invalid-records',
  'slow',
  'empty',
];

export interface FaultOptions {
  /** Only the next `times` requests the fault applies to (then back to normal); default: until cleared. */
  times?: number;
  /** server-error: 500/502/503/504 (default 503); login-error: default 500. */
  status?: number;
  /** rate-limit: the Retry-After header, default 1. */
  retryAfterSeconds?: number;
  /**
   * duplicate-ids: records repeated (default 3); invalid-records: records made invalid (default 4,
   * one of each kind); count-mismatch: how much `count`/`recordCount` exceed the array length (default 1).
   */
  count?: number;
  /** slow: the stall after the first chunk, default 5000 ms. */
  delayMs?: number;
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
  /** Serve exactly this whole listing body (default content type application/json); null = normal. */
  setRawBody(body: string | Buffer | null, contentType?: string): void;
  /** Records the listing serves now (the raw records' count when setRecordsJson is active). */
  recordCount(): number;
  /** Closes the server and every open socket promptly, stalled ones included. */
  close(): Promise<void>;
}

export const LOGIN_PATH = '/api/login';
export const LISTING_PATH = '/api/bulk-wine-reconciliation-data';
export const LISTING_MESSAGE = 'Bulk wine reconciliation data retrieved successfully';
const PAGE_SIZE = 15;
/** Bytes per written chunk: about 270 generated records. */
const CHUNK_BYTES = 64 * 1024;
const MAX_LOGIN_BODY = 64 * 1024;

const LOGIN_PAGE = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Login | Winery</title></head>
<body>
<form method="POST" action="/login">
<input type="hidden" name="_token" value="simulated">
<label>Email <input type="email" name="email"></label>
<label>Password <input type="password" name="password"></label>
<button type="submit">Log in</button>
</form>
</body>
</html>
`;

interface ActiveFault {
  name: FaultName;
  options: FaultOptions;
  /** Applications left; Infinity = until cleared. */
  left: number;
}

interface ListingPlan {
  /** Records in the array, in order. */
  size: number;
  /** The most bytes one record can take. */
  room: number;
  /** Writes record `i` into `chunk` at `pos` (`room` bytes free); returns the end. */
  write(chunk: Buffer, pos: number, i: number): number;
  count: number;
  recordCount: number;
  truncate: boolean;
  slowMs: number;
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
  private readonly passwordDigest: Buffer;
  private readonly emailDigest: Buffer;
  private readonly tokenTtlSeconds: number;
  private readonly tokenShape: TokenShape;
  private readonly dataset: Dataset;
  private readonly jwt = new JwtIssuer();
  private readonly server: Server | HttpsServer;
  private readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  private plainServer: Server | undefined;
  private plainBaseUrl: string | undefined;
  private readonly scheme: 'http' | 'https';
  private readonly sockets = new Set<Socket>();
  private readonly closing = new AbortController();
  private fault: ActiveFault | null = null;
  private recordsJson: Buffer[] | null = null;
  private rawBody: { body: Buffer; contentType: string } | null = null;
  private baseUrl = '';

  constructor(options: SimulatorOptions) {
    this.email = options.email ?? DEFAULT_EMAIL;
    this.password = options.password ?? DEFAULT_PASSWORD;
    this.emailDigest = digest(this.email.toLowerCase());
    this.passwordDigest = digest(this.password);
    this.tokenTtlSeconds = options.tokenTtlSeconds ?? 3600;
    this.tokenShape = options.tokenShape ?? 'data.access_token';
    this.dataset = new Dataset(options.seed ?? 1, options.records ?? 1000);
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.handle(req, res).catch(() => {
        if (!res.headersSent) sendJson(res, 500, { message: 'Server Error' });
        else res.destroy();
      });
    };
    this.handler = handler;
    this.scheme = options.tls ? 'https' : 'http';
    this.server = options.tls ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, handler) : createServer(handler);
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
    if (name === 'revoke-tokens') {
      this.revokeTokens();
      return;
    }
    if (name === null) {
      this.fault = null;
      return;
    }
    if (!FAULT_NAMES.includes(name)) throw new RangeError(`unknown fault ${JSON.stringify(name)}; known: ${FAULT_NAMES.join(', ')}`);
    const times = options.times;
    if (times !== undefined && (!Number.isInteger(times) || times < 1)) throw new RangeError(`times must be a whole number >= 1, got ${times}`);
    this.fault = { name, options: { ...options }, left: times ?? Infinity };
  }

  revokeTokens(): void {
    this.jwt.rotate();
  }

  mutate(m: Mutation): void {
    this.dataset.mutate(m);
  }

  setRecordsJson(list: string[] | null): void {
    this.recordsJson = list === null ? null : list.map((text) => Buffer.from(text, 'utf8'));
  }

  setRawBody(body: string | Buffer | null, contentType = 'application/json'): void {
    this.rawBody = body === null ? null : { body: typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body), contentType };
  }

  recordCount(): number {
    return this.recordsJson ? this.recordsJson.length : this.dataset.count;
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

  /** The current fault if it is `name`, counting one application against `times`. */
  private take(name: FaultName): FaultOptions | undefined {
    const fault = this.fault;
    if (!fault || fault.name !== name) return undefined;
    fault.left--;
    if (fault.left <= 0) this.fault = null;
    return fault.options;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on('error', () => {});
    const url = new URL(req.url ?? '/', 'http://simulator');
    const path = url.pathname.replace(/\/+$/, '');
    if (path === LOGIN_PATH) {
      this.stats.logins++;
      if (req.method !== 'POST') return sendJson(res, 405, { message: `The ${req.method} method is not supported for route api/login. Supported methods: POST.` });
      return this.login(req, res);
    }
    if (path === LISTING_PATH) {
      this.stats.listings++;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return sendJson(res, 405, { message: `The ${req.method} method is not supported for route api/bulk-wine-reconciliation-data. Supported methods: GET, HEAD.` });
      }
      return this.listing(req, res, url);
    }
    req.resume();
    sendJson(res, 404, { message: 'Not Found' });
  }

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const failure = this.take('login-error');
    if (failure) {
      req.resume();
      return sendJson(res, failure.status ?? 500, { message: 'Server Error' });
    }
    const missing: string[] = [];
    if (mediaType(req.headers['content-type']) !== 'application/json') missing.push('Content-Type: application/json');
    if (!headerIs(req.headers['x-requested-with'], 'xmlhttprequest')) missing.push('X-Requested-With: XMLHttpRequest');
    if (!headerIs(req.headers['service_app'], 'mobile')) missing.push('service_app: mobile');
    if (missing.length > 0) {
      req.resume();
      return sendJson(res, 400, { message: `Missing or invalid header: ${missing.join(', ')}` });
    }
    const raw = await readBody(req, MAX_LOGIN_BODY);
    if (raw === undefined) return sendJson(res, 413, { message: 'Request body too large.' });
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return sendJson(res, 400, { message: 'The request body is not valid JSON.' });
    }
    const { email, password } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const errors: Record<string, string[]> = {};
    if (typeof email !== 'string' || email === '') errors.email = ['The email field is required.'];
    if (typeof password !== 'string' || password === '') errors.password = ['The password field is required.'];
    if (Object.keys(errors).length > 0) {
      return sendJson(res, 422, { message: Object.values(errors).map((e) => e[0]).join(' '), errors });
    }
    // Both compared (no early exit), in constant time; the password is not kept.
    const emailOk = timingSafeEqual(digest((email as string).toLowerCase()), this.emailDigest);
    const passwordOk = timingSafeEqual(digest(password as string), this.passwordDigest);
    if (!emailOk || !passwordOk) return sendJson(res, 401, { message: 'Invalid credentials.' });

    const nowSeconds = Math.floor(Date.now() / 1000);
    const expired = this.take('expire-token') !== undefined;
    const exp = expired ? nowSeconds - 60 : nowSeconds + this.tokenTtlSeconds;
    const iat = expired ? exp - this.tokenTtlSeconds : nowSeconds;
    const token = this.jwt.sign({ sub: '1', iat, exp });
    const expiresIn = exp - nowSeconds;
    switch (this.tokenShape) {
      case 'bare':
        return send(res, 200, 'text/plain; charset=UTF-8', Buffer.from(token));
      case 'token':
        return sendJson(res, 200, { message: 'Login successful', token, expires_in: expiresIn });
      case 'jwt':
        return sendJson(res, 200, { status: 'success', jwt: token, user: { id: 1, email: this.email } });
      case 'nested-unknown':
        return sendJson(res, 200, { status: 'ok', result: { auth: { value: token, ttl: expiresIn }, user: { id: 1 } } });
      default:
        return sendJson(res, 200, {
          message: 'Login successful',
          data: { user: { id: 1, email: this.email }, access_token: token, token_type: 'bearer', expires_in: expiresIn },
        });
    }
  }

  private async listing(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    req.resume();
    const limited = this.take('rate-limit');
    if (limited) {
      const seconds = limited.retryAfterSeconds ?? 1;
      return sendJson(res, 429, { message: 'Too Many Attempts.' }, { 'retry-after': String(seconds), 'x-ratelimit-remaining': '0' });
    }
    const failing = this.take('server-error');
    if (failing) {
      const status = failing.status ?? 503;
      if (status === 502 || status === 504) {
        const title = status === 502 ? '502 Bad Gateway' : '504 Gateway Time-out';
        return send(res, status, 'text/html', Buffer.from(`<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`));
      }
      return sendJson(res, status, { message: status === 503 ? 'Service Unavailable' : 'Server Error' });
    }
    if (this.take('html')) return send(res, 200, 'text/html; charset=UTF-8', Buffer.from(LOGIN_PAGE));

    if (!headerIs(req.headers['serviceapp'], 'mobile')) return sendJson(res, 400, { message: 'Missing or invalid header: serviceapp: mobile' });
    const auth = /^bearer\s+(\S+)\s*$/i.exec(String(req.headers.authorization ?? ''));
    if (!auth || !this.jwt.verify(auth[1] as string, Date.now()).ok) return sendJson(res, 401, { message: 'Unauthenticated.' });

    if (url.searchParams.get('for_reporting') !== '1') return this.paginated(res, url);

    if (this.rawBody) return this.streamRaw(res, req.method === 'HEAD');
    const plan = this.plan();
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end();
      return;
    }
    return this.stream(res, plan);
  }

  /** What the listing sends now: the records (generated or raw) with the data faults applied. */
  private plan(): ListingPlan {
    const raw = this.recordsJson;
    const dataset = this.dataset;
    const base = raw ? raw.length : dataset.count;
    const writeRaw = (text: Buffer) => (chunk: Buffer, pos: number) => pos + text.copy(chunk, pos);
    let size = base;
    let write: (chunk: Buffer, pos: number, i: number) => number = raw
      ? (chunk, pos, i) => writeRaw(raw[i] as Buffer)(chunk, pos)
      : (chunk, pos, i) => dataset.writeAt(chunk, pos, i);
    let count = base;
    let recordCount = base;

    if (this.take('empty')) {
      size = 0;
      count = 0;
      recordCount = 0;
    }
    const invalid = this.take('invalid-records');
    if (invalid && size > 0) {
      const kinds = new Map(spreadPositions(size, invalid.count ?? INVALID_KINDS).map((p, j) => [p, ((j % INVALID_KINDS) + 1) as Invalid]));
      const inner = write;
      write = raw
        ? (chunk, pos, i) => {
            const kind = kinds.get(i);
            return kind === undefined ? inner(chunk, pos, i) : writeRaw(Buffer.from(spoil((raw[i] as Buffer).toString('utf8'), kind)))(chunk, pos);
          }
        : (chunk, pos, i) => dataset.writeAt(chunk, pos, i, kinds.get(i) ?? Invalid.None);
    }
    const duplicates = this.take('duplicate-ids');
    if (duplicates && size > 0) {
      const repeated = spreadPositions(size, duplicates.count ?? 3);
      const inner = write;
      const first = size;
      write = (chunk, pos, i) => {
        if (i < first) return inner(chunk, pos, i);
        const p = repeated[i - first] as number;
        return raw ? writeRaw(raw[p] as Buffer)(chunk, pos) : dataset.writeAt(chunk, pos, p, Invalid.None, true);
      };
      size += repeated.length;
      count = size;
      recordCount = size;
    }
    const mismatch = this.take('count-mismatch');
    if (mismatch) {
      count += mismatch.count ?? 1;
      recordCount += mismatch.count ?? 1;
    }
    const truncate = this.take('truncate') !== undefined;
    const slow = this.take('slow');
    // A raw record may grow by a few bytes when the invalid-records fault edits it.
    const room = raw ? raw.reduce((max, text) => Math.max(max, text.length), 0) + 64 : MAX_RECORD_BYTES;
    return { size, room, write, count, recordCount, truncate, slowMs: slow ? (slow.delayMs ?? 5000) : 0 };
  }

  /**
   * The listing body, written in chunks of about 64 KB, each written only once the socket has
   * taken the previous ones ('drain'): memory stays flat whatever the number of records.
   */
  private async stream(res: ServerResponse, plan: ListingPlan): Promise<void> {
    const head = Buffer.from(`{"message":"${LISTING_MESSAGE}","count":${plan.count},"bulk_wine_reconciliation":[`);
    const tail = Buffer.from(`],"recordCount":${plan.recordCount}}`);
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'cache-control': 'no-cache, private' };
    let stopAt = Infinity;
    if (plan.truncate) {
      // Declare the whole length, send about half of it (ending mid-record), then drop the connection.
      const total = head.length + tail.length + Math.max(0, plan.size - 1) + this.measure(plan);
      headers['content-length'] = total;
      stopAt = Math.floor(total / 2);
    }
    res.writeHead(200, headers);
    const size = Math.max(CHUNK_BYTES, plan.room + 1, head.length + tail.length);
    // Chunks go back to `spare` once the socket has taken them: a few buffers serve the whole listing.
    const spare: Buffer[] = [];
    const recycle = (used: Buffer) => () => {
      if (spare.length < 4) spare.push(used);
    };
    let chunk: Buffer = Buffer.allocUnsafe(size);
    let pos = head.copy(chunk, 0);
    let sent = 0;
    let stalled = plan.slowMs === 0;
    const send = async (): Promise<boolean> => {
      if (!(await this.flush(res, chunk.subarray(0, pos), recycle(chunk)))) return false;
      sent += pos;
      pos = 0;
      chunk = spare.pop() ?? Buffer.allocUnsafe(size);
      if (stalled) return true;
      stalled = true;
      return this.stall(res, plan.slowMs);
    };
    for (let i = 0; i < plan.size; i++) {
      if (pos + plan.room + 1 > size && !(await send())) return;
      if (i > 0) chunk[pos++] = 0x2c;
      const start = pos;
      pos = plan.write(chunk, pos, i);
      if (sent + pos >= stopAt) return this.cutOff(res, chunk.subarray(0, Math.max(start + 1, Math.min(pos - 1, stopAt - sent))));
    }
    if (plan.truncate) {
      // No record to cut (an empty listing): cut the envelope instead.
      return this.cutOff(res, Buffer.concat([chunk.subarray(0, pos), tail]).subarray(0, Math.max(1, stopAt - sent)));
    }
    // slow: the first chunk goes out without the tail, then the stall.
    if (!stalled && !(await send())) return;
    if (pos + tail.length > size && !(await send())) return;
    pos += tail.copy(chunk, pos);
    if (!(await this.flush(res, chunk.subarray(0, pos)))) return;
    res.end();
  }

  /** Total bytes of the plan's records (for the truncate fault's declared Content-Length). */
  private measure(plan: ListingPlan): number {
    const scratch = Buffer.allocUnsafe(plan.room);
    let total = 0;
    for (let i = 0; i < plan.size; i++) total += plan.write(scratch, 0, i);
    return total;
  }

  private async streamRaw(res: ServerResponse, headOnly: boolean): Promise<void> {
    const { body, contentType } = this.rawBody!;
    const truncate = this.take('truncate') !== undefined;
    const slow = this.take('slow');
    res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
    if (headOnly) return void res.end();
    if (truncate) return this.cutOff(res, body.subarray(0, Math.floor(body.length / 2)));
    if (slow) {
      const half = Math.floor(body.length / 2);
      if (!(await this.flush(res, body.subarray(0, half)))) return;
      if (!(await this.stall(res, slow.delayMs ?? 5000))) return;
      res.end(body.subarray(half));
      return;
    }
    res.end(body);
  }

  /** Laravel-style pagination (15 a page): what a client that forgets `for_reporting=1` gets. */
  private paginated(res: ServerResponse, url: URL): void {
    const total = this.recordCount();
    const lastPage = Math.max(1, Math.ceil(total / PAGE_SIZE));
    const pageParam = Number(url.searchParams.get('page') ?? '1');
    const page = Number.isInteger(pageParam) && pageParam >= 1 ? pageParam : 1;
    const from = (page - 1) * PAGE_SIZE;
    const to = Math.min(total, from + PAGE_SIZE);
    const records: string[] = [];
    const chunk = Buffer.allocUnsafe(MAX_RECORD_BYTES);
    for (let i = from; i < to; i++) {
      records.push(this.recordsJson ? (this.recordsJson[i] as Buffer).toString('utf8') : chunk.toString('latin1', 0, this.dataset.writeAt(chunk, 0, i)));
    }
    const path = `${this.baseUrl}${LISTING_PATH}`;
    const link = (p: number) => `${path}?page=${p}`;
    const rest = {
      links: { first: link(1), last: link(lastPage), prev: page > 1 ? link(page - 1) : null, next: page < lastPage ? link(page + 1) : null },
      meta: {
        current_page: page,
        from: to > from ? from + 1 : null,
        last_page: lastPage,
        path,
        per_page: PAGE_SIZE,
        to: to > from ? to : null,
        total,
      },
    };
    const body = `{"data":[${records.join(',')}],${JSON.stringify(rest).slice(1)}`;
    send(res, 200, 'application/json', Buffer.from(body));
  }

  /**
   * Writes; waits for 'drain' when the socket buffer is full. false when the connection is gone.
   * `written` runs once the socket no longer needs `data`.
   */
  private flush(res: ServerResponse, data: Buffer, written?: () => void): Promise<boolean> {
    if (res.destroyed || this.closing.signal.aborted) return Promise.resolve(false);
    const onWritten = written && ((error?: Error | null) => (error ? undefined : written()));
    if (res.write(data, onWritten)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        res.off('drain', onDrain);
        res.off('close', onClose);
        resolve(ok);
      };
      const onDrain = () => done(true);
      const onClose = () => done(false);
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
  }

  /** Waits `ms`; false when the connection closed or the simulator is closing meanwhile. */
  private stall(res: ServerResponse, ms: number): Promise<boolean> {
    const signal = this.closing.signal;
    if (signal.aborted || res.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        res.off('close', onClose);
        signal.removeEventListener('abort', onClose);
        resolve(ok);
      };
      const onClose = () => done(false);
      const timer = setTimeout(() => done(true), ms);
      res.on('close', onClose);
      signal.addEventListener('abort', onClose);
    });
  }

  /** Sends `data`, then drops the connection before the declared length is reached. */
  private async cutOff(res: ServerResponse, data: Buffer): Promise<void> {
    await new Promise<void>((resolve) => {
      if (res.destroyed) return resolve();
      res.write(data, () => resolve());
      res.once('close', () => resolve());
    });
    res.destroy();
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function headerIs(value: string | string[] | undefined, expected: string): boolean {
  return headerValue(value)?.trim().toLowerCase() === expected;
}

function mediaType(value: string | string[] | undefined): string | undefined {
  return headerValue(value)?.split(';')[0]?.trim().toLowerCase();
}

function send(res: ServerResponse, status: number, contentType: string, body: Buffer, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': body.length, 'cache-control': 'no-cache, private', ...headers });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  send(res, status, 'application/json', Buffer.from(JSON.stringify(body)), headers);
}

/** The body of a request, or undefined when it exceeds `limit` bytes. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > limit) {
      req.resume();
      return undefined;
    }
    parts.push(part);
  }
  return Buffer.concat(parts);
}

/** A raw record text made invalid by editing one field (for the invalid-records fault on raw records). */
function spoil(text: string, kind: Invalid): string {
  const number = '-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?';
  const value = `(?:"(?:[^"\\\\]|\\\\.)*"|${number}|null|true|false)`;
  const edit = (field: string, replacement: string) => {
    const re = new RegExp(`("${field}"\\s*:\\s*)${value}`);
    return re.test(text) ? text.replace(re, `$1${replacement}`) : text.replace(/\}\s*$/, `,"${field}":${replacement}}`);
  };
  switch (kind) {
    case Invalid.Sales:
      return edit('inventory_sales', '"n/a"');
    case Invalid.Date:
      return edit('first_sale', '"2021-02-30"');
    case Invalid.Wpi:
      return edit('wpi', '""');
    default:
      return text.replace(/("id"\s*:\s*)"?(\d+)"?/, '$1-$2');
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
