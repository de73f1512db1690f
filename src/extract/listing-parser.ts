/**
 * Push-based, streaming, lossless scanner for the listing document
 * `{"message":..., "count":..., "bulk_wine_reconciliation":[{...}, ...], "recordCount":...}`.
 *
 * Numbers never pass through a JavaScript number: a byte-level state machine validates the whole
 * document (RFC 8259) and, while doing so, copies each element of the top-level
 * `bulk_wine_reconciliation` array into a batch buffer with every number token wrapped in quotes
 * (`12.50` -> `"12.50"`). The batch `[rec,rec,...]` is then handed to native `JSON.parse`, so every
 * number in a parsed value is a string holding its exact source text.
 *
 * Design:
 * - The scanner never recurses; container nesting is kept in a bit stack (1 bit per level).
 * - All scanner state lives in fields, so a chunk may end anywhere (inside a string, an escape,
 *   a number, a literal, a multi-byte UTF-8 character) and the next chunk resumes there.
 * - The batch buffer holds Latin-1 text: ASCII is copied as is, a non-ASCII character is decoded
 *   from UTF-8 (WHATWG rules, as Buffer#toString: invalid bytes become U+FFFD) and written as one
 *   byte when <= U+00FF, else as a \uXXXX escape. So the batch decodes with `latin1Slice` (a copy)
 *   instead of the much slower UTF-8 decoder, and JSON.parse gets a one-byte string.
 * - A chunk is scanned in windows of at most WINDOW bytes; before each window the output buffer
 *   is made large enough for the worst-case expansion of that window, so the hot loop writes
 *   without capacity checks. A value over its limit (depth, record size, 64 KiB for top-level
 *   values) keeps being scanned (validated) but its output is dropped at each window boundary,
 *   so memory stays bounded whatever the document holds.
 * - Completed records are parsed per batch (one JSON.parse of `[a,b,c]`): at the end of every
 *   push, and whenever the batch exceeds BATCH_BYTES within a push. A record still incomplete at
 *   the end of a push stays in the buffer and is finished by a later push.
 * - Fast path: a record that is a flat object (scalar member values only, the usual record) does
 *   not go to JSON.parse: its value is built from its `raw` text (see FlatBuilder), using the
 *   member ends the scanner records at depth 1, and its rewritten bytes are dropped from the
 *   batch. Its string values are slices of `raw` (V8 may keep a long one as a view of `raw`, so
 *   holding such a value holds that record's raw text). Anything else takes the batch path.
 * - `raw` is decoded per record straight from the chunk (a fresh string, not a slice of a larger
 *   one, so keeping a few rejected records' raw text never pins whole chunks in memory), with
 *   latin1Slice when the record is ASCII. A record spanning chunks keeps its first bytes (enough
 *   for maxRawChars characters) in a side buffer.
 * - byteOffset/byteLength count bytes of the document as received (a BOM included).
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
  /** Offset of the element's first byte in the whole document. */
  byteOffset: number;
  /** Its length in bytes. */
  byteLength: number;
}

export type RecordsType = 'array' | 'missing' | 'null' | 'object' | 'string' | 'number' | 'boolean';

export interface ListingEnvelope {
  /** Every top-level key, in order seen (a key given twice appears twice). */
  topLevelKeys: string[];
  /** Each top-level key other than the records array -> its value, parsed losslessly; values over 64 KiB are "<too large>". */
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
// Scanner states. S_* are inside a value (record, top-level key or top-level scalar); T_* are the
// envelope object; A_* are the records array between its elements.
const S_VALUE = 0; // expecting a value
const S_AFTER = 1; // after a value: ',' or a closing bracket (or, at depth 0, the value is complete)
const S_OBJ_FIRST = 2; // after '{': a key or '}'
const S_KEY = 3; // after ',' in an object: a key
const S_COLON = 4; // after a key: ':'
const S_ARR_FIRST = 5; // after '[': a value or ']'
const S_STR = 6; // inside a string
const S_ESC = 7; // after a backslash in a string
const S_UHEX = 8; // inside \uXXXX
const S_NUM = 9; // inside a number (sub-state in `ns`)
const S_LIT = 10; // inside true/false/null/NaN/Infinity
const S_UTF8 = 11; // inside a multi-byte UTF-8 sequence in a string (the slow, resumable path)
const T_START = 20;
const T_KEY_OR_END = 21;
const T_KEY = 22;
const T_COLON = 23;
const T_VALUE = 24;
const T_AFTER = 25;
const T_END = 26;
const A_FIRST = 27;
const A_AFTER = 28;
const A_NEXT = 29;
const T_BOM = 30; // inside a UTF-8 byte order mark at the very start (ignored, as RFC 8259 allows)

// What is being scanned by the S_* states.
const M_NONE = 0;
const M_RECORD = 1;
const M_KEY = 2;
const M_SCALAR = 3;

// Number sub-states.
const N_MINUS = 1; // after '-'
const N_ZERO = 2; // after a leading 0 (accepting)
const N_INT = 3; // integer digits (accepting)
const N_DOT = 4; // after '.'
const N_FRAC = 5; // fraction digits (accepting)
const N_E = 6; // after 'e'/'E'
const N_ESIGN = 7; // after the exponent sign
const N_EXP = 8; // exponent digits (accepting)

// Literals: index into LITS; NaN and Infinity (only inside records) are emitted as strings.
const L_TRUE = 0;
const L_FALSE = 1;
const L_NULL = 2;
const L_NAN = 3;
const L_INFINITY = 4;
const LITS: readonly Uint8Array[] = ['true', 'false', 'null', 'NaN', 'Infinity'].map((s) => Buffer.from(s, 'latin1'));

const BOM = [0xef, 0xbb, 0xbf];
/** 1 for bytes that go through a string unchanged (not '"', '\', or a control character). */
const STR_PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 0x80; c++) STR_PLAIN[c] = c === 0x22 || c === 0x5c ? 0 : 1;
/** 1 for the characters allowed after a backslash, other than 'u'. */
const ESCAPABLE = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPABLE[c.charCodeAt(0)] = 1;
/** 1 for hexadecimal digits. */
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** Bytes of source per scanning window (bounds the output buffer growth per window). */
const WINDOW = 128 * 1024;
/**
 * Worst-case bytes of `out` per source byte: a number gains 2 quotes (`1,` -> `"1",`), a character
 * over U+00FF becomes a 6-byte \u escape (at least 2 source bytes), an invalid byte a 6-byte \ufffd.
 */
