/**
 * Reads a compact flat record's members straight from its bytes, without building anything:
 * which known fields it has (and which are not null), where its extra members are, and its id as
 * a number. The unchanged-record shortcut needs exactly this to skip a record and still count it
 * (presence, extra fields). Anything unusual (whitespace between tokens, an escape or a
 * non-ASCII byte in a key, a repeated key, a nested value as id, an id that is not 1-15
 * plain digits) answers false: the record then takes the full path, which is always right.
 */

import { viewOf } from '../../io/byte-view.js';
import type { KeyGuide } from './listing-types.js';

/** Unknown keys remembered per record; a record with more takes the full path. */
const MAX_UNKNOWN = 8;
const MAX_ID_DIGITS = 15;
/** Member positions whose last known key is remembered. */
const MAX_GUESSES = 256;
/**
 * Unknown keys longer than this are not remembered for the next record: MAX_GUESSES of them could
 * otherwise hold 256 keys of up to a record's size (a 60 kB name each: 15 MB) for the whole run.
 */
const MAX_REMEMBERED_KEY = 256;

export class MemberReader implements KeyGuide {
  /** Bit k set: known field k is present / present and not null. */
  present = 0;
  nonNull = 0;
  /** The id (1 to 10^15-1) as written, when `read` answered true. */
  id = 0;
  /** Where known field k's value starts and ends (its member's end: trailing whitespace included), when present. */
  readonly valueStart = new Int32Array(31);
  readonly valueEnd = new Int32Array(31);
  /**
   * Per extra member, `unknownCount` of them: its key's text (start, end, without quotes), and
   * its value's start and member end (trailing whitespace included).
   */
  readonly unknown = new Int32Array(4 * MAX_UNKNOWN);
  /** The text of each unknown key read, `unknownCount` of them. */
  readonly unknownNames: string[] = [];
  unknownCount = 0;
  /**
   * The record read came through the scanner's fast lane: its strings and numbers are plain (listing-types.ts
   * RecordBytesHook).
   */
  plain = false;

  /** Each known key's bytes, in the order of `knownKeys` (bit k of the presence mask is keys[k]). */
  private readonly keys: Uint8Array[];
  /** Per known key: its text followed by '":' (`keyColon`), and that text's whole 4-byte little-endian words. */
  readonly keyColon: Buffer[];
  readonly keyWords: Int32Array[];
  private readonly idIndex: number;
  /** Per member position: the known key found there in the last record read (-1: none). */
  readonly guess = new Int32Array(MAX_GUESSES).fill(-1);
  /**
   * Per member position of a record the scanner's fast lane took: the known key it found there by `guess`
   * (flat-record.ts KeyGuide), else -1.
   */
  readonly found = new Int32Array(MAX_GUESSES).fill(-1);
  /**
   * Per member position: the unknown key found there last: its bytes followed by '":' (and their
   * whole 4-byte words, as for the known keys), and its text. New upstream fields repeat like the
   * known ones: the next record's key is compared with these bytes instead of being scanned,
   * looked up and made into a string again.
   */
  private readonly lastUnknownKey: Array<Buffer | undefined> = [];
  private readonly lastUnknownWords: Int32Array[] = [];
  private readonly lastUnknownName: string[] = [];

  /** `knownKeys`: the field names a record may have, bit k for knownKeys[k] (at most 31). */
  constructor(knownKeys: readonly string[]) {
    if (knownKeys.length > 31) throw new RangeError('MemberReader: at most 31 known keys');
    this.keys = knownKeys.map((k) => Buffer.from(k, 'latin1'));
    this.keyColon = knownKeys.map((k) => Buffer.from(`${k}":`, 'latin1'));
    this.keyWords = this.keyColon.map(wordsOf);
    this.idIndex = knownKeys.indexOf('id');
  }

