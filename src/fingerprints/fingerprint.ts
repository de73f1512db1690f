/**
 * A 64-bit fingerprint of a record's exact source bytes for the unchanged-record shortcut.
 * Rule: no allocation in here; the result goes into `out`.
 */
import { viewOf } from '../io/byte-view.js';

const C1 = 0x239b961b;
const C2 = 0xab0e9789 | 0;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93 | 0;
/** Identifies this fingerprint function; part of the trust key (trust-key.ts). */
export const FINGERPRINT_NAME = 'murmur3-x86-128/64';

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b | 0);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35 | 0);
  return h ^ (h >>> 16);
}

/** A partial little-endian word of the last 1-3 bytes. */
function tailWord(b: Uint8Array, i: number, n: number): number {
  let k = 0;
  for (let j = n - 1; j >= 0; j--) k = (k << 8) | b[i + j]!;
  return k;
}

/**
 * Fingerprint of `b[start, end)` into out[0] (high 32 bits) and out[1] (low 32 bits), as signed
 * int32. `seed` is derived from the trust key: a build that shapes rows differently computes
 * other fingerprints, so a stored one never vouches for a row another build made.
 */
export function fingerprint(b: Uint8Array, start: number, end: number, out: Int32Array, seed: number): void {
  const len = end - start;
  const dv = viewOf(b);
  let h1 = seed | 0;
  let h2 = seed | 0;
  let h3 = seed | 0;
  let h4 = seed | 0;
  const blocksEnd = start + (len & ~15);
  let i = start;
  for (; i < blocksEnd; i += 16) {
    h1 ^= Math.imul(rotl(Math.imul(dv.getInt32(i, true), C1), 15), C2);
    h1 = (Math.imul((rotl(h1, 19) + h2) | 0, 5) + 0x561ccd1b) | 0;
    h2 ^= Math.imul(rotl(Math.imul(dv.getInt32(i + 4, true), C2), 16), C3);
    h2 = (Math.imul((rotl(h2, 17) + h3) | 0, 5) + 0x0bcaa747) | 0;
    h3 ^= Math.imul(rotl(Math.imul(dv.getInt32(i + 8, true), C3), 17), C4);
    h3 = (Math.imul((rotl(h3, 15) + h4) | 0, 5) + (0x96cd1c35 | 0)) | 0;
    h4 ^= Math.imul(rotl(Math.imul(dv.getInt32(i + 12, true), C4), 18), C1);
    h4 = (Math.imul((rotl(h4, 13) + h1) | 0, 5) + 0x32ac3b17) | 0;
  }
  // The last 0-15 bytes, lane by lane, as MurmurHash3 does (no rotation of h between them).
  const rem = len & 15;
  if (rem > 12) h4 ^= Math.imul(rotl(Math.imul(tailWord(b, i + 12, rem - 12), C4), 18), C1);
  if (rem > 8)
    h3 ^= Math.imul(rotl(Math.imul(rem >= 12 ? dv.getInt32(i + 8, true) : tailWord(b, i + 8, rem - 8), C3), 17), C4);
  if (rem > 4)
    h2 ^= Math.imul(rotl(Math.imul(rem >= 8 ? dv.getInt32(i + 4, true) : tailWord(b, i + 4, rem - 4), C2), 16), C3);
  if (rem > 0) h1 ^= Math.imul(rotl(Math.imul(rem >= 4 ? dv.getInt32(i, true) : tailWord(b, i, rem), C1), 15), C2);
  h1 ^= len;
  h2 ^= len;
  h3 ^= len;
  h4 ^= len;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  // 0/0 stands for "no fingerprint" where fingerprints are stored.
  if (h1 === 0 && h2 === 0) h2 = 1;
  out[0] = h1;
  out[1] = h2;
}
