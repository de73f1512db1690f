/**
 * The streaming middle of a run: listing bytes (a whole file, or the spool file followed as it
 * downloads) -> lossless parser -> record checks -> COPY text for the staging table (a first
 * load's: for the table itself, see first-load.ts), with rejects set aside.
 * Memory is bounded by one chunk of records, whatever the size of the listing.
 */
import { open } from 'node:fs/promises';
import { InvalidListingError } from '../errors.js';
import { AttemptAbandoned } from '../extract/http/spool-watch.js';
import {
  ListingParser,
  ListingSyntaxError,
  type ListingEnvelope,
  type ParsedRecord,
  type RecordBytesHook,
} from '../extract/json/listing-parser.js';
import { RecordCheckpoints } from '../extract/json/record-locate.js';
import { MemberReader } from '../extract/json/record-members.js';
import { isKnownField } from '../fields.js';
import type { Reject } from '../load/audit.js';
import { copyLine } from '../transform/copy-line.js';
import { extraFieldsOf, trimValueEnd, valueKind, type ExtraFields } from '../transform/extra-fields.js';
import { FieldCounter, KNOWN_FIELDS } from '../transform/field-counts.js';
import { transformRecord } from '../transform/record.js';
import { CopyWriter } from '../transform/record-copy.js';
import type { UnchangedShortcut } from '../fingerprints/shortcut.js';
import type { FirstLoad } from './first-load.js';
import { IdBitmap } from './id-bitmap.js';
import { RejectReasons } from './reject-reasons.js';
import { RejectedIds } from './rejected-ids.js';

const READ_CHUNK = 1024 * 1024;
/**
 * The parser is fed at most this much at a time: it returns a push's records all at once, and a
 * push of tiny records (`{}` is 3 bytes) must die young rather than be promoted, or an all-rejected
 * listing grows the old space between full collections. Keep it small; why 8 KiB:
 * docs/performance.md, "Listings in which every record is invalid".
 */
const PUSH_BYTES = 8 * 1024;
const YIELD_AT = 512 * 1024;
const REJECT_BATCH = 1000;
/**
 * Rejects are also written once their raw text reaches this many characters: a full batch of
 * rejects at the raw-text cap each would be held, and again while the insert is serialized.
 */
const REJECT_BATCH_CHARS = 4 * 1024 * 1024;
/** Rejects stored per run; beyond this they are counted, not stored (a wholly broken listing). */
export const MAX_STORED_REJECTS = 10_000;

export interface ListingTally {
  received: number;
  rejected: number;
  bytes: number;
  /** False when every id was seen once (the SQL duplicate pass can be skipped). */
  maybeDuplicates: boolean;
  /** Which fields the records carry (known and unknown), for the schema-drift guard. */
  fields: FieldCounter;
  /** Reject reasons: the first MAX_REASONS distinct ones one by one, then "other reasons" (reject-reasons.ts). */
  reasons: RejectReasons;
  envelope: ListingEnvelope | undefined;
  /** Ids staged so far, by either path. */
  ids: IdBitmap;
  /** Valid ids of rejected records: their live rows are kept, not deleted. */
  rejectedIds: RejectedIds;
  /**
   * The bytes came from a download attempt that failed before its end: everything counted, staged
   * and rejected from them is void (the caller starts over with a fresh tally).
   */
  abandoned: boolean;
}

export function newTally(): ListingTally {
  return {
    received: 0,
    rejected: 0,
    bytes: 0,
    maybeDuplicates: false,
    fields: new FieldCounter(),
    reasons: new RejectReasons(),
    envelope: undefined,
    ids: new IdBitmap(),
    rejectedIds: new RejectedIds(),
    abandoned: false,
  };
}

/** The most frequent reject reasons ("path: message"), most frequent first. */
export function topReasons(tally: ListingTally, limit: number): Array<{ reason: string; count: number }> {
  return tally.reasons.top(limit);
}

export interface ListingLinesOptions {
  /** The listing's bytes in order (fileChunks, or SpoolWatch.follow). */
  chunks: AsyncIterable<Buffer>;
  tally: ListingTally;
  writeRejects: (rejects: Reject[]) => Promise<void>;
  onProgress?: (tally: ListingTally) => void;
  signal?: AbortSignal;
  /** The byte-level paths (recordFastPaths); without them every record takes the zod path. */
  fast?: FastPaths;
  /** Keep the records' extra members in extra_fields (SYNC_EXTRA_FIELDS=keep). */
  extras: boolean;
}

/** The byte-level paths of one run, and where they keep what the run needs afterwards. */
export interface FastPaths {
  hook: RecordBytesHook;
  shortcut: UnchangedShortcut;
  /** COPY lines written straight from bytes (a first load's: `firstLoad.rows`). */
  writer: CopyWriter;
  /** A first load: rows go straight to the table, duplicate ids aside (first-load.ts); staging otherwise. */
  firstLoad: FirstLoad | undefined;
  /** Where records start, to read a skipped duplicate's raw text back. */
  checkpoints: RecordCheckpoints;
}