const EXPANSION = 6;
/** A batch of records is parsed once its rewritten text exceeds this. */
const BATCH_BYTES = 256 * 1024;
const TAIL = 32;
/** The fast path remembers the keys of the last flat record up to this many. */
const MAX_SHAPE_KEYS = 256;
/** Where the members of a record end are recorded for up to this many members. */
const MAX_MEMBER_ENDS = 256;

export class ListingParser {
  private readonly maxDepth: number;
  private readonly maxRecordBytes: number;
  private readonly maxRawChars: number;
  /** Bytes of a record kept for `raw` when it spans chunks (enough for maxRawChars characters). */
  private readonly rawByteCap: number;

  // --- scanner state (all resumable across chunks) ---
  private state = T_START;
  private mode = M_NONE;
  /** Output: in the records array, `[` + each completed record followed by `,` + the current record's bytes; else the current key/scalar. */
  private out: Buffer = Buffer.allocUnsafe(WINDOW * 2 + 64);
  private o = 0;
  /** Nesting depth relative to the current value; bit (d-1) of `stack` is 1 when level d is an object. */
  private depth = 0;
  private cur = 0; // 1 when the innermost open container is an object
  private stack = new Uint8Array(64);
  private strNext = S_AFTER; // state after the closing quote (S_COLON for keys)
  private ns = 0; // number sub-state
  private lit = 0; // literal being matched
  private litPos = 0;
  private litQuoted = false; // NaN / Infinity: close the string after the literal
  private uLeft = 0; // hex digits left in a \u escape
  private u8need = 0; // UTF-8 decoder: continuation bytes still needed
  private u8cp = 0;
  private u8lower = 0x80;
  private u8upper = 0xbf;
  private recHigh = false; // the current record has non-ASCII bytes (decode raw as UTF-8)
  private depthLimit = Number.MAX_SAFE_INTEGER;

  // --- current chunk ---
  private base = 0; // document offset of the current chunk's first byte
  private tail: Buffer = Buffer.alloc(0); // last bytes before the current chunk (for excerpts)

  // --- current record / value ---
  private valueStart = 0; // document offset of the current record/key/scalar
  private recOutStart = 0; // where the current record starts in `out`
  private tooDeep = false;
  private tooBig = false; // record over maxRecordBytes, or key/scalar over MAX_SCALAR_BYTES
  private rawAcc: Buffer | undefined; // first bytes of a record that spans chunks
  private rawLen = 0;

  // --- batch ---
  private completedEnd = 0; // end in `out` of the last completed record (its trailing ',')
  private pending = 0; // completed records in `out` waiting for JSON.parse
  private results: ParsedRecord[] = [];
  /** The records whose values are in `out`, waiting for JSON.parse (reused, `pending` long). */
  private waiting: ParsedRecord[] = [];
  /** The fast path for flat objects. */
  private readonly flat = new FlatBuilder();
  /** Where in the current record each member (each element at depth 1) ends: its ',' or closing bracket, relative to the record's start. */
  private readonly memberEnds = new Float64Array(MAX_MEMBER_ENDS);
  private memberCount = 0;

  // --- envelope ---
  private readonly topLevelKeys: string[] = [];
  private readonly scalars: Record<string, unknown> = {};
  private recordsType: RecordsType = 'missing';
  private recordCount = 0;
  private curKey = '';
  private curIsRecords = false;
  private seenRecordsKey = false;
  private scalarCount = 0;
  private total = 0;
  private trailing: ListingSyntaxError | undefined;
  private failed: unknown;
  private ended: ListingEnvelope | undefined;

  constructor(options: ListingParserOptions = {}) {
    this.maxDepth = options.maxDepth ?? 32;
    this.maxRecordBytes = options.maxRecordBytes ?? 1024 * 1024;
    this.maxRawChars = options.maxRawChars ?? 65536;
    if (!(this.maxDepth >= 1) || !(this.maxRecordBytes >= 1) || !(this.maxRawChars >= 1)) {
      throw new RangeError('ListingParser options must be positive');
    }
    this.rawByteCap = Math.min(this.maxRawChars * 4, 1 << 30);
  }

  /** Scans `chunk`; returns the records it completed, in order. Throws ListingSyntaxError on invalid JSON. */
  push(chunk: Buffer | Uint8Array): ParsedRecord[] {
    if (this.failed !== undefined) throw this.failed;
    if (this.ended !== undefined) throw new Error('ListingParser.push() called after end()');
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const len = b.length;
    const results: ParsedRecord[] = [];
    this.results = results;
    this.base = this.total;
    try {
      let i = 0;
      while (i < len) {
        const wend = len - i > WINDOW ? i + WINDOW : len;
        this.ensureOut(this.o + EXPANSION * (wend - i) + 16);
        this.scan(b, i, wend);
        i = wend;
        this.checkLimits(this.base + wend);
      }
      if (this.mode === M_RECORD) {
        const s = this.valueStart - this.base;
        this.appendRaw(b, s > 0 ? s : 0, len);
      }
      this.flushBatch();
    } catch (error) {
      this.failed = error;
      throw error;
    }
    this.total += len;
    this.keepTail(b);
    this.results = [];
    return results;
  }

  /** Call after the last chunk: checks the document is complete and returns the envelope. */
  end(): ListingEnvelope {
    if (this.failed !== undefined) throw this.failed;
    if (this.ended !== undefined) return this.ended;
    if (this.trailing !== undefined) {
      this.failed = this.trailing;
      throw this.trailing;
    }
    if (this.state !== T_END) {
      const excerpt = makeExcerpt(this.tail, this.tail.length, Buffer.alloc(0), 0);
      const error =
        this.state === T_START
          ? new ListingSyntaxError(`document is empty at byte ${this.total}: expected '{' (the listing envelope object)`, this.total, excerpt)
          : new ListingSyntaxError(
              `unexpected end of document at byte ${this.total}: ${this.expectation()} (the listing is truncated)`,
              this.total,
              excerpt,
            );
      this.failed = error;
      throw error;
    }
    this.ended = {
      topLevelKeys: this.topLevelKeys,
      scalars: this.scalars,
      recordsKey: RECORDS_KEY,
      recordsType: this.recordsType,
      recordCount: this.recordCount,
      bytes: this.total,
    };
    return this.ended;
  }

