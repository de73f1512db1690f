/**
 * How an upstream field name outside the catalogue is stored and shown. Rule: a name longer than
 * MAX_NAME_BYTES is shown everywhere as the same cut text plus a hash; only extra_fields keeps it whole.
 */
import { createHash } from 'node:crypto';

/**
 * Names up to this many bytes are kept exactly. At least PostgreSQL's 63-byte identifier limit:
 * every name that may become a BI column (load/extra-fields.ts) is stored as it is.
 */
export const MAX_NAME_BYTES = 128;
const DIGEST_HEX = 8;
const ELLIPSIS = '…';
/** Bytes of the name kept before the '…' (3 bytes) and the digest. */
const PREFIX_BYTES = MAX_NAME_BYTES - 3 - DIGEST_HEX;
/** A string of at most this many UTF-16 units has at most 3 bytes of UTF-8 each: short enough, unmeasured. */
const SURELY_SHORT = Math.floor(MAX_NAME_BYTES / 3);

/** The name as it is stored and shown: itself when short enough, else its first bytes, '…' and a digest. */
export function shownName(name: string): string {
  if (name.length <= SURELY_SHORT || Buffer.byteLength(name, 'utf8') <= MAX_NAME_BYTES) return name;
  let bytes = 0;
  let end = 0;
  for (const ch of name) {
    const cp = ch.codePointAt(0)!;
    const size = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + size > PREFIX_BYTES) break;
    bytes += size;
    end += ch.length;
  }
  const digest = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, DIGEST_HEX);
  return `${name.slice(0, end)}${ELLIPSIS}${digest}`;
}
