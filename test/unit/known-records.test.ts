/**
 * A re-sync skips a record whose bytes are the fingerprinted ones before reading it, and counts
 * its fields from the shape stored with the fingerprint (src/fingerprints/shapes.ts, shortcut.ts
 * `known`). Whatever the records hold (absent fields, nulls, unknown members of every kind, a '}'
 * inside a string, the id elsewhere than first, whitespace, escaped names), the run must count
 * exactly what reading every record counts: the same tally with the unread path on and off.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileChunks, listingCopyLines, newTally, recordFastPaths } from '../../src/run/pipeline.js';
import { LiveRowWriter } from '../../src/fingerprints/live-writer.js';
import { MAX_SHAPES, ShapeBook, type StoredShape } from '../../src/fingerprints/shapes.js';
import { UnchangedShortcut } from '../../src/fingerprints/shortcut.js';
import { pickWith, xorshift } from '../support/random.js';

const KEY = { key: 'test', seed: 0x2468ace };
const scratch = mkdtempSync(join(tmpdir(), 'known-records-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A random record of id `id`: mostly the usual compact form, now and then an odd one. */
function record(id: number, rand: () => number): string {
  const pick = pickWith(rand);
  const members: string[] = [];
  const maybe = (member: string) => rand() < 0.8 && members.push(member);
  members.push(`"wpi":${pick(['"WPI-1"', '"A}B"', '"x\\u00e9"', '"WPI-2"'])}`);
  maybe(`"inventory_bulk_wine":${pick(['12.5', 'null', '"7"', '1e3', '""'])}`);
  maybe(`"inventory_sales":${pick(['0', 'null', '-3.25'])}`);
  maybe(`"first_sale":${pick(['"2021-05-03"', 'null', '"0000-00-00"'])}`);
  if (rand() < 0.4) members.push(`"lot_code":${pick(['"L1"', '7', 'null', 'true', '"}"'])}`);
  if (rand() < 0.2) members.push(`"${pick(['cellar', 'tank_no', 'note'])}":${pick(['"a"', '1', 'null', 'false'])}`);
  if (rand() < 0.05) members.push(`"n\\u0061me":1`);
  const idMember = `"id":${id}`;
  if (rand() < 0.1) members.push(idMember);
  else members.unshift(idMember);
  const text = `{${members.join(',')}}`;
  return rand() < 0.05 ? text.replace(/,/g, ', ') : text;
}

function listing(records: string[], name: string): string {
  const path = join(scratch, name);
  writeFileSync(
    path,
    `{"count":${records.length},"bulk_wine_reconciliation":[${records.join(',')}],"recordCount":${records.length}}`,
  );
  return path;
}

/** One parse of `path` over `shortcut`; with `unread` off the hook cannot skip a record unread. */
async function parse(
  path: string,
  shortcut: UnchangedShortcut,
  extras: boolean,
  unread: boolean,
  seen?: (id: number, fp: Int32Array) => void,
) {
  const tally = newTally();
  const fast = recordFastPaths(tally, shortcut, { extras });
  let skippedUnread = 0;
  const known = fast.hook.known!.bind(fast.hook);
  if (!unread) delete (fast.hook as { known?: unknown }).known;
  else
    fast.hook.known = (b, start, end) => {
      const length = known(b, start, end);
      if (length > 0) skippedUnread++;
      return length;
    };
  if (seen) {
    const read = fast.hook.record.bind(fast.hook);
    fast.hook.record = (bytes, start, end, ends, count, position, byteOffset, plain) => {
      const verdict = read(bytes, start, end, ends, count, position, byteOffset, plain);
      // Written by the fast path (its fingerprint and shape), or handed to the zod path with its fingerprint (no
      // shape).
      if (bytes !== undefined && verdict !== false) {
        const id = Number(/"id":(\d+)/.exec(bytes.toString('latin1', start, end))![1]);
        seen(id, verdict === true ? shortcut.fingerprint : Int32Array.of(verdict[0], verdict[1], 0));
      }
      return verdict;
    };
  }
  for await (const _ of listingCopyLines({
    chunks: fileChunks(path),
    tally,
    writeRejects: async () => undefined,
    fast,
    extras,
  }));
  return {
    skippedUnread,
    tally: {
      received: tally.received,
      rejected: tally.rejected,
      skipped: shortcut.skipped,
      fields: tally.fields.toJSON(),
      unknown: tally.fields.unknownFields(),
    },
  };
}