  // -------------------------------------------------------------------------------------------
  // The hot loop. Everything it needs is in locals; they are written back before any method call
  // that reads or changes scanner state, and on exit.
  private scan(b: Buffer, start: number, end: number): void {
    let i = start;
    let state = this.state;
    let out = this.out;
    let o = this.o;
    let depth = this.depth;
    let cur = this.cur;
    let ns = this.ns;
    let strNext = this.strNext;

    main: while (i < end) {
      switch (state) {
        case S_STR: {
          let c = b[i]!;
          for (;;) {
            while (STR_PLAIN[c] === 1) {
              out[o++] = c;
              if (++i === end) break main;
              c = b[i]!;
            }
            if (c < 0x80) break;
            // Non-ASCII: decode the UTF-8 sequence and write the character in Latin-1 (one byte)
            // when it fits, else as a \u escape, so `out` always decodes with latin1Slice.
            this.recHigh = true;
            let cp = -1;
            let n = 0;
            if (c >= 0xc2 && c <= 0xdf) {
              if (i + 1 < end) {
                const c1 = b[i + 1]!;
                if (c1 >= 0x80 && c1 <= 0xbf) {
                  cp = ((c & 0x1f) << 6) | (c1 & 0x3f);
                  n = 2;
                }
              }
            } else if (c >= 0xe0 && c <= 0xef) {
              if (i + 2 < end) {
                const c1 = b[i + 1]!;
                const c2 = b[i + 2]!;
                if (c1 >= (c === 0xe0 ? 0xa0 : 0x80) && c1 <= (c === 0xed ? 0x9f : 0xbf) && c2 >= 0x80 && c2 <= 0xbf) {
                  cp = ((c & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f);
                  n = 3;
                }
              }
            }
            if (n === 0) {
              // Split across chunks, 4-byte or invalid: the byte-at-a-time decoder.
              this.u8need = 0;
              state = S_UTF8;
              continue main;
            }
            o = writeCodePoint(out, o, cp);
            i += n;
            if (i === end) break main;
            c = b[i]!;
          }
          out[o++] = c;
          i++;
          if (c === 0x22) {
            // Fast path for the usual `"key":` with no whitespace.
            if (strNext === S_COLON && i < end && b[i] === 0x3a) {
              out[o++] = 0x3a;
              i++;
              state = S_VALUE;
            } else state = strNext;
          } else if (c === 0x5c) state = S_ESC;
          else throw this.error('unescaped control character in string', b, i - 1);
          continue main;
        }

        case S_UTF8: {
          // WHATWG UTF-8 decoding (what Buffer#toString does): invalid input becomes U+FFFD.
          const c = b[i]!;
          if (this.u8need === 0) {
            i++;
            if (c >= 0xc2 && c <= 0xdf) {
              this.u8need = 1;
              this.u8cp = c & 0x1f;
              this.u8lower = 0x80;
              this.u8upper = 0xbf;
            } else if (c >= 0xe0 && c <= 0xef) {
              this.u8need = 2;
              this.u8cp = c & 0x0f;
              this.u8lower = c === 0xe0 ? 0xa0 : 0x80;
              this.u8upper = c === 0xed ? 0x9f : 0xbf;
            } else if (c >= 0xf0 && c <= 0xf4) {
              this.u8need = 3;
              this.u8cp = c & 0x07;
              this.u8lower = c === 0xf0 ? 0x90 : 0x80;
              this.u8upper = c === 0xf4 ? 0x8f : 0xbf;
            } else {
              o = writeCodePoint(out, o, 0xfffd);
              state = S_STR;
            }
          } else if (c < this.u8lower || c > this.u8upper) {
            // Ill-formed: U+FFFD for what came before, and this byte is looked at again.
            this.u8need = 0;
            o = writeCodePoint(out, o, 0xfffd);
            state = S_STR;
          } else {
            i++;
            this.u8cp = (this.u8cp << 6) | (c & 0x3f);
            this.u8lower = 0x80;
            this.u8upper = 0xbf;
            if (--this.u8need === 0) {
              o = writeCodePoint(out, o, this.u8cp);
              state = S_STR;
            }
          }
          continue main;
        }

        case S_NUM: {
          for (;;) {
            const c = b[i]!;
            if (c >= 0x30 && c <= 0x39) {
              if (ns === N_MINUS) ns = c === 0x30 ? N_ZERO : N_INT;
              else if (ns === N_DOT) ns = N_FRAC;
              else if (ns === N_E || ns === N_ESIGN) ns = N_EXP;
              else if (ns === N_ZERO) throw this.error('invalid number: leading zero', b, i);
            } else if (c === 0x2e) {
              if (ns !== N_ZERO && ns !== N_INT) throw this.error("invalid number: unexpected '.'", b, i);
              ns = N_DOT;
            } else if (c === 0x65 || c === 0x45) {
              if (ns !== N_ZERO && ns !== N_INT && ns !== N_FRAC) throw this.error("invalid number: unexpected 'e'", b, i);
              ns = N_E;
            } else if ((c === 0x2d || c === 0x2b) && ns === N_E) {
              ns = N_ESIGN;
            } else if (c === 0x49 && ns === N_MINUS && this.mode === M_RECORD) {
              // -Infinity: the opening quote and '-' are already out.
              this.lit = L_INFINITY;
              this.litPos = 0;
              this.litQuoted = true;
              state = S_LIT;
              continue main;
            } else {
              // The number ends before this byte.
              if (ns === N_INT || ns === N_FRAC || ns === N_ZERO || ns === N_EXP) {
                out[o++] = 0x22;
                state = S_AFTER;
                continue main;
              }
              throw this.error(
                ns === N_MINUS
                  ? "invalid number: expected a digit after '-'"
                  : ns === N_DOT
                    ? "invalid number: expected a digit after '.'"
                    : 'invalid number: expected a digit in the exponent',
                b,
                i,
              );
            }
            out[o++] = c;
            if (++i === end) break main;
          }
        }

        case S_AFTER: {
          if (depth === 0) {
            this.o = o;
            this.depth = 0;
            state = this.valueDone(b, i);
            out = this.out;
            o = this.o;
            continue main;
          }
          let c = b[i]!;
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            if (++i === end) break main;
            c = b[i]!;
          }
          if (depth === 1) {
            const k = this.memberCount++;
            if (k < MAX_MEMBER_ENDS) this.memberEnds[k] = this.base + i - this.valueStart;
          }
          if (c === 0x2c) {
            out[o++] = c;
            i++;
            if (cur === 1) {
              // Fast path for the usual `,"` before the next key.
              if (i < end && b[i] === 0x22) {
                out[o++] = 0x22;
                i++;
                strNext = S_COLON;
                state = S_STR;
              } else state = S_KEY;
            } else state = S_VALUE;
            continue main;
          }
          if ((c === 0x7d && cur === 1) || (c === 0x5d && cur === 0)) {
            out[o++] = c;
            i++;
            depth--;
            if (depth > 0) cur = (this.stack[(depth - 1) >> 3]! >> ((depth - 1) & 7)) & 1;
            continue main; // still S_AFTER
          }
          throw this.error(cur === 1 ? "expected ',' or '}' after an object member" : "expected ',' or ']' after an array element", b, i);
        }

        case S_VALUE: {
          let c = b[i]!;
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            if (++i === end) break main;
            c = b[i]!;
          }
          if (c === 0x22) {
            out[o++] = c;
            i++;
            strNext = S_AFTER;
            state = S_STR;
          } else if ((c >= 0x30 && c <= 0x39) || c === 0x2d) {
            const o0 = o;
            out[o++] = 0x22;
            // Fast path: the whole number lies in this window and is well formed. Anything else
            // (window end, an error, -Infinity) goes to the resumable S_NUM machine from the start.
            let j = i;
            let d = c;
            fast: {
              if (d === 0x2d) {
                out[o++] = d;
                if (++j === end) break fast;
                d = b[j]!;
              }
              if (d === 0x30) {
                out[o++] = d;
                if (++j === end) break fast;
                d = b[j]!;
              } else if (d >= 0x31 && d <= 0x39) {
                do {
                  out[o++] = d;
                  if (++j === end) break fast;
                  d = b[j]!;
                } while (d >= 0x30 && d <= 0x39);
              } else break fast;
              if (d === 0x2e) {
                out[o++] = d;
                if (++j === end) break fast;
                d = b[j]!;
                if (d < 0x30 || d > 0x39) break fast;
                do {
                  out[o++] = d;
                  if (++j === end) break fast;
                  d = b[j]!;
                } while (d >= 0x30 && d <= 0x39);
              }
              if (d === 0x65 || d === 0x45) {
                out[o++] = d;
                if (++j === end) break fast;
                d = b[j]!;
                if (d === 0x2b || d === 0x2d) {
                  out[o++] = d;
                  if (++j === end) break fast;
                  d = b[j]!;
                }
                if (d < 0x30 || d > 0x39) break fast;
                do {
                  out[o++] = d;
                  if (++j === end) break fast;
                  d = b[j]!;
                } while (d >= 0x30 && d <= 0x39);
              }
              if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) break fast;
              out[o++] = 0x22;
              i = j;
              state = S_AFTER;
              continue main;
            }
            o = o0;
            out[o++] = 0x22;
            out[o++] = c;
            i++;
            ns = c === 0x2d ? N_MINUS : c === 0x30 ? N_ZERO : N_INT;
            state = S_NUM;
          } else if (c === 0x7b || c === 0x5b) {
            const isObj = c === 0x7b ? 1 : 0;
            if (depth >= this.stack.length * 8) this.growStack(b, i);
            const byte = depth >> 3;
            const bit = 1 << (depth & 7);
            const stack = this.stack;
            stack[byte] = isObj === 1 ? stack[byte]! | bit : stack[byte]! & ~bit;
            depth++;
            cur = isObj;
            if (depth > this.depthLimit) this.tooDeep = true;
            out[o++] = c;
            i++;
            state = isObj === 1 ? S_OBJ_FIRST : S_ARR_FIRST;
          } else {
            let lit = -1;
            if (c === 0x74) lit = L_TRUE;
            else if (c === 0x66) lit = L_FALSE;
            else if (c === 0x6e) lit = L_NULL;
            else if (this.mode === M_RECORD) {
              if (c === 0x4e) lit = L_NAN;
              else if (c === 0x49) lit = L_INFINITY;
            }
            if (lit < 0) throw this.error('expected a JSON value', b, i);
            this.lit = lit;
            this.litPos = 0;
            this.litQuoted = lit >= L_NAN;
            if (lit >= L_NAN) out[o++] = 0x22;
            state = S_LIT;
          }
          continue main;
        }

        case S_OBJ_FIRST:
        case S_KEY: {
          let c = b[i]!;
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            if (++i === end) break main;
            c = b[i]!;
          }
          if (c === 0x22) {
            out[o++] = c;
            i++;
            strNext = S_COLON;
            state = S_STR;
          } else if (c === 0x7d && state === S_OBJ_FIRST) {
            out[o++] = c;
            i++;
            depth--;
            if (depth > 0) cur = (this.stack[(depth - 1) >> 3]! >> ((depth - 1) & 7)) & 1;
            state = S_AFTER;
          } else {
            throw this.error(state === S_OBJ_FIRST ? "expected a string key or '}'" : 'expected a string key', b, i);
          }
          continue main;
        }

