/**
 * GET/HEAD of the listing: the `serviceapp` header and a bearer token checked, then the whole
 * listing (`for_reporting=1`) streamed with backpressure, so a million records are served with
 * flat memory (compressed on the way when a content coding is set and the client accepts it, as a
 * web server with compression on does), or a raw body set by a test, or, without
 * `for_reporting=1`, Laravel-style pages.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_RECORD_BYTES, type Dataset } from './dataset.js';
import { planListing, refuseListing, type Faults, type ListingPlan } from './faults.js';
import type { JwtIssuer } from './jwt.js';
import {
  accepts,
  cutCoded,
  cutOff,
  encoder,
  flush,
  headerIs,
  send,
  sendJson,
  stall,
  type ContentCoding,
} from './respond.js';

export const LISTING_PATH = '/api/bulk-wine-reconciliation-data';
export const LISTING_MESSAGE = 'Bulk wine reconciliation data retrieved successfully';
const PAGE_SIZE = 15;
/** Bytes per written chunk: about 270 generated records. */
const CHUNK_BYTES = 64 * 1024;

export class ListingEndpoint {
  private recordsJson: Buffer[] | null = null;
  private rawBody: { body: Buffer; contentType: string; contentEncoding: string | undefined } | null = null;
  private coding: ContentCoding | null = null;

  constructor(
    private readonly dataset: Dataset,
    private readonly jwt: JwtIssuer,
    private readonly faults: Faults,
    /** Aborted when the simulator closes: stalled and streaming responses stop. */
    private readonly closing: AbortSignal,
  ) {}

  setRecordsJson(list: string[] | null): void {
    this.recordsJson = list === null ? null : list.map((text) => Buffer.from(text, 'utf8'));
  }

