/**
 * The listing parser's public vocabulary: limits, the record and envelope shapes it produces,
 * and its syntax error. The flow is listing-scanner (bytes, JSON states) -> listing-envelope
 * (the document around the records) -> listing-parser (records out) -> record-values (a record's
 * value without JSON.parse).
 */

/** The top-level key whose array elements are the records. */
export const RECORDS_KEY = 'bulk_wine_reconciliation' as const;
/** Top-level values (other than the records array) larger than this are replaced by TOO_LARGE. */
export const MAX_SCALAR_BYTES = 64 * 1024;
export const TOO_LARGE = '<too large>';
/** Nesting beyond this many levels (anywhere) is refused outright: it bounds the bit stack (4 MiB). */
export const MAX_NESTING = 1 << 25;
/** Top-level keys (and scalars) kept beyond this many are dropped, so a huge envelope cannot exhaust memory. */
export const MAX_TOP_LEVEL_KEYS = 10_000;
export const ARRAY_AT_TOP_MESSAGE = 'listing is a JSON array, not the expected envelope object';

export interface ParsedRecord {
  /** Index in the array, 0-based. */
  position: number;
  /** JSON.parse result with numbers as exact-text strings; undefined when `problem` is set. */
  value: unknown;
  /** Set when the element could not be turned into a value (too deep, too large). */
  problem?: string;
  /** The element exactly as received (UTF-8 decoded), truncated to maxRawChars when larger. */
  raw: string;
  /** Set when `raw` is not the whole element (it was larger than maxRawChars). */
  rawCut?: true;
  /** Offset of the element's first byte in the whole document. */
  byteOffset: number;
  /** Its length in bytes. */
  byteLength: number;
  /** What the record hook attached (its fingerprint, [high, low] int32), when it handed the record on. */
  fingerprint?: RecordTag;
}

/** A record hook's tag for a record it hands on: travels with the ParsedRecord. */
export type RecordTag = readonly [number, number];

export type RecordsType = 'array' | 'missing' | 'null' | 'object' | 'string' | 'number' | 'boolean';

export interface ListingEnvelope {
  /** Every top-level key, in order seen (a key given twice appears twice). */
  topLevelKeys: string[];
  /**
   * Each top-level key other than the records array -> its value, parsed losslessly; values over 64 KiB are "<too
   * large>".
   */
  scalars: Record<string, unknown>;
  recordsKey: typeof RECORDS_KEY;
  /** What the records key held. */
  recordsType: RecordsType;
  /** Number of array elements seen. */
  recordCount: number;
  /** Total bytes of the document. */
  bytes: number;
}

export interface ListingParserOptions {
  /** Maximum nesting depth inside a record (the record's own object or array is level 1). Default 32. */
  maxDepth?: number;
  /** Maximum size of one record in bytes. Default 1 MiB. */
  maxRecordBytes?: number;
  /** `raw` is truncated to this many UTF-16 code units. Default 65536. */
  maxRawChars?: number;
  /** Sees every record's bytes before its value is built, and may take it over. */
  recordHook?: RecordBytesHook;
}

/**
 * What the reader of a record's members (record-members.ts) expects each key to be: records repeat
 * their keys in the same order, so the key member m had in the last record is compared first, a
 * word at a time, where scanning it for its closing quote costs as much and the reader would then
 * compare it again. A key found so is known to the reader by `found`.
 */
export interface KeyGuide {
  /** Per member position (at most `guess.length`): the index of the key expected there, or -1. */
  readonly guess: Int32Array;
  /** Per key: its text followed by '":' (plain ASCII), and that text's whole 4-byte little-endian words. */
  readonly keyColon: readonly Uint8Array[];
  readonly keyWords: readonly Int32Array[];
  /** Written per member of each record scanned: the index of the expected key when it was there, else -1. */
  readonly found: Int32Array;
}

/**
 * Sees each record first, in order. `bytes[start, end)` is the whole record exactly as received,
 * or `bytes` is undefined when the record is not whole in memory or has a problem (too deep, too
 * large). `memberEnds[k]` is where member k (an element at depth 1) ends, its ',' or closing
 * bracket, relative to `start`; recorded for the first memberEnds.length members.
 * Returning true takes the record over: the parser then makes no ParsedRecord of it. Returning a
 * tag hands it on with the tag attached (ParsedRecord.fingerprint); false hands it on as it is.
 */
export interface RecordBytesHook {
  record(
    bytes: Buffer | undefined,
    start: number,
    end: number,
    memberEnds: Float64Array,
    memberCount: number,
    position: number,
    byteOffset: number,
    /**
     * The scanner's fast lane took it (flat-record.ts): no whitespace between tokens, every string
     * printable ASCII without escapes, every number well-formed, of at most 1000 characters and
     * an exponent of at most 4 digits.
     */
    plain: boolean,
  ): boolean | RecordTag;
  /** The keys the hook's reader expects, for the fast lane to try first (flat-record.ts). */
  readonly keys?: KeyGuide;
  /**
   * Asked at each record's '{' (`b[start]`, with the buffer's bytes up to `end`) before it is
   * scanned: the record's length when the hook knows these bytes as a whole record already (a
   * re-sync's unchanged record, by its fingerprint: fingerprints/shortcut.ts `known`), and then the
   * scanner skips them unread; 0 otherwise. The `record` call that follows is that record's.
   */
  known?(b: Uint8Array, start: number, end: number): number;
}

export class ListingSyntaxError extends Error {
  /** Offset in the whole document of the byte where the problem was found. */
  readonly byteOffset: number;
  /** A short (<= 60 characters) excerpt of the text around that byte. */
  readonly excerpt: string;

  constructor(message: string, byteOffset: number, excerpt: string) {
    super(excerpt === '' ? message : `${message}; near: ${excerpt}`);
    this.name = 'ListingSyntaxError';
    this.byteOffset = byteOffset;
    this.excerpt = excerpt;
  }
}

// ---------------------------------------------------------------------------------------------

/** Buffer's (long-standing, untyped) fast decoders. */
export interface SliceBuffer extends Buffer {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}

export function truncateChars(s: string, n: number): string {
  const last = s.charCodeAt(n - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? n - 1 : n);
}

export function describeByte(c: number): string {
  if (c >= 0x20 && c < 0x7f) return `'${String.fromCharCode(c)}'`;
  return `byte 0x${c.toString(16).padStart(2, '0')}`;
}

/** Up to 60 characters around position `i` of `b` (`tail` holds the bytes before `b`). */
export function makeExcerpt(tail: Buffer, tailLen: number, b: Buffer, i: number): string {
  const beforeFromB = Math.min(i, 24);
  const before = Buffer.concat([
    tail.subarray(Math.max(0, tailLen - (24 - beforeFromB))),
    b.subarray(i - beforeFromB, i),
  ]);
  const after = b.subarray(i, Math.min(b.length, i + 28));
  const show = (buf: Buffer) =>
    buf
      .toString('utf8')
      .replace(/\uFFFD/g, '?')
      .replace(/[\u0000-\u001f\u007f]/g, (ch) =>
        ch === '\n'
          ? '\\n'
          : ch === '\r'
            ? '\\r'
            : ch === '\t'
              ? '\\t'
              : '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0'),
      );
  let pre = show(before);
  let post = show(after);
  if (pre.length > 28) pre = pre.slice(pre.length - 28);
  if (post.length > 30) post = post.slice(0, 30);
  return (pre + post).slice(0, 60);
}