/**
 * The byte-level paths of one run, as the parser's record hook: an unchanged record is skipped, a
 * usual changed one written straight to COPY bytes; either still counts in `tally`. Any other
 * record is handed on to the zod path with its fingerprint attached.
 */
export function recordFastPaths(
  tally: ListingTally,
  shortcut: UnchangedShortcut,
  { firstLoad, extras }: { firstLoad?: FirstLoad; extras: boolean },
): FastPaths {
  const members = new MemberReader(KNOWN_FIELDS);
  const writer = firstLoad?.rows ?? new CopyWriter(extras);
  const checkpoints = new RecordCheckpoints();
  const spans = members.unknown;
  // Per extra member of a record (1st, 2nd, ...): the name it had last and that name's counter
  // slot. MemberReader hands out the same string for a key that repeats at the same place, so
  // the usual record finds its slots by identity, with no lookup.
  const lastNames: string[] = [];
  const lastSlots: number[] = [];
  // Per extra member of the record just read, the kind of its value (0 unless extras): what the
  // counts and its shape take.
  let kinds = new Int32Array(16);
  const readKinds = (bytes: Buffer) => {
    if (members.unknownCount > kinds.length) kinds = new Int32Array(members.unknownCount * 2);
    for (let u = 0; u < members.unknownCount; u++)
      kinds[u] = extras
        ? valueKind(bytes, spans[4 * u + 2]!, trimValueEnd(bytes, spans[4 * u + 2]!, spans[4 * u + 3]!))
        : 0;
  };
  const count = () => {
    tally.received++;
    tally.fields.countMembers(members.present, members.nonNull);
    for (let u = 0; u < members.unknownCount; u++) {
      const name = members.unknownNames[u]!;
      if (lastNames[u] !== name) {
        lastNames[u] = name;
        lastSlots[u] = tally.fields.unknownSlot(name);
      }
      tally.fields.countSlot(lastSlots[u]!, kinds[u]!);
    }
  };
  const { shapes } = shortcut;
  // The record `known` recognized, for `record` to take: it comes next.
  let knownPending = false;
  const hook: RecordBytesHook = {
    keys: members,
    record(bytes, start, end, ends, memberCount, position, byteOffset, plain) {
      checkpoints.record(position, byteOffset);
      if (knownPending) {
        // Unchanged, and not read: counted by its shape.
        knownPending = false;
        tally.received++;
        shapes.count(shortcut.knownShape, tally.fields);
        shortcut.knownSeen(position);
        return true;
      }
      if (bytes === undefined || !members.read(bytes, start, end, ends, memberCount, plain)) return false;
      if (members.unknownCount > 0) readKinds(bytes);
      if (shortcut.decide(members.id, bytes, start, end, position)) {
        count();
        return true;
      }
      const fingerprint = shortcut.fingerprint;
      fingerprint[2] = shapes.numberOf(members, kinds, plain);
      if (firstLoad !== undefined) {
        if (!firstLoad.write(bytes, start, end, members, members.id, position, byteOffset, fingerprint))
          return [fingerprint[0]!, fingerprint[1]!];
        count();
        shortcut.stagedId(members.id, position);
        return true;
      }
      if (writer.write(bytes, start, end, members, position, byteOffset, fingerprint)) {
        count();
        if (!tally.maybeDuplicates && !tally.ids.addNumber(members.id)) tally.maybeDuplicates = true;
        shortcut.stagedId(members.id, position);
        return true;
      }
      return [fingerprint[0]!, fingerprint[1]!];
    },
  };
  // A first load has no row to know a record by.
  if (firstLoad === undefined) {
    hook.known = (b, start, end) => {
      const length = shortcut.known(b, start, end);
      if (length > 0) knownPending = true;
      return length;
    };
  }
  return { hook, shortcut, writer, firstLoad, checkpoints };
}

/**
 * A whole listing file, a MiB at a time, read into two buffers in turn. A read stream gives a new
 * buffer per chunk, freed only when V8 collects its wrapper, so a long replay holds many at once.
 * The parse copies what it keeps of a chunk (a record's partial bytes, COPY lines, raw text) before
 * it asks for the next one.
 */
export async function* fileChunks(path: string, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const file = await open(path, 'r');
  const buffers = [Buffer.allocUnsafe(READ_CHUNK), Buffer.allocUnsafe(READ_CHUNK)];
  try {
    for (let k = 0; ; k ^= 1) {
      signal?.throwIfAborted();
      const { bytesRead } = await file.read(buffers[k]!, 0, READ_CHUNK, null);
      if (bytesRead === 0) return;
      yield buffers[k]!.subarray(0, bytesRead);
    }
  } finally {
    await file.close();
  }
}