        case S_COLON: {
          let c = b[i]!;
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            if (++i === end) break main;
            c = b[i]!;
          }
          if (c !== 0x3a) throw this.error("expected ':' after an object key", b, i);
          out[o++] = c;
          i++;
          state = S_VALUE;
          continue main;
        }

        case S_ARR_FIRST: {
          let c = b[i]!;
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            if (++i === end) break main;
            c = b[i]!;
          }
          if (c === 0x5d) {
            out[o++] = c;
            i++;
            depth--;
            if (depth > 0) cur = (this.stack[(depth - 1) >> 3]! >> ((depth - 1) & 7)) & 1;
            state = S_AFTER;
          } else {
            state = S_VALUE;
          }
          continue main;
        }

        case S_ESC: {
          const c = b[i]!;
          if (ESCAPABLE[c] === 1) state = S_STR;
          else if (c === 0x75) {
            this.uLeft = 4;
            state = S_UHEX;
          } else throw this.error('invalid escape in string', b, i);
          out[o++] = c;
          i++;
          continue main;
        }

        case S_UHEX: {
          const c = b[i]!;
          if (HEX[c] !== 1) throw this.error('invalid \\u escape in string: expected a hexadecimal digit', b, i);
          out[o++] = c;
          i++;
          if (--this.uLeft === 0) state = S_STR;
          continue main;
        }

        case S_LIT: {
          const want = LITS[this.lit]!;
          let p = this.litPos;
          while (p < want.length) {
            const c = b[i]!;
            if (c !== want[p]) throw this.error('invalid literal (expected true, false or null)', b, i);
            out[o++] = c;
            p++;
            if (++i === end) break;
          }
          this.litPos = p;
          if (p === want.length) {
            if (this.litQuoted) out[o++] = 0x22;
            state = S_AFTER;
          }
          continue main;
        }

        // ----- the envelope -----
        case T_START:
        case T_KEY_OR_END:
        case T_KEY:
        case T_COLON:
        case T_VALUE:
        case T_AFTER:
        case T_END:
        case A_FIRST:
        case A_AFTER:
        case A_NEXT: {
          let c = b[i]!;
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            if (++i === end) break main;
            c = b[i]!;
          }
          if (state === A_AFTER) {
            if (c === 0x2c) {
              i++;
              state = A_NEXT;
            } else if (c === 0x5d) {
              i++;
              this.o = o;
              this.endArray();
              o = this.o;
              state = T_AFTER;
            } else throw this.error("expected ',' or ']' after a record", b, i);
          } else if (state === A_NEXT || state === A_FIRST) {
            if (c === 0x5d && state === A_FIRST) {
              i++;
              this.o = o;
              this.endArray();
              o = this.o;
              state = T_AFTER;
            } else {
              // A record starts here.
              this.mode = M_RECORD;
              this.valueStart = this.base + i;
              this.recOutStart = o;
              this.tooDeep = false;
              this.tooBig = false;
              this.rawLen = 0;
              this.recHigh = false;
              this.memberCount = 0;
              this.depthLimit = this.maxDepth;
              depth = 0;
              state = S_VALUE;
            }
          } else if (state === T_AFTER) {
            if (c === 0x2c) state = T_KEY;
            else if (c === 0x7d) state = T_END;
            else throw this.error("expected ',' or '}' after a top-level value", b, i);
            i++;
          } else if (state === T_KEY || state === T_KEY_OR_END) {
            if (c === 0x22) {
              this.beginTopValue(M_KEY, i);
              o = 0;
              out[o++] = c;
              i++;
              depth = 0;
              strNext = S_AFTER;
              state = S_STR;
            } else if (c === 0x7d && state === T_KEY_OR_END) {
              i++;
              state = T_END;
            } else throw this.error(state === T_KEY ? "expected '\"' to start a top-level key" : "expected a top-level key or '}'", b, i);
          } else if (state === T_COLON) {
            if (c !== 0x3a) throw this.error("expected ':' after a top-level key", b, i);
            i++;
            state = T_VALUE;
          } else if (state === T_VALUE) {
            if (this.curIsRecords) {
              if (c === 0x5b) this.recordsType = 'array';
              else if (c === 0x7b) this.recordsType = 'object';
              else if (c === 0x22) this.recordsType = 'string';
              else if (c === 0x6e) this.recordsType = 'null';
              else if (c === 0x74 || c === 0x66) this.recordsType = 'boolean';
              else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) this.recordsType = 'number';
            }
            if (this.curIsRecords && c === 0x5b) {
              i++;
              out[0] = 0x5b;
              o = 1;
              this.completedEnd = 1;
              this.pending = 0;
              state = A_FIRST;
            } else {
              this.beginTopValue(M_SCALAR, i);
              o = 0;
              depth = 0;
              state = S_VALUE;
            }
          } else if (state === T_START) {
            if (c === 0xef && this.base + i === 0) {
              i++;
              this.litPos = 1;
              state = T_BOM;
              continue main;
            }
            if (c === 0x5b) throw this.error(ARRAY_AT_TOP_MESSAGE, b, i, true);
            if (c !== 0x7b) throw this.error("expected '{' (the listing envelope object)", b, i);
            i++;
            state = T_KEY_OR_END;
          } else {
            // T_END: anything but whitespace is an error, reported by end().
            if (this.trailing === undefined) {
              this.trailing = this.error('unexpected non-whitespace after the end of the listing object', b, i);
            }
            i = end;
          }
          continue main;
        }

        case T_BOM: {
          if (b[i] !== BOM[this.litPos]) throw this.error("expected '{' (the listing envelope object)", b, i);
          i++;
          if (++this.litPos === BOM.length) state = T_START;
          continue main;
        }

        default:
          throw new Error(`ListingParser: bad state ${state}`);
      }
    }

    // A value that ended exactly at the end of the data is completed now, not with the next chunk.
    if (state === S_AFTER && depth === 0 && this.mode !== M_NONE) {
      this.o = o;
      this.depth = 0;
      state = this.valueDone(b, i);
      o = this.o;
    }
    this.state = state;
    this.o = o;
    this.depth = depth;
    this.cur = cur;
    this.ns = ns;
    this.strNext = strNext;
  }

  // -------------------------------------------------------------------------------------------

  private beginTopValue(mode: number, i: number): void {
    this.mode = mode;
    this.valueStart = this.base + i;
    this.tooBig = false;
    this.tooDeep = false;
    this.depthLimit = Number.MAX_SAFE_INTEGER;
  }

  /** The value being scanned ended just before chunk position `i`; returns the next state. */
  private valueDone(b: Buffer, i: number): number {
    const mode = this.mode;
    this.mode = M_NONE;
    const endOffset = this.base + i;
    if (mode === M_RECORD) {
      this.finishRecord(b, i, endOffset);
      return A_AFTER;
    }
    const tooLarge = this.tooBig || endOffset - this.valueStart > MAX_SCALAR_BYTES;
    const text = tooLarge ? '' : (this.out as SliceBuffer).latin1Slice(0, this.o);
    this.o = 0;
    if (mode === M_KEY) {
      const key = tooLarge ? TOO_LARGE : (JSON.parse(text) as string);
      if (key === RECORDS_KEY) {
        if (this.seenRecordsKey) throw this.error(`duplicate key ${RECORDS_KEY}`, b, i, false, this.valueStart);
        this.seenRecordsKey = true;
      }
      this.curIsRecords = key === RECORDS_KEY;
      this.curKey = key;
      if (this.topLevelKeys.length < MAX_TOP_LEVEL_KEYS || this.curIsRecords) this.topLevelKeys.push(key);
      return T_COLON;
    }
    const value: unknown = tooLarge ? TOO_LARGE : JSON.parse(text);
    if (!Object.prototype.hasOwnProperty.call(this.scalars, this.curKey) && ++this.scalarCount > MAX_TOP_LEVEL_KEYS) return T_AFTER;
    Object.defineProperty(this.scalars, this.curKey, { value, enumerable: true, writable: true, configurable: true });
    return T_AFTER;
  }

  private finishRecord(b: Buffer, i: number, endOffset: number): void {
    const byteOffset = this.valueStart;
    const byteLength = endOffset - byteOffset;
    let problem: string | undefined;
    if (this.tooDeep) problem = `nested deeper than ${this.maxDepth} levels`;
    if (byteLength > this.maxRecordBytes) {
      const p = `record larger than ${this.maxRecordBytes} bytes`;
      problem = problem === undefined ? p : `${p}; ${problem}`;
    }
    const s = byteOffset - this.base;
    let raw: string;
    if (s >= 0) {
      const e = byteLength > this.rawByteCap ? s + this.rawByteCap : i;
      raw = this.recHigh ? (b as SliceBuffer).utf8Slice(s, e) : (b as SliceBuffer).latin1Slice(s, e);
    } else {
      this.appendRaw(b, 0, i);
      const acc = this.rawAcc as SliceBuffer;
      raw = this.recHigh ? acc.utf8Slice(0, this.rawLen) : acc.latin1Slice(0, this.rawLen);
      this.rawLen = 0;
      if (this.rawAcc!.length > 65536) this.rawAcc = undefined; // do not pin a large buffer
    }
    const rawComplete = byteLength <= this.rawByteCap && raw.length <= this.maxRawChars;
    if (!rawComplete && raw.length > this.maxRawChars) raw = truncateChars(raw, this.maxRawChars);
    const position = this.recordCount++;
    if (problem === undefined) {
      // Fast path: a flat object (scalar values only) is built straight from its raw text, which
      // is complete here (the scanner has validated it); anything else goes through JSON.parse.
      const value = rawComplete ? this.flat.build(raw, this.recHigh ? undefined : this.memberEnds, this.memberCount) : undefined;
      if (value !== undefined) {
        this.o = this.recOutStart;
        this.results.push({ position, value, raw, byteOffset, byteLength });
        return;
      }
      this.out[this.o++] = 0x2c;
      this.completedEnd = this.o;
      const record: ParsedRecord = { position, value: undefined, raw, byteOffset, byteLength };
      this.waiting.push(record);
      this.pending++;
      this.results.push(record);
      if (this.o >= BATCH_BYTES) this.flushBatch();
    } else {
      this.o = this.recOutStart;
      this.results.push({ position, value: undefined, problem, raw, byteOffset, byteLength });
    }
  }

  /** Parses the completed records in `out` and fills their values; keeps the current partial record. */
  private flushBatch(): void {
    if (this.pending === 0) return;
    const out = this.out;
    const end = this.completedEnd;
    out[end - 1] = 0x5d; // the last record's ',' becomes ']'
    let values: unknown[];
    try {
      values = JSON.parse((out as SliceBuffer).latin1Slice(0, end)) as unknown[];
    } catch (error) {
      // Cannot happen for text the scanner accepted; if it does, fail loudly rather than guess.
      throw new Error(`ListingParser internal error: a validated batch was refused by JSON.parse (${String(error)})`, { cause: error });
    }
    const waiting = this.waiting;
    for (let k = 0; k < waiting.length; k++) waiting[k]!.value = values[k];
    waiting.length = 0;
    // Keep whatever follows (a record in progress) right after a fresh '['.
    if (this.o > end) out.copy(out, 1, end, this.o);
    this.o = 1 + (this.o - end);
    this.recOutStart -= end - 1;
    out[0] = 0x5b;
    this.completedEnd = 1;
    this.pending = 0;
  }

  private endArray(): void {
    this.flushBatch();
    this.o = 0;
    this.completedEnd = 0;
  }

  /** At a window boundary: marks values over their limit, and stops keeping their output. */
  private checkLimits(offset: number): void {
    const mode = this.mode;
    if (mode === M_RECORD) {
      if (offset - this.valueStart > this.maxRecordBytes) this.tooBig = true;
      if (this.tooBig || this.tooDeep) this.o = this.recOutStart;
    } else if (mode !== M_NONE) {
      if (offset - this.valueStart > MAX_SCALAR_BYTES) {
        this.tooBig = true;
        this.o = 0;
      }
    }
  }

  private ensureOut(need: number): void {
    if (this.out.length >= need) return;
    const bigger = Buffer.allocUnsafe(Math.max(need, this.out.length * 2));
    this.out.copy(bigger, 0, 0, this.o);
    this.out = bigger;
  }

  private growStack(b: Buffer, i: number): void {
    if (this.stack.length * 8 >= MAX_NESTING) throw this.error(`nested deeper than ${MAX_NESTING} levels`, b, i);
    const bigger = new Uint8Array(this.stack.length * 2);
    bigger.set(this.stack);
    this.stack = bigger;
  }

  private appendRaw(b: Buffer, s: number, e: number): void {
    const room = this.rawByteCap - this.rawLen;
    if (room <= 0 || e <= s) return;
    const n = Math.min(room, e - s);
    const need = this.rawLen + n;
    if (this.rawAcc === undefined || this.rawAcc.length < need) {
      const bigger = Buffer.allocUnsafe(Math.min(this.rawByteCap, Math.max(need, 1024, (this.rawAcc?.length ?? 0) * 2)));
      if (this.rawAcc !== undefined) this.rawAcc.copy(bigger, 0, 0, this.rawLen);
      this.rawAcc = bigger;
    }
    b.copy(this.rawAcc, this.rawLen, s, s + n);
    this.rawLen = need;
  }

  private keepTail(b: Buffer): void {
    if (b.length >= TAIL) this.tail = Buffer.from(b.subarray(b.length - TAIL));
    else {
      const joined = Buffer.concat([this.tail, b]);
      this.tail = joined.length > TAIL ? joined.subarray(joined.length - TAIL) : joined;
    }
  }

  /** A ListingSyntaxError for the byte at chunk position `i` (or at document offset `at`). */
  private error(what: string, b: Buffer, i: number, bare = false, at?: number): ListingSyntaxError {
    const offset = at ?? this.base + i;
    const excerpt = makeExcerpt(this.tail, this.tail.length, b, i);
    if (bare) {
      const error = new ListingSyntaxError(what, offset, excerpt);
      error.message = what; // this one is matched exactly by callers
      return error;
    }
    const found = i < b.length ? describeByte(b[i]!) : 'end of data';
    const where = this.mode === M_RECORD ? ` in record ${this.recordCount} (starting at byte ${this.valueStart})` : '';
    return new ListingSyntaxError(`${what} at byte ${offset}${where}, found ${found}`, offset, excerpt);
  }

  /** What the scanner expected when the data ran out. */
  private expectation(): string {
    const inside = this.mode === M_RECORD ? ` in record ${this.recordCount} (starting at byte ${this.valueStart})` : '';
    switch (this.state) {
      case S_STR:
      case S_UTF8:
      case S_ESC:
      case S_UHEX:
        return `unterminated string${inside}`;
      case S_NUM:
        return `unexpected end inside a number${inside}`;
      case S_LIT:
        return `unexpected end inside a literal${inside}`;
      case S_VALUE:
        return `expected a value${inside}`;
      case S_AFTER:
        return `expected ',' or a closing bracket${inside}`;
      case S_OBJ_FIRST:
      case S_KEY:
        return `expected an object key${inside}`;
      case S_COLON:
        return `expected ':'${inside}`;
      case S_ARR_FIRST:
        return `expected an array element or ']'${inside}`;
      case T_BOM:
        return 'incomplete byte order mark';
      case T_KEY_OR_END:
        return "expected a top-level key or '}'";
      case T_KEY:
        return 'expected a top-level key';
      case T_COLON:
        return "expected ':' after a top-level key";
      case T_VALUE:
        return 'expected a top-level value';
      case T_AFTER:
        return "expected ',' or '}' closing the listing object";
      case A_FIRST:
        return "expected a record or ']'";
      case A_AFTER:
        return `expected ',' or ']' after record ${this.recordCount - 1}`;
      case A_NEXT:
        return 'expected a record';
      default:
        return 'incomplete document';
    }
  }
}

