/**
 * The streaming middle of a run: spooled listing bytes -> lossless parser -> record checks ->
 * COPY text for the staging table, with rejects set aside and the archive compressed on the way.
 * Memory is bounded by one chunk of records, whatever the size of the listing.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { InvalidListingError } from './errors.js';
import { ListingParser, ListingSyntaxError, type ListingEnvelope, type ParsedRecord } from './extract/listing-parser.js';
import type { Reject } from './load/audit.js';
import type { PayloadSpool } from './load/payloads.js';
import { copyLine } from './load/staging.js';
import { transformRecord } from './transform/record.js';

const READ_CHUNK = 1024 * 1024;
const YIELD_AT = 512 * 1024;
const REJECT_BATCH = 1000;
/** Rejects stored per run; beyond this they are counted, not stored (a wholly broken listing). */
export const MAX_STORED_REJECTS = 10_000;

export interface ListingTally {
  received: number;
  rejected: number;
  bytes: number;
  sha256: string | undefined;
  unknownFields: Set<string>;
  /** Count of each reject reason, for the run summary. */
  reasons: Map<string, number>;
  envelope: ListingEnvelope | undefined;
}

export function newTally(): ListingTally {
  return { received: 0, rejected: 0, bytes: 0, sha256: undefined, unknownFields: new Set(), reasons: new Map(), envelope: undefined };
}

export interface ListingLinesOptions {
  path: string;
  tally: ListingTally;
  spool: PayloadSpool | undefined;
  writeRejects: (rejects: Reject[]) => Promise<void>;
  onProgress?: (tally: ListingTally) => void;
  signal?: AbortSignal;
}

/** Yields COPY text for every valid record; fills `tally` as it goes and at the end. */
export async function* listingCopyLines(options: ListingLinesOptions): AsyncGenerator<string> {
  const { tally, spool } = options;
  const parser = new ListingParser();
  const hash = createHash('sha256');
  let stored = 0;
  let pending: Reject[] = [];
  let out = '';

  const reject = (reject: Reject) => {
    tally.rejected++;
    for (const e of reject.errors) {
      const reason = e.path ? `${e.path}: ${e.message.replace(/".*$/, '').trim()}` : e.message;
      tally.reasons.set(reason, (tally.reasons.get(reason) ?? 0) + 1);
    }
    if (stored < MAX_STORED_REJECTS) {
      stored++;
      pending.push(reject);
    }
  };
  const handle = (record: ParsedRecord) => {
    tally.received++;
    if (record.problem !== undefined) {
      reject({ position: record.position, recordId: null, errors: [{ path: '', message: record.problem }], raw: record.raw });
      return;
    }
    const result = transformRecord(record.value);
    for (const name of result.unknownFields) tally.unknownFields.add(name);
    if (result.ok) out += copyLine(record.position, result.row, record.byteOffset, record.byteLength);
    else reject({ position: record.position, recordId: result.recordId, errors: result.errors, raw: record.raw });
  };

  const stream = createReadStream(options.path, { highWaterMark: READ_CHUNK, signal: options.signal });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      tally.bytes += chunk.length;
      if (spool) await spool.write(chunk);
      for (const record of parser.push(chunk)) handle(record);
      if (pending.length >= REJECT_BATCH) {
        await options.writeRejects(pending);
        pending = [];
      }
      if (out.length >= YIELD_AT) {
        yield out;
        out = '';
        options.onProgress?.(tally);
      }
    }
    tally.envelope = parser.end();
  } catch (error) {
    if (error instanceof ListingSyntaxError) {
      throw new InvalidListingError(`listing is not valid JSON (${tally.bytes} bytes read): ${error.message}; nothing was loaded`, { cause: error });
    }
    throw error;
  } finally {
    // Rejects found so far are kept for diagnosis even when the listing as a whole fails.
    if (pending.length > 0) await options.writeRejects(pending);
  }
  tally.sha256 = hash.digest('hex');
  if (out.length > 0) yield out;
  options.onProgress?.(tally);
}
