import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { UpstreamError } from '../../src/errors.js';
import { ACCEPT_ENCODING, contentCoding, decodedBody, isGzip } from '../../src/extract/http/content-coding.js';

const listing = Buffer.from(
  JSON.stringify({
    message: 'ok',
    bulk_wine_reconciliation: Array.from({ length: 2000 }, (_, id) => ({ id, wpi: `W-${id % 97}` })),
  }),
);

/** `body` as a response would deliver it: in pieces of `size` bytes, a tick apart. */
async function* arriving(body: Buffer, size = 1000, failAfter = Infinity): AsyncGenerator<Buffer> {
  for (let at = 0; at < body.length; at += size) {
    if (at >= failAfter) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    await new Promise((resolve) => setImmediate(resolve));
    yield body.subarray(at, at + size);
  }
}

async function decode(raw: AsyncIterable<Buffer>, coding: string | undefined): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of decodedBody(raw, () => coding)) parts.push(part);
  return Buffer.concat(parts);
}

describe('content coding of the listing', () => {
  it('asks for what got would ask for', () => {
    expect(ACCEPT_ENCODING).toMatch(/^gzip, deflate, br(, zstd)?$/);
  });

  it('reads the coding from the headers; identity or none is no coding; x-gzip is gzip', () => {
    expect(contentCoding({ 'content-encoding': ' GZip ' })).toBe('gzip');
    expect(contentCoding({ 'content-encoding': 'identity' })).toBeUndefined();
    expect(contentCoding({})).toBeUndefined();
    expect([isGzip('gzip'), isGzip('x-gzip'), isGzip('deflate'), isGzip(undefined)]).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });

  it.each([
    ['gzip', gzipSync(listing)],
    ['x-gzip', gzipSync(listing)],
    [
      'gzip in several members',
      Buffer.concat([
        gzipSync(listing.subarray(0, 12_345)),
        gzipSync(listing.subarray(12_345, 12_400)),
        gzipSync(listing.subarray(12_400)),
      ]),
    ],
    ['deflate', deflateSync(listing)],
    ['deflate without its zlib header', deflateRawSync(listing)],
    ['br', brotliCompressSync(listing)],
  ])('decodes %s to the listing', async (label, coded) => {
    const coding = label.split(' ')[0];
    expect((await decode(arriving(coded), coding)).equals(listing)).toBe(true);
  });

  it('passes an unknown or stacked coding, and no coding, through as it is', async () => {
    expect((await decode(arriving(listing), undefined)).equals(listing)).toBe(true);
    const stacked = gzipSync(brotliCompressSync(listing));
    expect((await decode(arriving(stacked), 'br, gzip')).equals(stacked)).toBe(true);
  });

  it('an empty coded body is empty, not an error', async () => {
    expect((await decode(arriving(Buffer.alloc(0)), 'gzip')).length).toBe(0);
  });

  it('a gzip body that ends early or is damaged fails retryably, counting the listing bytes decoded', async () => {
    const coded = gzipSync(listing);
    const cut = decode(arriving(coded.subarray(0, coded.length - 100)), 'gzip');
    await expect(cut).rejects.toBeInstanceOf(UpstreamError);
    await expect(cut).rejects.toMatchObject({
      retryable: true,
      message: expect.stringMatching(
        /^listing body \(gzip\) ends early or is damaged after \d+ bytes: unexpected end of file$/,
      ),
    });
    await expect(decode(arriving(Buffer.from('<html>not gzip</html>')), 'gzip')).rejects.toMatchObject({
      retryable: true,
      message: expect.stringContaining('incorrect header check'),
    });
  });

  it('a failure of the connection passes through the decoder as it is', async () => {
    const failing = decode(arriving(gzipSync(listing), 1000, 3000), 'gzip');
    await expect(failing).rejects.toThrow('socket hang up');
    await expect(failing).rejects.not.toBeInstanceOf(UpstreamError);
  });
});