/**
 * Yields COPY text for every valid record; fills `tally` as it goes and at the end. When the
 * chunks stop with AttemptAbandoned, it ends quietly with `tally.abandoned` set: the COPY it
 * feeds finishes cleanly (a failed COPY would abort the run's transaction, which uses no
 * savepoint), and what it staged and rejected is for the caller to throw away.
 */
export async function* listingCopyLines(options: ListingLinesOptions): AsyncGenerator<string | Buffer> {
  const { tally, fast } = options;
  const parser = new ListingParser({ recordHook: fast?.hook });
  const seen = tally.ids;
  const writer = fast?.writer;
  const firstLoad = fast?.firstLoad;
  let stored = 0;
  let pending: Reject[] = [];
  let pendingChars = 0;
  let out = '';

  // Past the stored cap a reject is only counted: no object, no raw text kept.
  // `id`: the record's id when it is valid (its live row is then kept as it is).
  const reject = (
    record: ParsedRecord,
    recordId: string | null,
    errors: Reject['errors'],
    id: string | null = null,
  ) => {
    tally.rejected++;
    if (id !== null) tally.rejectedIds.add(id);
    for (const e of errors) tally.reasons.count(e.path, e.message);
    if (stored < MAX_STORED_REJECTS) {
      stored++;
      pending.push({ position: record.position, recordId, errors, raw: record.raw });
      pendingChars += record.raw.length;
    }
  };
  const handle = (record: ParsedRecord) => {
    tally.received++;
    if (record.problem !== undefined) {
      reject(record, null, [{ path: '', message: record.problem }]);
      return;
    }
    const value = record.value;
    const unknown = typeof value === 'object' && value !== null && !Array.isArray(value) && tally.fields.count(value);
    const result = transformRecord(value);
    if (!result.ok) {
      reject(record, result.recordId, result.errors, result.id);
      return;
    }
    let extra: string | null = null;
    if (unknown && options.extras) {
      const kept = keptExtras(record);
      if (!kept.ok) {
        reject(record, result.row.id, kept.errors, result.row.id);
        return;
      }
      for (const m of kept.members) tally.fields.noteKind(m.name, m.kind);
      extra = kept.text;
    }
    if (firstLoad !== undefined) {
      out += firstLoad.line(
        result.row,
        extra,
        record.position,
        record.byteOffset,
        record.byteLength,
        record.fingerprint,
      );
    } else {
      if (!tally.maybeDuplicates && !seen.add(result.row.id)) tally.maybeDuplicates = true;
      out += copyLine(record.position, result.row, extra, record.byteOffset, record.byteLength, record.fingerprint);
    }
    fast?.shortcut.staged(result.row.id, record.position);
  };
  try {
    for await (const chunk of options.chunks) {
      tally.bytes += chunk.length;
      for (let at = 0; at < chunk.length; at += PUSH_BYTES) {
        // A re-sync's parse follows the read of the live rows (fingerprints/shortcut.ts).
        const behind = fast?.shortcut.pace();
        if (behind !== undefined) await behind;
        for (const record of parser.push(chunk.subarray(at, at + PUSH_BYTES))) handle(record);
      }
      if (firstLoad?.flushDue) await firstLoad.flush();
      if (pending.length >= REJECT_BATCH || pendingChars >= REJECT_BATCH_CHARS) {
        await options.writeRejects(pending);
        pending = [];
        pendingChars = 0;
      }
      if (out.length + (writer?.length ?? 0) >= YIELD_AT) {
        if (writer !== undefined && writer.length > 0) yield writer.take();
        if (out.length > 0) yield out;
        out = '';
        options.onProgress?.(tally);
      }
    }
    tally.envelope = parser.end();
    await firstLoad?.flush();
  } catch (error) {
    if (error instanceof AttemptAbandoned) {
      tally.abandoned = true;
      pending = []; // void with the attempt: not written
      return;
    }
    if (error instanceof ListingSyntaxError) {
      throw new InvalidListingError(
        `listing is not valid JSON (${tally.bytes} bytes read): ${error.message}; nothing was loaded`,
        { cause: error },
      );
    }
    throw error;
  } finally {
    // Rejects found so far are kept for diagnosis even when the listing as a whole fails.
    if (pending.length > 0) await options.writeRejects(pending);
  }
  if (writer !== undefined && writer.length > 0) yield writer.take();
  if (out.length > 0) yield out;
  options.onProgress?.(tally);
}

const CUT_RAW: ExtraFields = {
  ok: false,
  errors: [
    {
      path: '',
      message: 'record too large (over 65536 characters) to keep its fields that are not in the catalogue exactly',
    },
  ],
};

/** A zod-path record's extra_fields, read from its raw text (which must be whole). */
function keptExtras(record: ParsedRecord): ExtraFields {
  return record.rawCut ? CUT_RAW : extraFieldsOf(record.raw, isKnownField);
}