  /** `contentEncoding`: the header sent with the body, which is then already coded by the caller. */
  setRawBody(body: string | Buffer | null, contentType = 'application/json', contentEncoding?: string): void {
    this.rawBody =
      body === null
        ? null
        : {
            body: typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body),
            contentType,
            contentEncoding,
          };
  }

  setContentCoding(coding: ContentCoding | null): void {
    this.coding = coding;
  }

  recordCount(): number {
    return this.recordsJson ? this.recordsJson.length : this.dataset.count;
  }

  /** `origin` is the simulator's base URL (the pages link to each other). */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL, origin: string): Promise<void> {
    req.resume();
    if (refuseListing(res, this.faults)) return;

    if (!headerIs(req.headers['serviceapp'], 'mobile'))
      return sendJson(res, 400, { message: 'Missing or invalid header: serviceapp: mobile' });
    const auth = /^bearer\s+(\S+)\s*$/i.exec(String(req.headers.authorization ?? ''));
    if (!auth || !this.jwt.verify(auth[1] as string, Date.now()).ok)
      return sendJson(res, 401, { message: 'Unauthenticated.' });

    if (url.searchParams.get('for_reporting') !== '1') return this.paginated(res, url, origin);

    if (this.rawBody) return this.streamRaw(res, req.method === 'HEAD');
    const plan = planListing(this.dataset, this.recordsJson, this.faults);
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end();
      return;
    }
    return this.stream(
      res,
      plan,
      this.coding && accepts(req.headers['accept-encoding'], this.coding) ? this.coding : null,
    );
  }

  /**
   * The listing body, written in chunks of about 64 KB, each written only once the socket has
   * taken the previous ones ('drain'): memory stays flat whatever the number of records.
   */
  private async stream(res: ServerResponse, plan: ListingPlan, coding: ContentCoding | null): Promise<void> {
    const closing = this.closing;
    const head = Buffer.from(`{"message":"${LISTING_MESSAGE}","count":${plan.count},"bulk_wine_reconciliation":[`);
    const tail = Buffer.from(`],"recordCount":${plan.recordCount}}`);
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'cache-control': 'no-cache, private',
    };
    if (coding) Object.assign(headers, { 'content-encoding': coding, vary: 'Accept-Encoding' });
    let stopAt = Infinity;
    if (plan.truncate) {
      // Declare the whole length, send about half of it (ending mid-record), then drop the connection;
      // coded (no length known ahead), the coded stream ends there without its end.
      const total = head.length + tail.length + Math.max(0, plan.size - 1) + measure(plan);
      if (!coding) headers['content-length'] = total;
      stopAt = Math.floor(total / 2);
    }
    res.writeHead(200, headers);
    // Coded, the body goes through the encoder; the client leaving stops it.
    const coded = coding ? encoder(coding) : undefined;
    if (coded) {
      coded.pipe(res);
      res.once('close', () => coded.destroy());
    }
    const out = coded ?? res;
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
    // truncate: the bytes before the cut go out, then (with a delay) a silence, then the connection
    // drops; a coded body instead ends short of its coding's end (only our decoder notices).
    const cut = async (data: Buffer): Promise<void> => {
      if (coded) return cutCoded(coded, res, data);
      if (plan.truncateDelayMs === 0) return cutOff(res, data);
      if (await flush(res, closing, data)) await stall(res, closing, plan.truncateDelayMs);
      res.destroy();
    };
    const send = async (): Promise<boolean> => {
      if (!(await flush(out, closing, chunk.subarray(0, pos), recycle(chunk)))) return false;
      sent += pos;
      pos = 0;
      chunk = spare.pop() ?? Buffer.allocUnsafe(size);
      if (stalled) return true;
      stalled = true;
      // Coded, the first chunk would wait in the encoder through the stall.
      if (coded) await new Promise<void>((resolve) => coded.flush(() => resolve()));
      return stall(res, closing, plan.slowMs);
    };
    for (let i = 0; i < plan.size; i++) {
      if (pos + plan.room + 1 > size && !(await send())) return;
      if (i > 0) chunk[pos++] = 0x2c;
      const start = pos;
      pos = plan.write(chunk, pos, i);
      if (sent + pos >= stopAt) return cut(chunk.subarray(0, Math.max(start + 1, Math.min(pos - 1, stopAt - sent))));
    }
    if (plan.truncate) {
      // No record to cut (an empty listing): cut the envelope instead.
      return cut(Buffer.concat([chunk.subarray(0, pos), tail]).subarray(0, Math.max(1, stopAt - sent)));
    }
    // slow: the first chunk goes out without the tail, then the stall.
    if (!stalled && !(await send())) return;
    if (pos + tail.length > size && !(await send())) return;
    pos += tail.copy(chunk, pos);
    if (!(await flush(out, closing, chunk.subarray(0, pos)))) return;
    out.end();
  }

  private async streamRaw(res: ServerResponse, headOnly: boolean): Promise<void> {
    const { body, contentType, contentEncoding } = this.rawBody!;
    const truncate = this.faults.take('truncate') !== undefined;
    const slow = this.faults.take('slow');
    res.writeHead(200, {
      'content-type': contentType,
      'content-length': body.length,
      ...(contentEncoding ? { 'content-encoding': contentEncoding } : {}),
    });
    if (headOnly) return void res.end();
    if (truncate) return cutOff(res, body.subarray(0, Math.floor(body.length / 2)));
    if (slow) {
      const half = Math.floor(body.length / 2);
      if (!(await flush(res, this.closing, body.subarray(0, half)))) return;
      if (!(await stall(res, this.closing, slow.delayMs ?? 5000))) return;
      res.end(body.subarray(half));
      return;
    }
    res.end(body);
  }

  /** Laravel-style pagination (15 a page): what a client that forgets `for_reporting=1` gets. */
  private paginated(res: ServerResponse, url: URL, origin: string): void {
    const total = this.recordCount();
    const lastPage = Math.max(1, Math.ceil(total / PAGE_SIZE));
    const pageParam = Number(url.searchParams.get('page') ?? '1');
    const page = Number.isInteger(pageParam) && pageParam >= 1 ? pageParam : 1;
    const from = (page - 1) * PAGE_SIZE;
    const to = Math.min(total, from + PAGE_SIZE);
    const records: string[] = [];
    const chunk = Buffer.allocUnsafe(MAX_RECORD_BYTES);
    for (let i = from; i < to; i++) {
      records.push(
        this.recordsJson
          ? (this.recordsJson[i] as Buffer).toString('utf8')
          : chunk.toString('latin1', 0, this.dataset.writeAt(chunk, 0, i)),
      );
    }
    const path = `${origin}${LISTING_PATH}`;
    const link = (p: number) => `${path}?page=${p}`;
    const rest = {
      links: {
        first: link(1),
        last: link(lastPage),
        prev: page > 1 ? link(page - 1) : null,
        next: page < lastPage ? link(page + 1) : null,
      },
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
}

/** Total bytes of the plan's records (for the truncate fault's declared Content-Length). */
function measure(plan: ListingPlan): number {
  const scratch = Buffer.allocUnsafe(plan.room);
  let total = 0;
  for (let i = 0; i < plan.size; i++) total += plan.write(scratch, 0, i);
  return total;
}