/** A first parse as a first load makes it: every record's fingerprint and shape, as live rows and stored shapes. */
async function stored(
  path: string,
  extras: boolean,
): Promise<{ rows: Awaited<ReturnType<LiveRowWriter['finish']>>; shapes: StoredShape[] }> {
  const first = UnchangedShortcut.empty(KEY);
  const byId = new Map<number, [number, number, number]>();
  await parse(path, first, extras, false, (id, fp) => byId.set(id, [fp[0]!, fp[1]!, fp[2]!]));
  const writer = new LiveRowWriter(join(mkdtempSync(join(scratch, 'rows-')), 'live-rows'));
  for (const id of [...byId.keys()].sort((a, b) => a - b)) writer.add(id, ...byId.get(id)!);
  return { rows: await writer.finish(), shapes: [...first.shapes.newShapes] };
}

function over(rows: Awaited<ReturnType<LiveRowWriter['finish']>>, shapes: ShapeBook): UnchangedShortcut {
  rows.clearMarks();
  return UnchangedShortcut.over(
    { rows, bigIds: [], vouched: rows.rows, stale: 0, unknown: 0, orphans: 0, storedBy: undefined },
    KEY,
    shapes,
  );
}

describe('records skipped unread', () => {
  it.each([true, false])(
    'count exactly what reading them counts (extras kept: %s), on random records',
    async (extras) => {
      for (let seed = 1; seed <= 6; seed++) {
        const rand = xorshift(seed * 7919);
        const records = Array.from({ length: 3000 }, (_, i) => record(i + 1, rand));
        const path = listing(records, `listing-${extras}-${seed}.json`);
        const { rows, shapes } = await stored(path, extras);
        const unread = await parse(path, over(rows, new ShapeBook(shapes)), extras, true);
        const read = await parse(path, over(rows, new ShapeBook(shapes)), extras, false);
        rows.close();
        expect(unread.tally, `seed ${seed}`).toEqual(read.tally);
        expect(read.tally.received).toBe(3000);
        expect(read.tally.skipped).toBeGreaterThan(2000);
        // Most records are compact with their id first; the others are read.
        expect(unread.skippedUnread).toBeGreaterThan(1000);
        expect(unread.skippedUnread).toBeLessThan(read.tally.skipped);
      }
    },
  );

  it('are read when their shape is not stored, or not what its number digests', async () => {
    const rand = xorshift(99);
    const records = Array.from({ length: 500 }, (_, i) => record(i + 1, rand));
    const path = listing(records, 'no-shapes.json');
    const { rows, shapes } = await stored(path, true);
    const read = await parse(path, over(rows, new ShapeBook(shapes)), true, false);
    const none = await parse(path, over(rows, new ShapeBook()), true, true);
    // A description edited behind the run's back no longer digests to its number: ignored.
    const tampered = shapes.map((s) => ({ shape: s.shape, description: s.description.replace(/^\[\d+/, '[0') }));
    const edited = await parse(path, over(rows, new ShapeBook(tampered)), true, true);
    rows.close();
    expect(none.skippedUnread).toBe(0);
    expect(edited.skippedUnread).toBe(0);
    expect(none.tally).toEqual(read.tally);
    expect(edited.tally).toEqual(read.tally);
  });
});

describe('shape numbers', () => {
  const members = (present: number, names: string[]) => ({
    present,
    nonNull: present,
    unknownCount: names.length,
    unknownNames: names,
  });

  it('are given to one description each, and to none past MAX_SHAPES', () => {
    const book = new ShapeBook();
    const kinds = new Int32Array(4);
    const numbers = new Set<number>();
    for (let present = 1; present <= MAX_SHAPES + 10; present++)
      numbers.add(book.numberOf(members(present, []), kinds, true));
    expect(book.newShapes).toHaveLength(MAX_SHAPES);
    expect(numbers.has(0)).toBe(true);
    expect(numbers.size).toBe(MAX_SHAPES + 1);
    // Read back, each number stands for its own description.
    const again = new ShapeBook(book.newShapes);
    for (const { shape } of book.newShapes) expect(again.has(shape)).toBe(true);
  });

  it('are not given to unknown names a stored description could not hold', () => {
    const book = new ShapeBook();
    const kinds = new Int32Array(40);
    expect(book.numberOf(members(1, ['x'.repeat(129)]), kinds, true)).toBe(0);
    expect(book.numberOf(members(1, ['caf\u00e9']), kinds, true)).toBe(0);
    expect(book.numberOf(members(1, ['a']), kinds, false)).toBe(0);
    expect(
      book.numberOf(
        members(
          1,
          Array.from({ length: 33 }, (_, u) => `f${u}`),
        ),
        kinds,
        true,
      ),
    ).toBe(0);
    expect(book.numberOf(members(1, ['a']), kinds, true)).not.toBe(0);
  });
});
