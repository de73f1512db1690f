/**
 * Response helpers shared by the simulator's endpoints. Writes respect backpressure and give up
 * as soon as the connection or the simulator closes, so a stalled client never holds it open.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';
import * as zlib from 'node:zlib';

/** Content codings the listing can be served in (RFC 9110; `x-gzip` is gzip under its old name). */
export type ContentCoding = 'gzip' | 'x-gzip' | 'deflate' | 'br';

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function headerIs(value: string | string[] | undefined, expected: string): boolean {
  return headerValue(value)?.trim().toLowerCase() === expected;
}

export function mediaType(value: string | string[] | undefined): string | undefined {
  return headerValue(value)?.split(';')[0]?.trim().toLowerCase();
}

export function send(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: Buffer,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed) return;
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': body.length,
    'cache-control': 'no-cache, private',
    ...headers,
  });
  res.end(body);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  send(res, status, 'application/json', Buffer.from(JSON.stringify(body)), headers);
}

/** The body of a request, or undefined when it exceeds `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
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

/** Whether the request's Accept-Encoding takes `coding` (q=0 refuses it), as a server with compression on decides. */
export function accepts(acceptEncoding: string | string[] | undefined, coding: ContentCoding): boolean {
  const names = coding === 'x-gzip' ? ['gzip', 'x-gzip'] : [coding];
  return String(headerValue(acceptEncoding) ?? '')
    .split(',')
    .map((part) =>
      part
        .trim()
        .toLowerCase()
        .split(/\s*;\s*/),
    )
    .some(
      ([name, ...params]) => (names.includes(name!) || name === '*') && !params.some((p) => /^q=0(\.0*)?$/.test(p)),
    );
}

/** zlib at its default level, as a web server compresses: not the level the archive would use. */
export function encoder(coding: ContentCoding): zlib.Gzip | zlib.Deflate | zlib.BrotliCompress {
  if (coding === 'br') return zlib.createBrotliCompress();
  return coding === 'deflate' ? zlib.createDeflate() : zlib.createGzip();
}

/**
 * Writes; waits for 'drain' when the socket (or the encoder in front of it) is full. false when
 * the connection is gone or the simulator is `closing`. `written` runs once `data` is taken.
 */
export function flush(res: Writable, closing: AbortSignal, data: Buffer, written?: () => void): Promise<boolean> {
  if (res.destroyed || closing.aborted) return Promise.resolve(false);
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

/** Waits `ms`; false when the connection closed or the simulator is `closing` meanwhile. */
export function stall(res: ServerResponse, closing: AbortSignal, ms: number): Promise<boolean> {
  if (closing.aborted || res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('close', onClose);
      closing.removeEventListener('abort', onClose);
      resolve(ok);
    };
    const onClose = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    res.on('close', onClose);
    closing.addEventListener('abort', onClose);
  });
}

/**
 * A coded body cut short: `data` and what came before go out decodable, then the response ends
 * cleanly without the coding's end (a gzip stream with no trailer). Only the client's decoder can
 * tell: chunked transfer has no length to check.
 */
export async function cutCoded(
  coded: zlib.Gzip | zlib.Deflate | zlib.BrotliCompress,
  res: ServerResponse,
  data: Buffer,
): Promise<void> {
  coded.write(data);
  await new Promise<void>((resolve) => coded.flush(() => resolve()));
  coded.unpipe(res);
  const left: Buffer[] = [];
  for (let part: Buffer | null; (part = coded.read() as Buffer | null) !== null;) left.push(part);
  res.end(Buffer.concat(left));
  coded.destroy();
}

/** Sends `data`, then drops the connection before the declared length is reached. */
export async function cutOff(res: ServerResponse, data: Buffer): Promise<void> {
  await new Promise<void>((resolve) => {
    if (res.destroyed) return resolve();
    res.write(data, () => resolve());
    res.once('close', () => resolve());
  });
  res.destroy();
}
