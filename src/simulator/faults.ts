/**
 * The fault modes, switchable at runtime, one at a time: each applies to the next `times`
 * requests it concerns, or until cleared. The endpoints ask `take(name)` where a fault can strike;
 * here are the listing's HTTP refusals (rate-limit, server-error, html) and its data faults
 * (empty, invalid-records, duplicate-ids, count-mismatch, truncate, slow) as a plan of what the
 * listing sends. login-error and expire-token are taken by the login endpoint; revoke-tokens acts
 * at once on the token issuer.
 */
import type { ServerResponse } from 'node:http';
import { INVALID_KINDS, Invalid, MAX_RECORD_BYTES, spreadPositions, type Dataset } from './dataset.js';
import { send, sendJson } from './respond.js';

/** The 'html' fault's body: what a web framework's login page looks like when the API is not there. */
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
  /** slow: the stall after the first chunk, default 5000 ms; truncate: a stall before the cut, default none. */
  delayMs?: number;
}

interface ActiveFault {
  name: FaultName;
  options: FaultOptions;
  /** Applications left; Infinity = until cleared. */
  left: number;
}

export class Faults {
  private fault: ActiveFault | null = null;

  /** Sets the one fault (null clears it). 'revoke-tokens' is not kept: the caller acts on it at once. */
  set(name: FaultName | null, options: FaultOptions = {}): void {
    if (name === null) {
      this.fault = null;
      return;
    }
    if (!FAULT_NAMES.includes(name))
      throw new RangeError(`unknown fault ${JSON.stringify(name)}; known: ${FAULT_NAMES.join(', ')}`);
    const times = options.times;
    if (times !== undefined && (!Number.isInteger(times) || times < 1))
      throw new RangeError(`times must be a whole number >= 1, got ${times}`);
    this.fault = { name, options: { ...options }, left: times ?? Infinity };
  }

  /** The current fault if it is `name`, counting one application against `times`. */
  take(name: FaultName): FaultOptions | undefined {
    const fault = this.fault;
    if (!fault || fault.name !== name) return undefined;
    fault.left--;
    if (fault.left <= 0) this.fault = null;
    return fault.options;
  }
}

/** Answers a listing request with the current HTTP fault, if any (checked before authentication); true when it did. */
export function refuseListing(res: ServerResponse, faults: Faults): boolean {
  const limited = faults.take('rate-limit');
  if (limited) {
    const seconds = limited.retryAfterSeconds ?? 1;
    sendJson(
      res,
      429,
      { message: 'Too Many Attempts.' },
      { 'retry-after': String(seconds), 'x-ratelimit-remaining': '0' },
    );
    return true;
  }
  const failing = faults.take('server-error');
  if (failing) {
    const status = failing.status ?? 503;
    if (status === 502 || status === 504) {
      const title = status === 502 ? '502 Bad Gateway' : '504 Gateway Time-out';
      send(
        res,
        status,
        'text/html',
        Buffer.from(
          `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n` +
            `<center><h1>${title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`,
        ),
      );
    } else {
      sendJson(res, status, { message: status === 503 ? 'Service Unavailable' : 'Server Error' });
    }
    return true;
  }
  if (faults.take('html')) {
    send(res, 200, 'text/html; charset=UTF-8', Buffer.from(LOGIN_PAGE));
    return true;
  }
  return false;
}

export interface ListingPlan {
  /** Records in the array, in order. */
  size: number;
  /** The most bytes one record can take. */
  room: number;
  /** Writes record `i` into `chunk` at `pos` (`room` bytes free); returns the end. */
  write(chunk: Buffer, pos: number, i: number): number;
  count: number;
  recordCount: number;
  truncate: boolean;
  /** truncate: how long the connection stays open, silent, before it is dropped. */
  truncateDelayMs: number;
  slowMs: number;
}

/** What the listing sends now: the records (generated, or `raw` texts when set) with the data faults applied. */
export function planListing(dataset: Dataset, raw: Buffer[] | null, faults: Faults): ListingPlan {
  const base = raw ? raw.length : dataset.count;
  const writeRaw = (text: Buffer) => (chunk: Buffer, pos: number) => pos + text.copy(chunk, pos);
  let size = base;
  let write: (chunk: Buffer, pos: number, i: number) => number = raw
    ? (chunk, pos, i) => writeRaw(raw[i] as Buffer)(chunk, pos)
    : (chunk, pos, i) => dataset.writeAt(chunk, pos, i);
  let count = base;
  let recordCount = base;

  if (faults.take('empty')) {
    size = 0;
    count = 0;
    recordCount = 0;
  }
  const invalid = faults.take('invalid-records');
  if (invalid && size > 0) {
    const kinds = new Map(
      spreadPositions(size, invalid.count ?? INVALID_KINDS).map((p, j) => [p, ((j % INVALID_KINDS) + 1) as Invalid]),
    );
    const inner = write;
    write = raw
      ? (chunk, pos, i) => {
          const kind = kinds.get(i);
          return kind === undefined
            ? inner(chunk, pos, i)
            : writeRaw(Buffer.from(spoil((raw[i] as Buffer).toString('utf8'), kind)))(chunk, pos);
        }
      : (chunk, pos, i) => dataset.writeAt(chunk, pos, i, kinds.get(i) ?? Invalid.None);
  }
  const duplicates = faults.take('duplicate-ids');
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
  const mismatch = faults.take('count-mismatch');
  if (mismatch) {
    count += mismatch.count ?? 1;
    recordCount += mismatch.count ?? 1;
  }
  const truncated = faults.take('truncate');
  const truncate = truncated !== undefined;
  const slow = faults.take('slow');
  // A raw record may grow by a few bytes when the invalid-records fault edits it.
  const room = raw ? raw.reduce((max, text) => Math.max(max, text.length), 0) + 64 : MAX_RECORD_BYTES;
  return {
    size,
    room,
    write,
    count,
    recordCount,
    truncate,
    truncateDelayMs: truncated?.delayMs ?? 0,
    slowMs: slow ? (slow.delayMs ?? 5000) : 0,
  };
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
    case Invalid.NegativeId:
      return text.replace(/("id"\s*:\s*)"?(\d+)"?/, '$1-$2');
    case Invalid.None:
      return text;
  }
}
