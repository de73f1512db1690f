/**
 * The document around the records: `{"message":..., "count":..., "bulk_wine_reconciliation":[...],
 * "recordCount":...}`. Top-level keys and values other than the records array are parsed
 * losslessly (numbers as text) and kept, within limits, so a huge envelope cannot exhaust memory.
 * What happens to each record is the subclass's business (listing-parser.ts).
 */
import { ListingScanner } from './listing-scanner.js';
import {
  ARRAY_AT_TOP_MESSAGE,
  MAX_SCALAR_BYTES,
  MAX_TOP_LEVEL_KEYS,
  RECORDS_KEY,
  TOO_LARGE,
  type ListingEnvelope,
  type ListingSyntaxError,
  type RecordsType,
  type SliceBuffer,
} from './listing-types.js';
import {
  A_AFTER,
  A_FIRST,
  A_NEXT,
  BOM,
  M_KEY,
  M_NONE,
  M_RECORD,
  M_SCALAR,
  S_AFTER,
  S_STR,
  S_VALUE,
  T_AFTER,
  T_BOM,
  T_COLON,
  T_END,
  T_KEY,
  T_KEY_OR_END,
  T_START,
  T_VALUE,
} from './scanner-state.js';

export abstract class ListingEnvelopeScanner extends ListingScanner {
  private readonly topLevelKeys: string[] = [];
  private readonly scalars: Record<string, unknown> = {};
  private recordsType: RecordsType = 'missing';
  private curKey = '';
  private curIsRecords = false;
  private seenRecordsKey = false;
  private scalarCount = 0;
  /** Non-whitespace after the document: reported by end(), so the records before it still count. */
  protected trailing: ListingSyntaxError | undefined;

  /** The records array opened: `out` is free for the records. */
  protected abstract startArray(): void;
  /** The record at chunk position `i` (just after its last byte) is complete. */
  protected abstract finishRecord(b: Buffer, i: number, endOffset: number): void;
  /** The records array closed. */
  protected abstract endArray(): void;

  /** The envelope as scanned (call once the document is complete). */
  protected envelope(): ListingEnvelope {
    return {
      topLevelKeys: this.topLevelKeys,
      scalars: this.scalars,
      recordsKey: RECORDS_KEY,
      recordsType: this.recordsType,
      recordCount: this.recordCount,
      bytes: this.total,
    };
  }

  protected envelopeStep(b: Buffer, i: number, end: number): number {
    while (i < end) {
      let state = this.state;
      if (state === T_BOM) {
        if (b[i] !== BOM[this.litPos]) throw this.error("expected '{' (the listing envelope object)", b, i);
        i++;
        if (++this.litPos === BOM.length) this.state = T_START;
        continue;
      }
      if (state < T_START) return i;
      let c = b[i]!;
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        if (++i === end) return i;
        c = b[i]!;
      }
      if (state === A_AFTER) {
        if (c === 0x2c) state = A_NEXT;
        else if (c === 0x5d) {
          this.endArray();
          state = T_AFTER;
        } else throw this.error("expected ',' or ']' after a record", b, i);
        i++;
      } else if (state === A_NEXT || state === A_FIRST) {
        if (c === 0x5d && state === A_FIRST) {
          i++;
          this.endArray();
          state = T_AFTER;
        } else {
          this.startRecord(i);
          this.mode = M_RECORD;
          this.depth = 0;
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
          this.out[0] = c;
          this.o = 1;
          i++;
          this.strNext = S_AFTER;
          state = S_STR;
        } else if (c === 0x7d && state === T_KEY_OR_END) {
          i++;
          state = T_END;
        } else
          throw this.error(
            state === T_KEY ? "expected '\"' to start a top-level key" : "expected a top-level key or '}'",
            b,
            i,
          );
      } else if (state === T_COLON) {
        if (c !== 0x3a) throw this.error("expected ':' after a top-level key", b, i);
        i++;
        state = T_VALUE;
      } else if (state === T_VALUE) {
        if (this.curIsRecords) this.recordsType = recordsTypeOf(c);
        if (this.curIsRecords && c === 0x5b) {
          i++;
          this.startArray();
          state = A_FIRST;
        } else {
          this.beginTopValue(M_SCALAR, i);
          this.o = 0;
          state = S_VALUE;
        }
      } else if (state === T_START) {
        if (c === 0xef && this.base + i === 0) {
          i++;
          this.litPos = 1;
          this.state = T_BOM;
          continue;
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
      this.state = state;
    }
    return i;
  }

  private beginTopValue(mode: number, i: number): void {
    this.mode = mode;
    this.valueStart = this.base + i;
    this.tooBig = false;
    this.tooDeep = false;
    this.depthLimit = Number.MAX_SAFE_INTEGER;
    this.depth = 0;
  }

  protected valueDone(b: Buffer, i: number): number {
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
    if (!Object.prototype.hasOwnProperty.call(this.scalars, this.curKey) && ++this.scalarCount > MAX_TOP_LEVEL_KEYS)
      return T_AFTER;
    Object.defineProperty(this.scalars, this.curKey, { value, enumerable: true, writable: true, configurable: true });
    return T_AFTER;
  }
}

/** What the records key holds, from the first byte of its value. */
function recordsTypeOf(c: number): RecordsType {
  if (c === 0x5b) return 'array';
  if (c === 0x7b) return 'object';
  if (c === 0x22) return 'string';
  if (c === 0x6e) return 'null';
  if (c === 0x74 || c === 0x66) return 'boolean';
  return 'number';
}
