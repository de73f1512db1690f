/**
 * What the upstream answered, read for the API client (api.ts): the status and headers once they
 * arrive, the checks of a listing response, and errors that quote a bounded excerpt of a body.
 */
import type { Request } from 'got';
import { UpstreamError } from '../../errors.js';
import { proxyRefusal } from './connection-errors.js';
import { parseRetryAfter } from './retry.js';

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);
const EXCERPT = 200;

export type Headers = Record<string, string | string[] | undefined>;
export type HeadersOf = { statusCode: number; headers: Headers };

/**
 * The response's status and headers, once they arrive. got emits 'response' before any body
 * bytes, which wait in the stream until read.
 */
export function responseOf(request: Request): Promise<HeadersOf> {
  // A failure after the headers reaches whoever reads the body; none may crash the process meanwhile.
  request.on('error', () => {});
  return new Promise((resolve, reject) => {
    const onError = (error: unknown) => {
      request.off('response', onResponse);
      reject(error);
    };
    const onResponse = (response: HeadersOf) => {
      request.off('error', onError);
      resolve(response);
    };
    request.once('error', onError);
    request.once('response', onResponse);
  });
}

/** Status and content type checks on the listing response, given its first chunk. */
export async function checkResponse(
  response: { statusCode: number; headers: Record<string, string | string[] | undefined> },
  first: Buffer,
  rest: AsyncIterable<Buffer>,
  nowMs: number,
  url: string,
  proxyVariable: string | undefined,
): Promise<void> {
  const { statusCode, headers } = response;
  if (statusCode === 407 && proxyVariable !== undefined)
    throw proxyRefusal('listing', url, statusCode, proxyVariable, 'forward');
  const type = String(headers['content-type'] ?? '(none)');
  if (statusCode === 200) {
    // A JSON body under a missing or odd content type is still JSON; an HTML page is not.
    const start = first.subarray(0, 64).toString('utf8').trimStart();
    if (/\bjson\b/i.test(type) ? !start.startsWith('<') : start.startsWith('{') || start.startsWith('[')) return;
    throw new UpstreamError(
      `listing is ${type}, not JSON (status ${statusCode}): first ${EXCERPT} chars: ` +
        `${excerpt(await readSome(first, rest))}`,
      { retryable: false, status: statusCode },
    );
  }
  throw statusError('listing', statusCode, headers, await readSome(first, rest), nowMs);
}

export function statusError(
  what: string,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  nowMs: number,
): UpstreamError {
  const type = String(headers['content-type'] ?? '(none)');
  const retryAfterMs = parseRetryAfter(headers['retry-after'], nowMs);
  return new UpstreamError(`${what} failed with HTTP ${status} (${type}): ${excerpt(body)}`, {
    retryable: RETRYABLE_STATUS.has(status),
    status,
    retryAfterMs,
  });
}

async function readSome(first: Buffer, rest: AsyncIterable<Buffer>): Promise<string> {
  const chunks = [first];
  let size = first.length;
  try {
    for await (const chunk of rest) {
      if (size >= 4096) break;
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch {
    // the excerpt is best effort
  }
  return Buffer.concat(chunks).subarray(0, 4096).toString('utf8');
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > EXCERPT ? `${flat.slice(0, EXCERPT)}…` : flat);
}

export function serverMessage(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    const message =
      typeof parsed === 'object' && parsed !== null ? (parsed as { message?: unknown }).message : undefined;
    return typeof message === 'string' ? ` (server said: ${excerpt(message)})` : '';
  } catch {
    return body.trim() === '' ? '' : ` (server said: ${excerpt(body)})`;
  }
}
