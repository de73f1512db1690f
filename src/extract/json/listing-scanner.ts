/**
 * The hot loop: a byte-level JSON (RFC 8259) state machine over one window of a chunk, copying each
 * value into `out` with numbers quoted. Rule: `scan` stays one function (see its head); the usual
 * compact flat record is taken by the fast lane (flat-record.ts) and never comes through here.
 */
import { scanFlatRecord } from './flat-record.js';
import { quoteNumber } from './number-token.js';
import {
  A_AFTER,
  ESCAPABLE,
  HEX,
  L_FALSE,
  L_INFINITY,
  L_NAN,
  L_NULL,
  L_TRUE,
  LITS,
  MAX_MEMBER_ENDS,
  M_NONE,
  M_RECORD,
  N_INT,
  N_MINUS,
  N_ZERO,
  STR_PLAIN,
  S_AFTER,
  S_ARR_FIRST,
  S_COLON,
  S_ESC,
  S_KEY,
  S_LIT,
  S_NUM,
  S_OBJ_FIRST,
  S_STR,
  S_UHEX,
  S_UTF8,
  S_VALUE,
  ScannerState,
  T_START,
  utf8Char,
  writeCodePoint,
} from './scanner-state.js';

export abstract class ListingScanner extends ScannerState {
  /** The value being scanned (record, key or scalar) ended just before chunk position `i`; returns the next state. */
  protected abstract valueDone(b: Buffer, i: number): number;
  /** A record starts at chunk position `i` (its first byte). */
  protected abstract startRecord(i: number): void;
  /** Scans envelope bytes from `i` (state in `this.state`, output in `this.o`); returns the next position. */
  protected abstract envelopeStep(b: Buffer, i: number, end: number): number;

  // The hot loop, kept as ONE function with one switch on purpose: every byte of every record the
  // fast lane declines passes through here, so the scanner's state lives in locals for a whole
  // window (V8 keeps them in registers) and goes back to fields only around the rare calls out
  // (slow paths, the envelope, a completed value). Split into methods, each token would pay a call
  // and a round trip of the state through `this`. Do not split it; keep the rare cases out of line.
  // Locals are written back before any method call that reads or changes scanner state, and on exit.
  protected scan(b: Buffer, start: number, end: number): void {
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
            const char = utf8Char(b, i, end);
            if (char < 0) {
              // Split across chunks, 4-byte or invalid: the byte-at-a-time decoder.
              this.startUtf8();
              state = S_UTF8;
              continue main;
            }
            o = writeCodePoint(out, o, char >> 2);
            i += char & 3;
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
          this.o = o;
          this.state = state;
          i = this.utf8Byte(b, i);
          o = this.o;
          state = this.state;
          continue main;
        }

        case S_NUM: {
          this.o = o;
          this.ns = ns;
          this.state = state;
          i = this.numberStep(b, i, end);
          o = this.o;
          ns = this.ns;
          state = this.state;
          continue main;
        }

        case S_AFTER: {
          if (depth === 0) {
            this.o = o;
            this.depth = 0;
            state = this.valueDone(b, i);
            out = this.out;
            o = this.o;
            // The usual next record, `,{` right after this one, starts here rather than through
            // the envelope's states (as its A_AFTER and A_NEXT would start it).
            if (state === A_AFTER && i + 1 < end && b[i] === 0x2c && b[i + 1] === 0x7b) {
              i++;
              this.startRecord(i);
              this.mode = M_RECORD;
              state = S_VALUE;
            }
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
          throw this.error(
            cur === 1 ? "expected ',' or '}' after an object member" : "expected ',' or ']' after an array element",
            b,
            i,
          );
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
            const o1 = quoteNumber(b, i, end, out, o);
            if (o1 >= 0) {
              i += o1 - o - 2;
              o = o1;
              state = S_AFTER;
              continue main;
            }
            out[o++] = 0x22;
            out[o++] = c;
            i++;
            ns = c === 0x2d ? N_MINUS : c === 0x30 ? N_ZERO : N_INT;
            state = S_NUM;
          } else if (c === 0x7b || c === 0x5b) {
            if (depth === 0 && c === 0x7b && this.mode === M_RECORD) {
              // A record the hook knows by its bytes is skipped unread (an unchanged one in a re-sync).
              const known = this.knownRecords === undefined ? 0 : this.knownRecords.known!(b, i, end);
              if (known > 0) {
                this.memberCount = 0;
                this.laned = true;
                i += known;
                state = S_AFTER;
                continue main;
              }
              // A whole compact flat record at once, no output (flat-record.ts); else byte by byte.
              const count = scanFlatRecord(b, i, end, this.memberEnds, this.keyGuide);
              if (count > 0) {
                this.memberCount = count;
                this.laned = true;
                i += this.memberEnds[count - 1]! + 1;
                state = S_AFTER;
                continue main;
              }
            }
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

        default: {
          if (state < T_START) throw new Error(`ListingParser: bad state ${state}`);
          this.state = state;
          this.o = o;
          this.depth = depth;
          this.strNext = strNext;
          i = this.envelopeStep(b, i, end);
          state = this.state;
          o = this.o;
          depth = this.depth;
          strNext = this.strNext;
          continue main;
        }
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
}
