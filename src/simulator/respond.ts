/**
 * Response helpers shared by the simulator's endpoints. Writes respect backpressure and give up
 * as soon as the connection or the simulator closes, so a stalled client never holds it open.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function headerIs(value: string | string[] | undefined, expected: string): boolean {
  return headerValue(value)?.trim().toLowerCase() === expected;
}

export function mediaType(value: string | string[] | undefined): string | undefined {
  return headerValue(value)?.split(';')[0]?.trim().toLowerCase();
}

export function send(res: ServerResponse, status: number, contentType: string, body: Buffer, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': body.length, 'cache-control': 'no-cache, private', ...headers });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
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

/**
 * Writes; waits for 'drain' when the socket buffer is full. false when the connection is gone or
 * the simulator is `closing`. `written` runs once the socket no longer needs `data`.
 */
export function flush(res: ServerResponse, closing: AbortSignal, data: Buffer, written?: () => void): Promise<boolean> {
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

/** Sends `data`, then drops the connection before the declared length is reached. */
export async function cutOff(res: ServerResponse, data: Buffer): Promise<void> {
  await new Promise<void>((resolve) => {
    if (res.destroyed) return resolve();
    res.write(data, () => resolve());
    res.once('close', () => resolve());
  });
  res.destroy();
}
