/**
 * Push-based, streaming, lossless parser of the listing document: bytes in, records out, each with
 * its exact source text. Rule: numbers never pass through a JavaScript number. The layers' class
 * chain and each record's path are in docs/internals.md (The parser).
 */
import { quoteFlatRecord } from './flat-record.js';
import { ListingEnvelopeScanner } from './listing-envelope.js';
import {
  ListingSyntaxError,
  MAX_SCALAR_BYTES,
  makeExcerpt,
  truncateChars,
  type ListingEnvelope,
  type ListingParserOptions,
  type ParsedRecord,
  type RecordBytesHook,
  type RecordTag,
  type SliceBuffer,
} from './listing-types.js';
import { FlatBuilder } from './record-values.js';
import { EXPANSION, M_NONE, M_RECORD, T_END, T_START, WINDOW } from './scanner-state.js';

export {
  ARRAY_AT_TOP_MESSAGE,
  ListingSyntaxError,
  MAX_NESTING,
  MAX_SCALAR_BYTES,
  MAX_TOP_LEVEL_KEYS,
  RECORDS_KEY,
  TOO_LARGE,
  type ListingEnvelope,
  type ListingParserOptions,
  type ParsedRecord,
  type RecordBytesHook,
  type RecordTag,
  type RecordsType,
} from './listing-types.js';

/** A batch of records is parsed once its rewritten text exceeds this. */
const BATCH_BYTES = 256 * 1024;

export class ListingParser extends ListingEnvelopeScanner {
  private readonly maxDepth: number;
  private readonly maxRecordBytes: number;
  private readonly maxRawChars: number;
  /** Bytes of a record kept for `raw` when it spans chunks (enough for maxRawChars characters). */
  private readonly rawByteCap: number;
  private readonly recordHook: RecordBytesHook | undefined;

  private rawAcc: Buffer | undefined; // first bytes of a record that spans chunks
  private rawLen = 0;

  // --- batch ---
  private completedEnd = 0; // end in `out` of the last completed record (its trailing ',')
  private pending = 0; // completed records in `out` waiting for JSON.parse
  private results: ParsedRecord[] = [];
  /** The records whose values are in `out`, waiting for JSON.parse (reused, `pending` long). */
  private readonly waiting: ParsedRecord[] = [];
  /** The fast path for flat objects. */
  private readonly flat = new FlatBuilder();

  private failed: unknown;
  private ended: ListingEnvelope | undefined;

  constructor(options: ListingParserOptions = {}) {
    super();
    this.maxDepth = options.maxDepth ?? 32;
    this.maxRecordBytes = options.maxRecordBytes ?? 1024 * 1024;
    this.maxRawChars = options.maxRawChars ?? 65536;
    if (!(this.maxDepth >= 1) || !(this.maxRecordBytes >= 1) || !(this.maxRawChars >= 1)) {
      throw new RangeError('ListingParser options must be positive');
    }
    this.rawByteCap = Math.min(this.maxRawChars * 4, 1 << 30);
    this.recordHook = options.recordHook;
    this.keyGuide = options.recordHook?.keys;
    this.knownRecords = options.recordHook?.known ? options.recordHook : undefined;
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
          ? new ListingSyntaxError(
              `document is empty at byte ${this.total}: expected '{' (the listing envelope object)`,
              this.total,
              excerpt,
            )
          : new ListingSyntaxError(
              `unexpected end of document at byte ${this.total}: ${this.expectation()} (the listing is truncated)`,
              this.total,
              excerpt,
            );
      this.failed = error;
      throw error;
    }
    this.ended = this.envelope();
    return this.ended;
  }

  protected startArray(): void {
    this.out[0] = 0x5b;
    this.o = 1;
    this.completedEnd = 1;
    this.pending = 0;
  }

  protected startRecord(i: number): void {
    this.valueStart = this.base + i;
    this.recOutStart = this.o;
    this.tooDeep = false;
    this.tooBig = false;
    this.rawLen = 0;
    this.recHigh = false;
    this.memberCount = 0;
    this.laned = false;
    this.depthLimit = this.maxDepth;
  }

  protected finishRecord(b: Buffer, i: number, endOffset: number): void {
    const byteOffset = this.valueStart;
    const byteLength = endOffset - byteOffset;
    let problem: string | undefined;
    if (this.tooDeep) problem = `nested deeper than ${this.maxDepth} levels`;
    if (byteLength > this.maxRecordBytes) {
      const p = `record larger than ${this.maxRecordBytes} bytes`;
      problem = problem === undefined ? p : `${p}; ${problem}`;
    }
    const s = byteOffset - this.base;
    if (s < 0) this.appendRaw(b, 0, i);
    const hook = this.recordHook;
    let tag: RecordTag | undefined;
    if (hook !== undefined) {
      const whole = problem === undefined && byteLength <= this.rawByteCap;
      const bytes = !whole ? undefined : s >= 0 ? b : this.rawAcc;
      const verdict = hook.record(
        bytes,
        s >= 0 ? s : 0,
        s >= 0 ? i : this.rawLen,
        this.memberEnds,
        this.memberCount,
        this.recordCount,
        byteOffset,
        this.laned,
      );
      if (verdict === true) {
        this.recordCount++;
        this.o = this.recOutStart;
        this.rawLen = 0;
        if (s < 0 && this.rawAcc!.length > 65536) this.rawAcc = undefined;
        return;
      }
      if (verdict !== false) tag = verdict;
    }
    let raw: string;
    if (s >= 0) {
      const e = byteLength > this.rawByteCap ? s + this.rawByteCap : i;
      raw = this.recHigh ? (b as SliceBuffer).utf8Slice(s, e) : (b as SliceBuffer).latin1Slice(s, e);
    } else {
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
      const value = rawComplete
        ? this.flat.build(raw, this.recHigh ? undefined : this.memberEnds, this.memberCount)
        : undefined;
      if (value !== undefined) {
        this.o = this.recOutStart;
        this.results.push(
          tag === undefined
            ? { position, value, raw, byteOffset, byteLength }
            : { position, value, raw, byteOffset, byteLength, fingerprint: tag },
        );
        return;
      }
      if (this.laned) this.o = quoteFlatRecord(b, s, this.memberEnds, this.memberCount, this.out, this.recOutStart);
      this.out[this.o++] = 0x2c;
      this.completedEnd = this.o;
      const record: ParsedRecord = { position, value: undefined, raw, byteOffset, byteLength };
      if (tag !== undefined) record.fingerprint = tag;
      if (!rawComplete) record.rawCut = true;
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
      throw new Error(`ListingParser internal error: a validated batch was refused by JSON.parse (${String(error)})`, {
        cause: error,
      });
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

  protected endArray(): void {
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

  private appendRaw(b: Buffer, s: number, e: number): void {
    const room = this.rawByteCap - this.rawLen;
    if (room <= 0 || e <= s) return;
    const n = Math.min(room, e - s);
    const need = this.rawLen + n;
    if (this.rawAcc === undefined || this.rawAcc.length < need) {
      const bigger = Buffer.allocUnsafe(
        Math.min(this.rawByteCap, Math.max(need, 1024, (this.rawAcc?.length ?? 0) * 2)),
      );
      if (this.rawAcc !== undefined) this.rawAcc.copy(bigger, 0, 0, this.rawLen);
      this.rawAcc = bigger;
    }
    b.copy(this.rawAcc, this.rawLen, s, s + n);
    this.rawLen = need;
  }
}
