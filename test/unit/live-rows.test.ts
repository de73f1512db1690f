/**
 * The live rows on disk (src/fingerprints/live-file.ts) behave as the rows themselves, in any listing
 * order, whatever the cache holds: blocks of 4 rows and a cache of 2 blocks push rows out and read
 * them back all the time, and must give what one block holding everything gives.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/fingerprints/fingerprint.js';
import type { Geometry, LiveRowFile } from '../../src/fingerprints/live-file.js';
import { LiveRowWriter } from '../../src/fingerprints/live-writer.js';
import { UnchangedShortcut, type Settled } from '../../src/fingerprints/shortcut.js';

const TINY: Geometry = { blockRows: 4, cacheBlocks: 2 };
const ROOMY: Geometry = { blockRows: 4096, cacheBlocks: 4 };
const KEY = { key: 'test', seed: 0x1234567 };
/** Every case's files, under one directory removed at the end. */
const scratch = mkdtempSync(join(tmpdir(), 'live-rows-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** mulberry32: the same seed, the same case. */
function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

const open: LiveRowFile[] = [];
afterEach(() => {
  for (const file of open.splice(0)) file.close();
});

async function write(rows: Array<[id: number, hi: number, lo: number]>, geometry: Geometry): Promise<LiveRowFile> {
  const writer = new LiveRowWriter(join(mkdtempSync(join(scratch, 'case-')), 'live-rows'), geometry);
  for (const [id, hi, lo] of rows) writer.add(id, hi, lo);
  const file = await writer.finish();
  open.push(file);
  return file;
}

describe('live-row file', () => {
  it('finds every row and no other, keeps marks through evictions, and lists the unmarked ones', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = rng(seed);
      const ids: number[] = [];
      for (let id = 1 + Math.floor(random() * 5); ids.length < 37; id += 1 + Math.floor(random() * 3)) ids.push(id);
      const fp = new Map(ids.map((id) => [id, [(random() * 2 ** 32) | 0, (random() * 2 ** 32) | 0] as const]));
      const file = await write(
        ids.map((id) => [id, ...fp.get(id)!]),
        TINY,
      );
      expect(file.rows).toBe(37);
      const marks = new Map<number, number>();
      const probes = shuffle([...ids, ...ids.map((id) => id + 0.5), 0, ids.at(-1)! + 1, ...ids], random);
      if (seed % 2 === 0) probes.sort((a, b) => a - b); // in order too: the next-row and next-block paths
      for (const [k, probe] of probes.entries()) {
        const present = fp.has(probe);
        expect(file.find(probe), `seed ${seed} id ${probe}`).toBe(present);
        if (!present) continue;
        expect(file.id).toBe(probe);
        const [hi, lo] = fp.get(probe)!;
        expect(file.matches(hi, lo)).toBe(true);
        expect(file.matches(hi, lo ^ 1)).toBe(false);
        expect(file.mark).toBe(marks.get(probe) ?? 0);
        if (random() < 0.6) {
          file.mark = k + 1;
          marks.set(probe, k + 1);
        }
      }
      expect(file.unmarked()).toEqual(ids.filter((id) => !marks.has(id)));
      file.clearMarks();
      expect(file.unmarked()).toEqual(ids);
      for (const id of shuffle([...ids], random)) {
        expect(file.find(id)).toBe(true);
        expect(file.mark).toBe(0);
      }
    }
  });

  it('writes nothing when the table fits in the cache', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const writer = new LiveRowWriter(join(dir, 'live-rows'), { blockRows: 4, cacheBlocks: 3 });
    for (let id = 1; id <= 12; id++) writer.add(id, id, -id);
    const file = await writer.finish();
    open.push(file);
    expect(readdirSync(dir)).toEqual([]);
    for (const id of [12, 1, 7]) {
      expect(file.find(id)).toBe(true);
      expect(file.matches(id, -id)).toBe(true);
      file.mark = id;
    }
    expect(file.unmarked()).toEqual([2, 3, 4, 5, 6, 8, 9, 10, 11]);
  });

  it('fails with the error of a write that failed, in flight or at the end', async () => {
    const nowhere = join(tmpdir(), `live-rows-missing-${process.pid}`, 'live-rows');
    const writer = new LiveRowWriter(nowhere, TINY);
    // Blocks of 4 rows, 80 bytes: a MiB is queued after about 13,000 blocks.
    let failed: unknown;
    for (let id = 1; id <= 120_000 && failed === undefined; id++) {
      writer.add(id, 1, 1);
      await writer.drain()?.catch((error: unknown) => (failed = error));
    }
    expect(failed).toMatchObject({ code: 'ENOENT' });
    await expect(writer.finish()).rejects.toMatchObject({ code: 'ENOENT' });
    await writer.discard();
    const small = new LiveRowWriter(nowhere, TINY);
    for (let id = 1; id <= 40; id++) small.add(id, 1, 1);
    await expect(small.finish()).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('holds no row when the table has none', async () => {
    const file = await write([], TINY);
    expect([file.rows, file.find(1), file.unmarked()]).toEqual([0, false, []]);
  });
});

/** A record's bytes, and what the shortcut is told of it. */
interface Rec {
  id: number;
  bytes: Buffer;
}

function rec(id: number, value: string): Rec {
  return { id, bytes: Buffer.from(`{"id":${id},"wpi":"W${id}","inventory_sales":${value}}`) };
}

function fingerprintOf(r: Rec): [number, number] {
  const out = new Int32Array(2);
  fingerprint(r.bytes, 0, r.bytes.length, out, KEY.seed);
  return [out[0]!, out[1]!];
}

/**
 * Drives a shortcut as the parser's record hook does: decide, else stage; `resetAt` starts the
 * listing over once; `between` runs before each record (a read still under way goes on there).
 */
async function drive(
  shortcut: UnchangedShortcut,
  listing: Rec[],
  resetAt?: number,
  between?: () => void,
): Promise<{ skipped: number; settled: Settled }> {
  for (let pass = 0; pass < 2; pass++) {
    const end = pass === 0 && resetAt !== undefined ? resetAt : listing.length;
    for (let position = 0; position < end; position++) {
      between?.();
      const r = listing[position]!;
      if (!shortcut.decide(r.id, r.bytes, 0, r.bytes.length, position)) shortcut.stagedId(r.id, position);
    }
    if (end === listing.length) break;
    shortcut.reset();
  }
  return { skipped: shortcut.skipped, settled: await shortcut.settle() };
}

/**
 * 60 live rows and a listing that keeps most unchanged, changes some, drops some, adds new ids,
 * and repeats some ids (unchanged or changed copies), far apart once shuffled; in id order,
 * reversed or shuffled by `seed`.
 */
function randomCase(
  seed: number,
  random: () => number,
): { live: Rec[]; listing: Rec[]; rows: Array<[number, number, number]> } {
  const live = Array.from({ length: 60 }, (_, k) => rec(3 * k + 1, `${k}.5`));
  const listing: Rec[] = [];
  for (const r of live) {
    const roll = random();
    if (roll < 0.1) continue; // deleted
    listing.push(roll < 0.25 ? rec(r.id, `${r.id}.75`) : r);
    if (random() < 0.1) listing.push(random() < 0.5 ? r : rec(r.id, '9.99'));
  }
  for (let k = 0; k < 8; k++) listing.push(rec(3 * 60 + 2 * k, '1'));
  if (seed % 3 === 1) listing.reverse();
  if (seed % 3 === 2) shuffle(listing, random);
  return { live, listing, rows: live.map((r) => [r.id, ...fingerprintOf(r)]) };
}

describe('unchanged-record shortcut over the live-row file', () => {
  it('skips, settles duplicates and finds deletions alike with a tiny cache and a roomy one, in any listing order', async () => {
    for (let seed = 1; seed <= 30; seed++) {
      const random = rng(1000 + seed);
      const { live, listing, rows } = randomCase(seed, random);
      const resetAt = seed % 4 === 0 ? Math.floor(listing.length / 2) : undefined;
      const results = [];
      for (const geometry of [TINY, ROOMY]) {
        const file = await write(rows, geometry);
        const shortcut = UnchangedShortcut.over(
          { rows: file, bigIds: [], vouched: 60, stale: 0, unknown: 0, orphans: 0, storedBy: undefined },
          KEY,
        );
        results.push(await drive(shortcut, listing, resetAt));
      }
      expect(results[0], `seed ${seed}`).toEqual(results[1]);
      // And what they agree on is right: every unchanged id skipped once, the rest deleted.
      const listed = new Set(listing.map((r) => r.id));
      expect(results[0]!.settled.missing.map(Number)).toEqual(live.map((r) => r.id).filter((id) => !listed.has(id)));
      const losers = results[0]!.settled.stagedLosers.length + results[0]!.settled.skippedLosers.length;
      expect(losers, `seed ${seed}`).toBe(listing.filter((r) => r.id < 180).length - listed.size + 8);
    }
  });

  it('settles alike while the rows are still being read: a record the read has not reached is handed on, never skipped, and its mark waits', async () => {
    for (let seed = 1; seed <= 30; seed++) {
      const random = rng(2000 + seed);
      const { listing, rows } = randomCase(seed, random);
      const resetAt = seed % 4 === 0 ? Math.floor(listing.length / 2) : undefined;
      const counts = { bigIds: [], vouched: 60, stale: 0, unknown: 0, orphans: 0, storedBy: undefined };
      const whole = await drive(
        UnchangedShortcut.over({ rows: await write(rows, TINY), ...counts }, KEY),
        listing,
        resetAt,
      );
      // The same listing while the rows come in a few at a time: blocks of 4, the first 8 findable
      // as they fill, the rest only once the read is over.
      const writer = new LiveRowWriter(join(mkdtempSync(join(scratch, 'case-')), 'live-rows'), {
        blockRows: 4,
        cacheBlocks: 8,
      });
      let finish!: (value: typeof counts) => void;
      const shortcut = UnchangedShortcut.over(
        { rows: writer.file, done: new Promise((resolve) => (finish = resolve)) },
        KEY,
      );
      let next = 0;
      const following = drive(shortcut, listing, resetAt, () => {
        for (let n = Math.floor(random() * 4); n > 0 && next < rows.length; n--) writer.add(...rows[next++]!);
      });
      while (next < rows.length) writer.add(...rows[next++]!);
      open.push(await writer.finish());
      finish(counts);
      const streamed = await following;
      expect(streamed.settled.missing, `seed ${seed}`).toEqual(whole.settled.missing);
      const losers = (r: typeof whole) =>
        [...r.settled.stagedLosers, ...r.settled.skippedLosers.map((l) => l.position)].sort((a, b) => a - b);
      expect(losers(streamed), `seed ${seed}`).toEqual(losers(whole));
      expect(streamed.skipped).toBeLessThanOrEqual(whole.skipped);
    }
  });

  it("paces the parse behind the read, and passes on the read's failure", async () => {
    const writer = new LiveRowWriter(join(mkdtempSync(join(scratch, 'case-')), 'live-rows'), {
      blockRows: 1024,
      cacheBlocks: 16,
    });
    const shortcut = UnchangedShortcut.over({ rows: writer.file, done: new Promise(() => undefined) }, KEY);
    const r = rec(1, '1.5');
    // Nothing read yet: the parse waits, and goes on once 4096 rows past the last one found (none) are in.
    const waiting = shortcut.pace();
    expect(waiting).toBeInstanceOf(Promise);
    let woke = false;
    void waiting!.then(() => (woke = true));
    for (let id = 1; id <= 4095; id++) writer.add(id, 1, 1);
    await Promise.resolve();
    expect(woke).toBe(false); // three full blocks findable, the fourth still filling
    for (let id = 4096; id <= 5120; id++) writer.add(id, 1, 1);
    await waiting;
    expect(shortcut.decide(r.id, r.bytes, 0, r.bytes.length, 0)).toBe(false); // its fingerprint is not 1/1
    expect(shortcut.pace()).toBeUndefined();
    // A record far ahead of the read makes the parse wait until the read has passed it.
    const far = rec(9000, '1');
    expect(shortcut.decide(far.id, far.bytes, 0, far.bytes.length, 1)).toBe(false);
    const behind = shortcut.pace();
    expect(behind).toBeInstanceOf(Promise);
    const failure = new Error('connection lost');
    await writer.discard(failure);
    await expect(behind).rejects.toBe(failure);
  });
});
