/**
 * How an upstream field name outside the catalogue is stored and shown (README "New upstream
 * fields"): wherever a name is kept or printed (sync_fields, sync_runs.unknown_fields and
 * field_counts, the run summary, the webhook, logs, reject reasons), a name of more than
 * MAX_NAME_BYTES bytes of UTF-8 is shown as its first bytes, cut on a character boundary, then '…'
 * and the first 8 hex digits of the SHA-256 of the whole name: distinct long names stay distinct,
 * and every place shows the same text for the same name. Only its value's key in extra_fields is
 * the exact name.
 *
 * A name of 3 kB broke every run (a btree row of sync_fields' primary key holds 2704 bytes at
 * most), and a few thousand long names would have filled memory and the audit row; with the rule,
 * at most MAX_EXTRA_FIELDS names of at most MAX_NAME_BYTES bytes are ever kept.
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