/** Buffer's (long-standing, untyped) fast decoders. */
interface SliceBuffer extends Buffer {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/** Writes code point `cp` for JSON.parse: as one Latin-1 byte when <= 0xFF, else as \u escape(s). */
function writeCodePoint(out: Buffer, o: number, cp: number): number {
  if (cp <= 0xff) {
    out[o++] = cp;
    return o;
  }
  if (cp > 0xffff) {
    cp -= 0x10000;
    o = writeCodePoint(out, o, 0xd800 + (cp >> 10));
    return writeCodePoint(out, o, 0xdc00 + (cp & 0x3ff));
  }
  out[o] = 0x5c;
  out[o + 1] = 0x75;
  out[o + 2] = HEX_DIGITS[cp >> 12]!;
  out[o + 3] = HEX_DIGITS[(cp >> 8) & 15]!;
  out[o + 4] = HEX_DIGITS[(cp >> 4) & 15]!;
  out[o + 5] = HEX_DIGITS[cp & 15]!;
  return o + 6;
}

/**
 * The fast path: the value of a record that is a flat JSON object (every member value a string,
 * number, true, false or null; NaN/Infinity/-Infinity too), built directly from `raw`, its
 * complete text already validated by the scanner. `build` returns undefined for anything else (a
 * nested object or array, a non-object element), which then takes the JSON.parse path.
 *
 * It gives exactly what JSON.parse of the rewritten text gives: a string or key without escapes
 * is a slice of `raw` (raw is the UTF-8 decoding of the whole record, and since UTF-8 decoding
 * resynchronizes on every ASCII byte, that equals decoding each token alone); one with escapes
 * is decoded by JSON.parse of just that token; a number (or NaN/Infinity) is its source text; a
 * repeated key keeps its first position and its last value; `__proto__` is an own property.
 *
 * Two ways to find the tokens: when the scanner recorded where each member ends (the ',' or '}'
 * at depth 1) and the record is ASCII, has no backslash and no whitespace around its tokens (the
 * usual compact record), each member is sliced at known places (`compact`); else, or as soon as
 * that does not hold, the record's text is tokenized again (`general`).
 *
 * The keys of the last record are remembered (the shape), so the usual record repeating them is
 * matched with `startsWith` instead of being sliced (a fresh key string would have to be looked
 * up in V8's string table on every property store).
 */
class FlatBuilder {
  /** The keys of the last flat record, in order (empty when not cacheable); none is `__proto__`. */
  private shape: string[] = [];
  /** This record's keys (reused; `count` long). */
  private readonly keys: string[] = [];
  private count = 0;
  /** Every key of this record so far was the shape's key at its index. */
  private same = true;

