/**
 * The scanner's resumable state and its slow paths: everything the hot loop (listing-scanner.ts)
 * keeps between chunks lives in fields here, so a chunk may end anywhere (inside a string, an
 * escape, a number, a literal, a multi-byte UTF-8 character) and the next chunk resumes there.
 * Container nesting is a bit stack (1 bit per level), so the scanner never recurses.
 * The base of the parser's class chain; why it is a chain: listing-parser.ts.
 */
import {
  ListingSyntaxError,
  MAX_NESTING,
  describeByte,
  makeExcerpt,
  type KeyGuide,
  type RecordBytesHook,
} from './listing-types.js';

// Scanner states. S_* are inside a value (record, top-level key or top-level scalar); T_* are the
// envelope object; A_* are the records array between its elements.
export const S_VALUE = 0; // expecting a value
export const S_AFTER = 1; // after a value: ',' or a closing bracket (or, at depth 0, the value is complete)
export const S_OBJ_FIRST = 2; // after '{': a key or '}'
export const S_KEY = 3; // after ',' in an object: a key
export const S_COLON = 4; // after a key: ':'
export const S_ARR_FIRST = 5; // after '[': a value or ']'
export const S_STR = 6; // inside a string
export const S_ESC = 7; // after a backslash in a string
export const S_UHEX = 8; // inside \uXXXX
export const S_NUM = 9; // inside a number (sub-state in `ns`)
export const S_LIT = 10; // inside true/false/null/NaN/Infinity
export const S_UTF8 = 11; // inside a multi-byte UTF-8 sequence in a string (the slow, resumable path)
export const T_START = 20;
export const T_KEY_OR_END = 21;
export const T_KEY = 22;
export const T_COLON = 23;
export const T_VALUE = 24;
export const T_AFTER = 25;
export const T_END = 26;
export const A_FIRST = 27;
export const A_AFTER = 28;
export const A_NEXT = 29;
export const T_BOM = 30; // inside a UTF-8 byte order mark at the very start (ignored, as RFC 8259 allows)

// What is being scanned by the S_* states.
export const M_NONE = 0;
export const M_RECORD = 1;
export const M_KEY = 2;
export const M_SCALAR = 3;

// Number sub-states.
export const N_MINUS = 1; // after '-'
export const N_ZERO = 2; // after a leading 0 (accepting)
export const N_INT = 3; // integer digits (accepting)
export const N_DOT = 4; // after '.'
export const N_FRAC = 5; // fraction digits (accepting)
export const N_E = 6; // after 'e'/'E'
export const N_ESIGN = 7; // after the exponent sign
export const N_EXP = 8; // exponent digits (accepting)

// Literals: index into LITS; NaN and Infinity (only inside records) are emitted as strings.
export const L_TRUE = 0;
export const L_FALSE = 1;
export const L_NULL = 2;
export const L_NAN = 3;
export const L_INFINITY = 4;
export const LITS: readonly Uint8Array[] = ['true', 'false', 'null', 'NaN', 'Infinity'].map((s) =>
  Buffer.from(s, 'latin1'),
);

export const BOM = [0xef, 0xbb, 0xbf];
/** 1 for bytes that go through a string unchanged (not '"', '\', or a control character). */
export const STR_PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 0x80; c++) STR_PLAIN[c] = c === 0x22 || c === 0x5c ? 0 : 1;
/** 1 for the characters allowed after a backslash, other than 'u'. */
export const ESCAPABLE = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPABLE[c.charCodeAt(0)] = 1;
/** 1 for hexadecimal digits. */
export const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** Bytes of source per scanning window (bounds the output buffer growth per window). */
export const WINDOW = 128 * 1024;
/**
 * Worst-case bytes of `out` per source byte: a number gains 2 quotes (`1,` -> `"1",`), a character
 * over U+00FF becomes a 6-byte \u escape (at least 2 source bytes), an invalid byte a 6-byte \ufffd.
 */
export const EXPANSION = 6;
const TAIL = 32;
/** Where the members of a record end are recorded for up to this many members. */
export const MAX_MEMBER_ENDS = 256;

export abstract class ScannerState {
  protected state = T_START;
  protected mode = M_NONE;
  /**
   * Output: in the records array, `[` + each completed record followed by `,` + the current record's bytes; else the
   * current key/scalar.
   */
  protected out: Buffer = Buffer.allocUnsafe(WINDOW * 2 + 64);
  protected o = 0;
  /** Nesting depth relative to the current value; bit (d-1) of `stack` is 1 when level d is an object. */
  protected depth = 0;
  protected cur = 0; // 1 when the innermost open container is an object
  protected stack = new Uint8Array(64);
  protected strNext = S_AFTER; // state after the closing quote (S_COLON for keys)
  protected ns = 0; // number sub-state
  protected lit = 0; // literal being matched
  protected litPos = 0;
  protected litQuoted = false; // NaN / Infinity: close the string after the literal
  protected uLeft = 0; // hex digits left in a \u escape
  private u8need = 0; // UTF-8 decoder: continuation bytes still needed
  private u8cp = 0;
  private u8lower = 0x80;
  private u8upper = 0xbf;
  protected recHigh = false; // the current record has non-ASCII bytes (decode raw as UTF-8)
  protected depthLimit = Number.MAX_SAFE_INTEGER;

  // --- current chunk ---
  protected base = 0; // document offset of the current chunk's first byte
  protected tail: Buffer = Buffer.alloc(0); // last bytes before the current chunk (for excerpts)
  protected total = 0; // bytes of the document before the current chunk

