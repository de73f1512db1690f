/**
 * Push-based, streaming, lossless parser of the listing document: bytes in, records out, each
 * with its exact source text, numbers never passing through a JavaScript number.
 *
 * Layers, each in its own file: the JSON state machine (listing-scanner.ts, with its resumable
 * state in scanner-state.ts), the envelope around the records (listing-envelope.ts), and here
 * what becomes of each record.
 *
 * Why the layers are a class chain (ScannerState <- ListingScanner <- ListingEnvelopeScanner <-
 * ListingParser, only the last one instantiated) rather than one class or separate objects:
 * - The hot loop (ListingScanner.scan) resumes from, and writes back to, fields that every layer
 *   also reads (`out`, `o`, `state`, `mode`, `valueStart`, `memberEnds`...). As fields of one
 *   object of one shape they are plain monomorphic property accesses for V8; separate objects
 *   would add a hop per access, or copying between objects at every record and key boundary.
 * - Each layer is one concern in a file that reads in one sitting: bytes and JSON states ->
 *   the envelope -> records (here) -> values (record-values.ts, a separate object: it keeps no
 *   scanner state). One class would be a file of some 1,200 lines.
 * - A layer hands work to the one above only through a few abstract hooks (valueDone,
 *   envelopeStep, startRecord; startArray, finishRecord, endArray), each with one
 *   implementation, so those calls stay monomorphic too.
 *
 * What becomes of each record:
 * - Fast path: a record that is a flat object (scalar member values only, the usual record) is
 *   built from its `raw` text (record-values.ts), using the member ends the scanner recorded,
 *   and its rewritten bytes are dropped (a compact one the scanner's fast lane took has none: they
 *   are written only if it goes to JSON.parse after all, see flat-record.ts). Its string values are slices of `raw` (V8
 * may keep a   long one as a view of `raw`, so holding such a value holds that record's raw text).
 * - Anything else stays in the batch buffer `out` as rewritten text (numbers quoted) and is
 *   parsed per batch (one JSON.parse of `[a,b,c]`): at the end of every push, and whenever the
 *   batch exceeds BATCH_BYTES within a push. A record still incomplete at the end of a push
 *   stays in the buffer and is finished by a later push.
 * - A chunk is scanned in windows of at most WINDOW bytes; before each window `out` is made
 *   large enough for the worst-case expansion of that window, so the hot loop writes without
 *   capacity checks. A value over its limit (depth, record size, 64 KiB for top-level values)
 *   keeps being scanned (validated) but its output is dropped at each window boundary, so
 *   memory stays bounded whatever the document holds.
 * - `raw` is decoded per record straight from the chunk (a fresh string, not a slice of a larger
 *   one, so keeping a few rejected records' raw text never pins whole chunks in memory), with
 *   latin1Slice when the record is ASCII. A record spanning chunks keeps its first bytes (enough
 *   for maxRawChars characters) in a side buffer.
 * - byteOffset/byteLength count bytes of the document as received (a BOM included).
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
