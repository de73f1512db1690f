/**
 * Micro-benchmark of a re-sync's parse with every record unchanged: the listing file read through
 * `listingCopyLines` with the record hook of a run (fast lane, member reader, fingerprints, the
 * unchanged-record shortcut over live rows of every id), no network and no database. A first pass
 * (not timed) fingerprints every record and finds its shape as a run would store them; each timed
 * pass then skips them all (most without reading them: shortcut.ts `known`). Prints the CPU of each pass: what the
 * parse costs a run's JavaScript thread, steadier than a whole sync on a busy two-core machine.
 *
 *   npx tsc -p . && node dist/bench/parse-resync.js /var/tmp/wrs-bench-data/listing-v3-1000000-base.json [passes=4]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileChunks, listingCopyLines, newTally, recordFastPaths } from '../src/run/pipeline.js';
import { LiveRowWriter } from '../src/fingerprints/live-writer.js';
import { ShapeBook } from '../src/fingerprints/shapes.js';
import { UnchangedShortcut } from '../src/fingerprints/shortcut.js';

const listing = process.argv[2];
const passes = Number(process.argv[3] ?? 4);
if (!listing) throw new Error('usage: node dist/bench/parse-resync.js LISTING.json [passes]');

/** One parse of the listing; `seen` hears each record's id, fingerprint and shape (the first pass). */
async function parse(
  shortcut: UnchangedShortcut,
  seen?: (id: number, hi: number, lo: number, shape: number) => void,
): Promise<number> {
  const tally = newTally();
  const fast = recordFastPaths(tally, shortcut, { extras: true });
  if (seen) {
    const record = fast.hook.record.bind(fast.hook);
    fast.hook.record = (bytes, start, end, ends, count, position, byteOffset, plain) => {
      const verdict = record(bytes, start, end, ends, count, position, byteOffset, plain);
      if (bytes !== undefined)
        seen(idOf(bytes, start), shortcut.fingerprint[0]!, shortcut.fingerprint[1]!, shortcut.fingerprint[2]!);
      return verdict;
    };
  }
  const lines = listingCopyLines({
    chunks: fileChunks(listing!),
    tally,
    writeRejects: async () => undefined,
    fast,
    extras: true,
  });
  for await (const _ of lines);
  return tally.received;
}

/** The id of a record that starts `{"id":` (the benchmark's listings); 0 otherwise. */
function idOf(bytes: Uint8Array, start: number): number {
  let id = 0;
  for (let i = start + 6; bytes[i]! >= 0x30 && bytes[i]! <= 0x39; i++) id = id * 10 + bytes[i]! - 0x30;
  return id;
}

const fingerprints = new Map<number, [number, number, number]>();
const first = UnchangedShortcut.empty();
await parse(first, (id, hi, lo, shape) => fingerprints.set(id, [hi, lo, shape]));
// The shapes as a run stores them and the next one reads them back.
const shapes = [...first.shapes.newShapes];
const dir = mkdtempSync(join(tmpdir(), 'parse-resync-'));
try {
  const writer = new LiveRowWriter(join(dir, 'live-rows'));
  for (const id of [...fingerprints.keys()].sort((a, b) => a - b)) writer.add(id, ...fingerprints.get(id)!);
  const rows = await writer.finish();
  for (let pass = 1; pass <= passes; pass++) {
    rows.clearMarks();
    const shortcut = UnchangedShortcut.over(
      { rows, bigIds: [], vouched: rows.rows, stale: 0, unknown: 0, orphans: 0, storedBy: undefined },
      undefined,
      new ShapeBook(shapes),
    );
    const cpu = process.cpuUsage();
    const started = performance.now();
    const received = await parse(shortcut);
    const used = process.cpuUsage(cpu);
    console.log(
      `pass ${pass}: ${((used.user + used.system) / 1000).toFixed(0)} ms CPU, ` +
        `${(performance.now() - started).toFixed(0)} ms wall, ${shortcut.skipped} of ${received} records skipped`,
    );
  }
  rows.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