  /**
   * Reads the record `b[start, end)`; `ends[m]` is where member m ends (its ',' or '}') relative
   * to `start`, for the `count` members. True when the record is compact and simple (see above).
   */
  read(b: Uint8Array, start: number, end: number, ends: Float64Array, count: number, plain = false): boolean {
    if (count === 0 || count > ends.length || b[start] !== 0x7b) return false;
    let present = 0;
    let nonNull = 0;
    let unknownCount = 0;
    let idStart = -1;
    let idEnd = -1;
    let at = start; // the '{' or ',' before the member
    for (let m = 0; m < count; m++) {
      const memberEnd = start + ends[m]!;
      if (b[at + 1] !== 0x22) return false;
      const ks = at + 2;
      // Records repeat their keys in the same order: the known key member m had last time is
      // tried first, and when its bytes and a '"' follow, that is this key (a known key has no
      // '"' or '\\'), found in one pass instead of a scan for the quote and a search.
      // A key the fast lane found by its guess (`plain`: the lane took this record) is not compared again.
      const lane = plain && m < MAX_GUESSES ? this.found[m]! : -1;
      let k = lane >= 0 ? lane : m < MAX_GUESSES ? this.guess[m]! : -1;
      let j =
        lane >= 0
          ? ks + this.keys[k]!.length
          : k >= 0
            ? this.match(k, b, ks, memberEnd)
            : k === -1 && m < MAX_GUESSES
              ? this.matchUnknown(m, b, ks, memberEnd)
              : -1;
      let name: string | undefined;
      if (j >= 0 && k === -1) name = this.lastUnknownName[m];
      else if (j < 0) {
        j = ks;
        for (;;) {
          const c = b[j]!;
          if (c === 0x22) break;
          if (c === 0x5c || c >= 0x80 || j >= memberEnd) return false;
          j++;
        }
        k = this.known(b, ks, j);
        if (m < MAX_GUESSES) this.guess[m] = k;
      }
      const vs = j + 2;
      if (b[j + 1] !== 0x3a || vs >= memberEnd) return false;
      const v = b[vs]!;
      if (v === 0x20 || v === 0x0a || v === 0x0d || v === 0x09) return false;
      if (k >= 0) {
        const bit = 1 << k;
        if ((present & bit) !== 0) return false;
        present |= bit;
        // null and "" count as no value (both load as null).
        if (v !== 0x6e && !(v === 0x22 && b[vs + 1] === 0x22)) nonNull |= bit;
        this.valueStart[k] = vs;
        this.valueEnd[k] = memberEnd;
        if (k === this.idIndex) {
          idStart = vs;
          idEnd = memberEnd;
        }
      } else {
        if (unknownCount === MAX_UNKNOWN || this.repeatsUnknown(b, ks, j, unknownCount)) return false;
        if (name === undefined) {
          name = Buffer.prototype.latin1Slice.call(b, ks, j) as string;
          if (m < MAX_GUESSES && j - ks > MAX_REMEMBERED_KEY) this.lastUnknownKey[m] = undefined;
          else if (m < MAX_GUESSES) {
            const keyColon = Buffer.concat([b.subarray(ks, j), COLON]);
            this.lastUnknownKey[m] = keyColon;
            this.lastUnknownWords[m] = wordsOf(keyColon);
            this.lastUnknownName[m] = name;
          }
        }
        const u = 4 * unknownCount;
        this.unknownNames[unknownCount] = name;
        this.unknown[u] = ks;
        this.unknown[u + 1] = j;
        this.unknown[u + 2] = vs;
        this.unknown[u + 3] = memberEnd;
        unknownCount++;
      }
      at = memberEnd;
    }
    if (b[at] !== 0x7d || at + 1 !== end || idStart < 0) return false;
    // The id: plain digits, or plain digits in quotes, no leading zero.
    if (b[idStart] === 0x22) {
      if (b[idEnd - 1] !== 0x22) return false;
      idStart++;
      idEnd--;
    }
    const digits = idEnd - idStart;
    if (digits < 1 || digits > MAX_ID_DIGITS || b[idStart] === 0x30) return false;
    let id = 0;
    for (let i = idStart; i < idEnd; i++) {
      const d = b[i]! - 0x30;
      if (d < 0 || d > 9) return false;
      id = id * 10 + d;
    }
    this.present = present;
    this.nonNull = nonNull;
    this.unknownCount = unknownCount;
    this.id = id;
    this.plain = plain;
    return true;
  }

  /** Whether b[s, e) is one of the first `count` unknown keys already read (a repeated key). */
  private repeatsUnknown(b: Uint8Array, s: number, e: number, count: number): boolean {
    next: for (let u = 0; u < count; u++) {
      const us = this.unknown[4 * u]!;
      if (this.unknown[4 * u + 1]! - us !== e - s) continue;
      for (let i = 0; i < e - s; i++) if (b[us + i] !== b[s + i]) continue next;
      return true;
    }
    return false;
  }

  /** When known key k's text and '":' are at b[s] (before `limit`), the position of that quote; else -1. */
  private match(k: number, b: Uint8Array, s: number, limit: number): number {
    return this.matchText(this.keyColon[k]!, this.keyWords[k]!, b, s, limit);
  }

  /**
   * When the unknown key member m had last time and '":' are at b[s] (before `limit`), the position of that quote; else
   * -1.
   */
  private matchUnknown(m: number, b: Uint8Array, s: number, limit: number): number {
    const key = this.lastUnknownKey[m];
    return key === undefined ? -1 : this.matchText(key, this.lastUnknownWords[m]!, b, s, limit);
  }

  /**
   * When `text` (a key and '":', its whole 4-byte words in `words`) is at b[s] (before `limit`),
   * the position of its quote; else -1. Compared four bytes at a time through a DataView of `b`
   * (one load each in V8, where a byte loop costs a load and a compare per byte).
   */
  private matchText(text: Buffer, words: Int32Array, b: Uint8Array, s: number, limit: number): number {
    const n = text.length;
    if (s + n > limit) return -1;
    const view = viewOf(b);
    let i = 0;
    for (let w = 0; w < words.length; w++, i += 4) if (view.getInt32(s + i, true) !== words[w]) return -1;
    for (; i < n; i++) if (text[i] !== b[s + i]) return -1;
    return s + n - 2;
  }

  /** Index of the known key whose text is b[s, e), or -1. */
  private known(b: Uint8Array, s: number, e: number): number {
    const keys = this.keys;
    const n = e - s;
    next: for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      if (key.length !== n) continue;
      for (let i = 0; i < n; i++) if (key[i] !== b[s + i]) continue next;
      return k;
    }
    return -1;
  }
}

const COLON = Buffer.from('":', 'latin1');

/** The whole 4-byte little-endian words of `text`. */
function wordsOf(text: Buffer): Int32Array {
  const words = new Int32Array(text.length >> 2);
  for (let w = 0; w < words.length; w++) words[w] = text.readInt32LE(4 * w);
  return words;
}