  /** `ends[k]` is where member k ends in `raw` (used when `ends` is given and `count` fits in it). */
  build(raw: string, ends: Float64Array | undefined, count: number): object | undefined {
    if (raw.charCodeAt(0) !== 0x7b) return undefined;
    this.same = true;
    let obj = ends !== undefined && count > 0 && count <= ends.length ? this.compact(raw, ends, count) : undefined;
    if (obj === undefined) {
      this.same = true;
      obj = this.general(raw);
    }
    if (obj === null) return undefined;
    // Remember the keys for the next record when they differ from the last ones. Only plain keys
    // can be: matching a key by its text needs one without '"' or '\\', and a shape key is
    // stored without the __proto__ check.
    const m = this.count;
    if (!this.same || m !== this.shape.length) {
      const keys = this.keys;
      let plain = m <= MAX_SHAPE_KEYS;
      for (let k = 0; plain && k < m; k++) {
        const key = keys[k]!;
        plain = key !== '__proto__' && key.indexOf('"') < 0 && key.indexOf('\\') < 0;
      }
      this.shape = plain ? keys.slice(0, m).map(internalize) : [];
    }
    return obj;
  }

  /**
   * The object, from the member ends; null for a nested value; undefined when the record is not
   * in the compact form (then the caller starts again with `general`).
   */
  private compact(raw: string, ends: Float64Array, count: number): object | null | undefined {
    if (raw.indexOf('\\') >= 0) return undefined;
    const shape = this.shape;
    const keys = this.keys;
    const obj: Record<string, unknown> = {};
    let start = 0; // the '{' or ',' before the member
    for (let m = 0; m < count; m++) {
      const end = ends[m]!;
      if (raw.charCodeAt(start + 1) !== 0x22) return undefined;
      const ks = start + 2;
      const cached = this.same && m < shape.length ? shape[m]! : undefined;
      let key: string;
      let j: number;
      if (cached !== undefined && raw.startsWith(cached, ks) && raw.charCodeAt(ks + cached.length) === 0x22) {
        key = cached;
        j = ks + cached.length;
      } else {
        this.same = false;
        j = raw.indexOf('"', ks);
        key = raw.slice(ks, j);
      }
      if (raw.charCodeAt(j + 1) !== 0x3a) return undefined;
      const vs = j + 2;
      const c = raw.charCodeAt(vs);
      const last = raw.charCodeAt(end - 1);
      let value: unknown;
      if (c === 0x22) {
        if (last !== 0x22 || end - 1 === vs) return undefined;
        value = raw.slice(vs + 1, end - 1);
      } else if (c === 0x74) {
        if (end !== vs + 4) return undefined;
        value = true;
      } else if (c === 0x66) {
        if (end !== vs + 5) return undefined;
        value = false;
      } else if (c === 0x6e) {
        if (end !== vs + 4) return undefined;
        value = null;
      } else if (c === 0x7b || c === 0x5b) {
        return null;
      } else {
        // A number, NaN, Infinity or -Infinity, with no whitespace before or after it.
        if (!((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x4e || c === 0x49)) return undefined;
        if (last === 0x20 || last === 0x0a || last === 0x0d || last === 0x09) return undefined;
        value = raw.slice(vs, end);
      }
      keys[m] = key;
      if (key === cached) obj[key] = value;
      else put(obj, key, value);
      start = end;
    }
    this.count = count;
    return obj;
  }

  /** The object, by tokenizing `raw`; null for a nested value. */
  private general(raw: string): object | null {
    const n = raw.length;
    const shape = this.shape;
    const keys = this.keys;
    const obj: Record<string, unknown> = {};
    // Position of the next backslash (n when none): a string ending before it has no escape.
    let bs = raw.indexOf('\\');
    if (bs < 0) bs = n;
    let i = 1;
    let c = raw.charCodeAt(i);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = raw.charCodeAt(++i);
    let m = 0; // member index
    if (c !== 0x7d) {
      for (;;) {
        // At the opening quote of a key.
        const ks = i + 1;
        let key: string;
        let j: number;
        const cached = this.same && m < shape.length ? shape[m]! : undefined;
        if (cached !== undefined && raw.startsWith(cached, ks) && raw.charCodeAt(ks + cached.length) === 0x22) {
          key = cached;
          j = ks + cached.length;
        } else {
          this.same = false;
          j = raw.indexOf('"', ks);
          if (j > bs) {
            j = skipEscapedString(raw, ks);
            key = JSON.parse(raw.slice(i, j + 1)) as string;
            bs = nextBackslash(raw, j + 1);
          } else key = raw.slice(ks, j);
        }
        // After the key: optional whitespace, ':', optional whitespace, the value.
        i = j + 1;
        c = raw.charCodeAt(i);
        while (c !== 0x3a) c = raw.charCodeAt(++i);
        c = raw.charCodeAt(++i);
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = raw.charCodeAt(++i);
        let value: unknown;
        if (c === 0x22) {
          const vs = i + 1;
          j = raw.indexOf('"', vs);
          if (j > bs) {
            j = skipEscapedString(raw, vs);
            value = JSON.parse(raw.slice(i, j + 1));
            bs = nextBackslash(raw, j + 1);
          } else value = raw.slice(vs, j);
          i = j + 1;
        } else if (c === 0x74) {
          value = true;
          i += 4;
        } else if (c === 0x66) {
          value = false;
          i += 5;
        } else if (c === 0x6e) {
          value = null;
          i += 4;
        } else if (c === 0x7b || c === 0x5b) {
          return null;
        } else {
          // A number, NaN, Infinity or -Infinity: its text, up to the next ',', '}' or whitespace.
          const vs = i;
          c = raw.charCodeAt(++i);
          while (c !== 0x2c && c !== 0x7d && c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) c = raw.charCodeAt(++i);
          value = raw.slice(vs, i);
        }
        keys[m++] = key;
        if (key === cached) obj[key] = value;
        else put(obj, key, value);
        // After the value: optional whitespace, then ',' (and the next key) or '}'.
        c = raw.charCodeAt(i);
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = raw.charCodeAt(++i);
        if (c === 0x7d) break;
        c = raw.charCodeAt(++i);
        while (c !== 0x22) c = raw.charCodeAt(++i);
      }
    }
    this.count = m;
    return obj;
  }
}

/**
 * The same text as an internalized string (what V8 uses as a property name): a key sliced from
 * the record text is not one, and each property store with it would look it up again.
 */
function internalize(key: string): string {
  return Object.keys({ [key]: 0 })[0]!;
}

/** Sets a member as JSON.parse does: a repeated key keeps its place and takes the last value; `__proto__` is an own property. */
function put(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** The position of the closing quote of the string whose text starts at `i` (it has escapes). */
function skipEscapedString(raw: string, i: number): number {
  for (;;) {
    const c = raw.charCodeAt(i);
    if (c === 0x22) return i;
    i += c === 0x5c ? 2 : 1;
  }
}

function nextBackslash(raw: string, from: number): number {
  const at = raw.indexOf('\\', from);
  return at < 0 ? raw.length : at;
}

function truncateChars(s: string, n: number): string {
  const last = s.charCodeAt(n - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? n - 1 : n);
}

function describeByte(c: number): string {
  if (c >= 0x20 && c < 0x7f) return `'${String.fromCharCode(c)}'`;
  return `byte 0x${c.toString(16).padStart(2, '0')}`;
}

/** Up to 60 characters around position `i` of `b` (`tail` holds the bytes before `b`). */
function makeExcerpt(tail: Buffer, tailLen: number, b: Buffer, i: number): string {
  const beforeFromB = Math.min(i, 24);
  const before = Buffer.concat([tail.subarray(Math.max(0, tailLen - (24 - beforeFromB))), b.subarray(i - beforeFromB, i)]);
  const after = b.subarray(i, Math.min(b.length, i + 28));
  const show = (buf: Buffer) =>
    buf
      .toString('utf8')
      .replace(/\uFFFD/g, '?')
      .replace(/[\u0000-\u001f\u007f]/g, (ch) => (ch === '\n' ? '\\n' : ch === '\r' ? '\\r' : ch === '\t' ? '\\t' : '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0')));
  let pre = show(before);
  let post = show(after);
  if (pre.length > 28) pre = pre.slice(pre.length - 28);
  if (post.length > 30) post = post.slice(0, 30);
  return (pre + post).slice(0, 60);
}
