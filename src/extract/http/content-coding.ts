/**
 * The listing's Content-Encoding, undone by us rather than by got: with got's own decompression
 * the bytes as they arrived are gone, and a gzip body is worth keeping, since it is the payload
 * archive ready-made (no recompression of a few hundred MB on the run's critical path).
 *
 * We ask for what got would ask for and decode what it would decode (decompress-response), so
 * that the listing reaches the parser as before whatever the upstream chooses; `x-gzip` is gzip.
 */
import { pipeline, Readable, type Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { UpstreamError } from '../../errors.js';

/** zstd arrived in node:zlib with Node 22.15 / 23.8; older typings do not declare it. */
const zstd = zlib as unknown as { createZstdDecompress?: () => Transform };

export const ACCEPT_ENCODING = [
  'gzip',
  'deflate',
  'br',
  ...(typeof zstd.createZstdDecompress === 'function' ? ['zstd'] : []),
].join(', ');

/** The response's content coding, lowercased; undefined for identity or none. */
export function contentCoding(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['content-encoding'];
  const coding = (Array.isArray(value) ? value.join(',') : (value ?? '')).trim().toLowerCase();
  return coding === '' || coding === 'identity' ? undefined : coding;
}

export function isGzip(coding: string | undefined): boolean {
  return coding === 'gzip' || coding === 'x-gzip';
}

/**
 * Coded bytes go to the decoder 256 KiB at a time rather than as each network read (16-64 KiB)
 * arrives: every write to a zlib stream is a round trip through libuv's thread pool, whose answer
 * waits for the JavaScript thread, busy with the parse; fewer, larger writes keep the download at
 * the network's pace.
 */
const DECODE_BATCH = 256 * 1024;

/**
 * The decoder's output comes in chunks of this much. Each chunk is a round trip through libuv's
 * pool and a callback on the JavaScript thread, so fewer, larger chunks leave that thread to the
 * parse (zlib's default of 16 KiB is far too small for a listing).
 */
const DECODED_CHUNK = 1024 * 1024;

/** The decoder for `coding`, given the body's first bytes; undefined: the bytes pass as they are. */
function decoderFor(coding: string | undefined, first: Buffer): Transform | undefined {
  const chunkSize = DECODED_CHUNK;
  if (isGzip(coding)) return zlib.createGunzip({ chunkSize });
  // Some servers send raw deflate (no zlib header) under `deflate`: its first byte tells.
  if (coding === 'deflate')
    return (first[0]! & 0x08) === 0 ? zlib.createInflateRaw({ chunkSize }) : zlib.createInflate({ chunkSize });
  if (coding === 'br') return zlib.createBrotliDecompress({ chunkSize });
  if (coding === 'zstd' && typeof zstd.createZstdDecompress === 'function') return zstd.createZstdDecompress();
  // An unknown or stacked coding reaches the content checks as it is, as with got.
  return undefined;
}

/**
 * The body of `raw` decoded. `coding` is read when the first bytes arrive (the headers came
 * before them); an empty body stays empty. A coded body that ends early or is damaged fails as a
 * retryable UpstreamError: a cut-off response under chunked transfer has no length to check.
 */
export async function* decodedBody(
  raw: AsyncIterable<Buffer>,
  coding: () => string | undefined,
): AsyncGenerator<Buffer> {
  const chunks = raw[Symbol.asyncIterator]();
  const first = await chunks.next();
  if (first.done) return;
  const name = coding();
  let failed: { error: unknown } | undefined;
  // `batchBytes`: coded bytes are handed to the decoder in batches of this much (see DECODE_BATCH).
  async function* received(batchBytes = 0): AsyncGenerator<Buffer> {
    try {
      let batch: Buffer[] = [];
      let size = 0;
      const take = (): Buffer => {
        const whole = batch.length === 1 ? batch[0]! : Buffer.concat(batch, size);
        batch = [];
        size = 0;
        return whole;
      };
      for (let next = first; !next.done; next = await chunks.next()) {
        batch.push(next.value);
        size += next.value.length;
        if (size >= batchBytes) yield take();
      }
      if (size > 0) yield take();
    } catch (error) {
      failed = { error };
      throw error;
    } finally {
      await chunks.return?.();
    }
  }
  const decoder = decoderFor(name, first.value);
  if (!decoder) return yield* received();
  let decoded = 0;
  try {
    for await (const chunk of pipeline(
      Readable.from(received(DECODE_BATCH), { objectMode: false }),
      decoder,
      () => undefined,
    ) as AsyncIterable<Buffer>) {
      decoded += chunk.length;
      yield chunk;
    }
  } catch (error) {
    // The source's own failure (connection, local disk) passes through the decoder unchanged.
    if (failed && error === failed.error) throw error;
    throw new UpstreamError(
      `listing body (${name}) ends early or is damaged after ${decoded} bytes: ` +
        `${error instanceof Error ? error.message : String(error)}`,
      {
        retryable: true,
      },
    );
  }
}