  // --- current record / value ---
  protected valueStart = 0; // document offset of the current record/key/scalar
  protected recOutStart = 0; // where the current record starts in `out`
  protected tooDeep = false;
  protected tooBig = false; // record over maxRecordBytes, or key/scalar over MAX_SCALAR_BYTES
  /**
   * Where in the current record each member (each element at depth 1) ends: its ',' or closing bracket, relative to the
   * record's start.
   */
  protected readonly memberEnds = new Float64Array(MAX_MEMBER_ENDS);
  protected memberCount = 0;
  /** The current record was taken whole by the fast lane (flat-record.ts): nothing of it is in `out` yet. */
  protected laned = false;
  /** The keys the record hook's reader expects, for the fast lane to try first. */
  protected keyGuide: KeyGuide | undefined;
  /** The record hook, when it can recognize whole records before they are scanned. */
  protected knownRecords: RecordBytesHook | undefined;
  /** Records started so far (the current one's position while it is scanned). */
  protected recordCount = 0;

  /** Starts the UTF-8 decoder for a character split across chunks, 4 bytes long, or invalid. */
  protected startUtf8(): void {
    this.u8need = 0;
  }

  /**
   * One byte of the byte-at-a-time UTF-8 decoder (WHATWG rules, what Buffer#toString does: invalid
   * input becomes U+FFFD); writes at `this.o`, sets `this.state` back to S_STR when a character
   * is done; returns the next position.
   */
  protected utf8Byte(b: Buffer, i: number): number {
    const c = b[i]!;
    const out = this.out;
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
        this.o = writeCodePoint(out, this.o, 0xfffd);
        this.state = S_STR;
      }
    } else if (c < this.u8lower || c > this.u8upper) {
      // Ill-formed: U+FFFD for what came before, and this byte is looked at again.
      this.u8need = 0;
      this.o = writeCodePoint(out, this.o, 0xfffd);
      this.state = S_STR;
    } else {
      i++;
      this.u8cp = (this.u8cp << 6) | (c & 0x3f);
      this.u8lower = 0x80;
      this.u8upper = 0xbf;
      if (--this.u8need === 0) {
        this.o = writeCodePoint(out, this.o, this.u8cp);
        this.state = S_STR;
      }
    }
    return i;
  }

  /**
   * The resumable number machine, from `i` to at most `end`: for a number the fast path in S_VALUE
   * did not finish (cut by the window's end, malformed, or -Infinity). Sub-state in `this.ns`,
   * output at `this.o`; leaves `this.state` at S_NUM (the window ended), S_AFTER or S_LIT, and
   * returns the next position.
   */
  protected numberStep(b: Buffer, i: number, end: number): number {
    const out = this.out;
    let o = this.o;
    let ns = this.ns;
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
        this.state = S_LIT;
        break;
      } else {
        // The number ends before this byte.
        if (ns === N_INT || ns === N_FRAC || ns === N_ZERO || ns === N_EXP) {
          out[o++] = 0x22;
          this.state = S_AFTER;
          break;
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
      if (++i === end) break; // still S_NUM: the next window or chunk resumes here
    }
    this.o = o;
    this.ns = ns;
    return i;
  }

  protected ensureOut(need: number): void {
    if (this.out.length >= need) return;
    const bigger = Buffer.allocUnsafe(Math.max(need, this.out.length * 2));
    this.out.copy(bigger, 0, 0, this.o);
    this.out = bigger;
  }

  protected growStack(b: Buffer, i: number): void {
    if (this.stack.length * 8 >= MAX_NESTING) throw this.error(`nested deeper than ${MAX_NESTING} levels`, b, i);
    const bigger = new Uint8Array(this.stack.length * 2);
    bigger.set(this.stack);
    this.stack = bigger;
  }

  protected keepTail(b: Buffer): void {
    if (b.length >= TAIL) this.tail = Buffer.from(b.subarray(b.length - TAIL));
    else {
      const joined = Buffer.concat([this.tail, b]);
      this.tail = joined.length > TAIL ? joined.subarray(joined.length - TAIL) : joined;
    }
  }

  /** A ListingSyntaxError for the byte at chunk position `i` (or at document offset `at`). */
  protected error(what: string, b: Buffer, i: number, bare = false, at?: number): ListingSyntaxError {
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
  protected expectation(): string {
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

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/**
 * The character of a 2- or 3-byte UTF-8 sequence that starts at `b[i]`, as its code point times 4
 * plus the sequence's length; -1 when the sequence is split by `end`, 4 bytes long or invalid (the
 * byte-at-a-time decoder, S_UTF8, takes those). Small enough for V8 to inline into the scan.
 */
export function utf8Char(b: Buffer, i: number, end: number): number {
  const c = b[i]!;
  if (c >= 0xc2 && c <= 0xdf) {
    if (i + 1 < end) {
      const c1 = b[i + 1]!;
      if (c1 >= 0x80 && c1 <= 0xbf) return ((((c & 0x1f) << 6) | (c1 & 0x3f)) << 2) | 2;
    }
  } else if (c >= 0xe0 && c <= 0xef && i + 2 < end) {
    const c1 = b[i + 1]!;
    const c2 = b[i + 2]!;
    if (c1 >= (c === 0xe0 ? 0xa0 : 0x80) && c1 <= (c === 0xed ? 0x9f : 0xbf) && c2 >= 0x80 && c2 <= 0xbf) {
      return ((((c & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f)) << 2) | 3;
    }
  }
  return -1;
}

/** Writes code point `cp` for JSON.parse: as one Latin-1 byte when <= 0xFF, else as \u escape(s). */
export function writeCodePoint(out: Buffer, o: number, cp: number): number {
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
