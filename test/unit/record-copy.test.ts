/**
 * Differential test of the byte-level fast path (transform/record-copy.ts) against the zod path
 * (transform/record.ts): the same listing goes through the pipeline with and without the fast
 * path, and must give the same COPY rows, the same rejects with the same reasons, the same counts
 * and unknown fields. The records cover every rule of README "What a record must look like"; fuzzed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ListingParser } from '../../src/extract/json/listing-parser.js';
import { MemberReader } from '../../src/extract/json/record-members.js';
import type { Reject } from '../../src/load/audit.js';
import { rowLine } from '../../src/transform/copy-line.js';
import { fileChunks, listingCopyLines, newTally, recordFastPaths } from '../../src/run/pipeline.js';
import { transformRecord } from '../../src/transform/record.js';
import { CopyWriter } from '../../src/transform/record-copy.js';
import { fingerprint } from '../../src/fingerprints/fingerprint.js';
import { UnchangedShortcut } from '../../src/fingerprints/shortcut.js';
import { KNOWN_FIELDS, type FieldCounts } from '../../src/fields.js';
import { shownName } from '../../src/transform/field-name.js';

const IDS = [
  '1',
  '42',
  '"42"',
  '"007"',
  '0',
  '-1',
  '1.5',
  '1e3',
  'null',
  'true',
  '"abc"',
  '" 7"',
  '123456789012345',
  '"123456789012345"',
  '1234567890123456',
  '9223372036854775807',
  '"9223372036854775807"',
  '9223372036854775808',
  '{"a":1}',
  '[1]',
];
const WPIS = [
  '"W1"',
  '"  W2  "',
  '""',
  '"   "',
  '12345',
  '-1.5e3',
  '0',
  'null',
  'true',
  'false',
  '{"a":1}',
  '[1]',
  '"a\\tb"',
  '"Château"',
  '"x\\\\y"',
  '"\\u0000x"',
  '"\\ud800"',
  'NaN',
  '-Infinity',
  '"~!@#$%^&*()"',
  '"tab\\u0009"',
];
const DECIMALS = [
  '0',
  '-0',
  '0.0',
  '-0.0',
  '1.5e-7',
  '-1.5e-7',
  '-0.5',
  '"-0.001"',
  '-0.000123',
  '-5e2',
  '"-12e-1"',
  '1E+3',
  '12.50',
  '-12.50',
  '"12.50"',
  '" 12.5 "',
  '"+5"',
  '"-0"',
  '""',
  '"  "',
  'null',
  'true',
  'false',
  '"abc"',
  '"NaN"',
  'NaN',
  'Infinity',
  '-Infinity',
  '"Infinity"',
  '"1e"',
  '"1e+"',
  '".5"',
  '"5."',
  '"."',
  '"-.5e1"',
  '"007.250"',
  '1e-999',
  '1e-1000',
  '"1e999"',
  '"1e1000"',
  '1e0000000000000000005',
  '1e-0000000000000000005',
  '"1e12345678"',
  '"0e99999999999999999"',
  '99999999999999999999.99999999999999999999',
  '"１２"',
  '"\\u00a012"',
  '{"x":1}',
  '[1]',
  '"1_000"',
  '"1 000"',
  '"0x10"',
  '"1e5 "',
  '"\\t5"',
  `1${'0'.repeat(999)}`,
  `1${'0'.repeat(1000)}`,
  `0.${'0'.repeat(998)}1`,
  `0.${'0'.repeat(999)}1`,
  `"${'9'.repeat(1001)}"`,
  '1e999',
  '1e1000',
];
const DATES = [
  '"2021-03-04"',
  '"2021-02-29"',
  '"2020-02-29"',
  '"1900-02-29"',
  '"2000-02-29"',
  '"0000-00-00"',
  '"0000-00-00T00:00:00Z"',
  '"2021-03-04T00:00:00.000000Z"',
  '"2021-03-04 10:20"',
  '"2021-03-04T24:00"',
  '"2021-03-04T23:59:60"',
  '"2021-03-04T10:60"',
  '"2021-03-04T10:20:61"',
  '"2021-03-04T10:20:30+05:30"',
  '"2021-03-04T10:20:30+0530"',
  '"2021-03-04T10:20:30-24:00"',
  '"2021-03-04T10:20:30.Z"',
  '"2021-03-04T10:20Z"',
  '"2021-03-04T10"',
  '"2021-03-04T"',
  '"2021-13-01"',
  '"2021-04-31"',
  '"0001-01-01"',
  '"0000-01-01"',
  '"9999-12-31"',
  '"2021-3-4"',
  '""',
  'null',
  '20210304',
  'true',
  '" 2021-03-04"',
  '"2021-03-04Z"',
  '"2021-03-04\\n"',
  '"２０２１-03-04"',
  '{"d":1}',
];
const EXTRA_NAMES = ['bond_number', 'note', '__proto__', 'Id', 'wpi ', 'inventory_in_transit', 'cellar_note'];
/**
 * Values of unknown members: the sizes around the fast lane's number limits (1000 characters, a 4-digit exponent) among
 * them.
 */
const EXTRA_VALUES = [
  '1',
  '"x"',
  'null',
  '{"a":[1]}',
  '1.50e-3',
  '-2E+7',
  '1e99999',
  '1e-9999',
  '-1E+9999',
  '"a\\\\b\\"c"',
  '"\\u00e9"',
  '"\\u0041"',
  'true',
  '"2021-03-04"',
  `1${'0'.repeat(999)}`,
  `1${'0'.repeat(1000)}`,
  `-0.${'5'.repeat(997)}`,
  `-0.${'5'.repeat(998)}`,
  // Beyond numeric (and jsonb): a scale over 16383, by its exponent or by its digits.
  '1e-99999',
  '2E-16384',
  `0.${'1'.repeat(16384)}`,
];
const FIELDS = [
  'inventory_bulk_wine',
  'inventory_finished_goods',
  'inventory_sales',
  'vintage_forecast',
  'vintage_make',
];

let seed = 12345;
function rand(n: number): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) % n;
}
const pick = <T>(list: readonly T[]): T => list[rand(list.length)]!;

function digits(n: number): string {
  let s = '';
  while (s.length < n) s += String(rand(1e9)).padStart(9, '0');
  return s.slice(0, n);
}

/** A realistic decimal most of the time, an edge case otherwise. */
function decimal(): string {
  const r = rand(10);
  if (r < 4) return `${rand(100000)}.${digits(18 + rand(11))}`;
  if (r < 6) return `"${rand(1000)}.${digits(20)}"`;
  if (r < 7) return `${pick(['', '-'])}${rand(10)}.${digits(3)}e${pick(['-', '', '+'])}${rand(12)}`;
  return pick(DECIMALS);
}

/** A random record: usually compact and valid-looking, with every kind of edge case mixed in. */
function record(i: number): string {
  const members: Array<[string, string]> = [];
  const usual = rand(3) > 0;
  if (rand(20) > 0) members.push(['id', usual ? String(i + 1) : pick(IDS)]);
  if (rand(20) > 0) members.push(['wpi', usual ? `"WPI-${rand(1e6)}"` : pick(WPIS)]);
  for (const f of FIELDS) if (rand(10) > 0) members.push([f, decimal()]);
  if (rand(10) > 0)
    members.push(['first_sale', usual && rand(2) === 0 ? '"2021-03-04T00:00:00.000000Z"' : pick(DATES)]);
  // Unknown members: none mostly, else one to three, next to each other or apart (after a shuffle).
  const unknown = rand(8) === 0 ? 1 + rand(3) : 0;
  for (let u = 0; u < unknown; u++) members.push([pick(EXTRA_NAMES), pick(EXTRA_VALUES)]);
  if (rand(30) === 0) members.push([pick(['id', 'wpi', 'vintage_make']), pick(['2', '"y"', 'null'])]); // a repeated key
  if (rand(6) === 0) members.sort(() => rand(3) - 1);
  const spaced = rand(15) === 0;
  const body = members.map(([k, v]) => (spaced ? `"${k}" : ${v}` : `"${k}":${v}`)).join(spaced ? ' , ' : ',');
  return spaced ? `{ ${body} }` : `{${body}}`;
}

/** Every edge value in the usual position of a record that is otherwise valid. */
function edgeRecords(): string[] {
  const base = (over: Record<string, string>) => {
    const fields: Record<string, string> = {
      id: '1',
      wpi: '"W"',
      inventory_bulk_wine: '1.5',
      first_sale: '"2021-03-04"',
      ...over,
    };
    return `{${Object.entries(fields)
      .filter(([, v]) => v !== '')
      .map(([k, v]) => `"${k}":${v}`)
      .join(',')}}`;
  };
  return [
    ...IDS.map((id) => base({ id })),
    ...WPIS.map((wpi) => base({ wpi })),
    ...DECIMALS.flatMap((d) => FIELDS.map((f) => base({ [f]: d }))),
    ...DATES.map((first_sale) => base({ first_sale })),
    base({ id: '' }),
    base({ wpi: '' }),
    base({ first_sale: '' }),
    base({ inventory_bulk_wine: '' }),
    base({ unknown_a: '1', unknown_b: '{"x":[1,2]}' }),
    // Numbers kept in extra_fields print at most 1000 digits: both paths take or refuse the same.
    ...[
      '1e999',
      '1e1000',
      '1e9999',
      '1e131000',
      '-1.5e-998',
      '1.5e-999',
      '0.5e-1000',
      '0e-1000',
      '0e-1001',
      '1.000e-997',
      '0.00012e1003',
      '1E+0999',
      '12e00998',
    ].map((n) => base({ unknown_n: n })),
    base({ unknown_n: `[1,{"x":1e1000}]` }),
    // Long names: kept exactly in extra_fields, counted by their shown name.
    base({ ['k'.repeat(3000)]: '1', ['k'.repeat(2999) + 'j']: '"x"' }),
    base({ ['é'.repeat(100)]: '1' }),
    base({ ['n'.repeat(3000)]: '1e1000' }),
    '{"id":9,"wpi":"A","x":1,"x":2,"y":null}', // a repeated unknown key counts once
    '{"id":10,"wpi":"A","vintage_make":"","first_sale":""}', // "" is present without a value
    '{"id":5,"wpi":"A"}',
    '{"id":5,"wpi":"B","vintage_make":1}', // a duplicate id: the SQL pass decides, the rows are the same
    '{}',
    '[1]',
    '7',
    'null',
  ];
}

interface Outcome {
  lines: string[];
  rejects: Array<Omit<Reject, 'raw'> & { raw: string }>;
  tally: {
    received: number;
    rejected: number;
    maybeDuplicates: boolean;
    fields: unknown;
    reasons: Array<{ reason: string; count: number }>;
  };
  fast: number;
}

async function run(path: string, fast: boolean): Promise<Outcome> {
  const tally = newTally();
  const rejects: Reject[] = [];
  let taken = 0;
  const fastPaths = fast ? recordFastPaths(tally, UnchangedShortcut.empty(), { extras: true }) : undefined;
  const chunks: string[] = [];
  for await (const chunk of listingCopyLines({
    chunks: fileChunks(path),
    tally,
    writeRejects: async (r) => void rejects.push(...r),
    fast: fastPaths,
    extras: true,
  })) {
    if (typeof chunk !== 'string') taken += chunk.toString().split('\n').length - 1;
    chunks.push(chunk.toString());
  }
  // The fingerprint and shape fields are the fast run's own business: compare the rows without them.
  const lines = chunks
    .join('')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\t').slice(0, -3).join('\t'))
    .sort();
  return {
    lines,
    rejects: rejects.sort((a, b) => Number(a.position) - Number(b.position)),
    tally: {
      received: tally.received,
      rejected: tally.rejected,
      maybeDuplicates: tally.maybeDuplicates,
      fields: {
        counts: tally.fields.toJSON(),
        kinds: tally.fields.unknownFields().sort((a, b) => a.name.localeCompare(b.name)),
      },
      reasons: tally.reasons.entries().sort((a, b) => (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0)),
    },
    fast: taken,
  };
}

/** The listing files written, under one directory removed at the end. */
const scratch = mkdtempSync(join(tmpdir(), 'record-copy-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function listingFile(records: string[]): string {
  const path = join(mkdtempSync(join(scratch, 'listing-')), 'listing.json');
  writeFileSync(
    path,
    `{"count":${records.length},"bulk_wine_reconciliation":[${records.join(',')}],"recordCount":${records.length}}`,
  );
  return path;
}

describe('fingerprints travel with their record', () => {
  it('so each staging line, fast path or zod path, carries the fingerprint of its own bytes, rejects in between', async () => {
    // Odd ids take the zod path (a non-ASCII wpi, which the fast path declines); every third is rejected.
    const records = Array.from({ length: 3000 }, (_, i) =>
      i % 3 === 2
        ? `{"id":${i + 1},"wpi":""}`
        : `{"id":${i + 1},"wpi":"${i % 2 === 1 ? 'Wé' : 'W'}${i}","inventory_bulk_wine":"1.5"}`,
    );
    const key = { key: 'test', seed: 77 };
    const tally = newTally();
    const fast = recordFastPaths(tally, UnchangedShortcut.empty(key), { extras: true });
    const chunks: string[] = [];
    for await (const chunk of listingCopyLines({
      chunks: fileChunks(listingFile(records)),
      tally,
      writeRejects: async () => undefined,
      fast,
      extras: true,
    }))
      chunks.push(chunk.toString());
    const lines = chunks.join('').split('\n').filter(Boolean);
    expect(tally.rejected).toBe(1000);
    expect(lines).toHaveLength(2000);
    const out = new Int32Array(2);
    let zodPath = 0;
    for (const line of lines) {
      const fields = line.split('\t');
      const position = Number(fields[0]);
      if (records[position]!.includes('é')) zodPath++;
      const bytes = Buffer.from(records[position]!);
      fingerprint(bytes, 0, bytes.length, out, key.seed);
      expect(fields.slice(-3, -1), `position ${position}`).toEqual([String(out[0]), String(out[1])]);
    }
    expect(zodPath).toBe(1000);
  });
});

describe('byte-level fast path vs the zod path', () => {
  it('gives identical rows, rejects, reasons and counts on every edge case of the README record rules', async () => {
    const records = edgeRecords();
    const path = listingFile(records);
    const slow = await run(path, false);
    const fast = await run(path, true);
    expect(fast).toEqual({ ...slow, fast: fast.fast });
    expect(slow.fast).toBe(0);
    // Both paths had work: the fast path took the usual forms, zod judged the rest.
    expect(fast.fast).toBeGreaterThan(records.length / 4);
    expect(slow.rejects.length).toBeGreaterThan(records.length / 4);
  });

  it('gives identical rows, rejects, reasons and counts on 20,000 fuzzed records', async () => {
    const records = Array.from({ length: 20_000 }, (_, i) => record(i));
    const path = listingFile(records);
    const slow = await run(path, false);
    const fast = await run(path, true);
    expect(fast).toEqual({ ...slow, fast: fast.fast });
    expect(fast.fast).toBeGreaterThan(slow.lines.length / 2);
    expect(slow.rejects.length).toBeGreaterThan(1000);
  }, 120_000);

  it('takes the usual realistic record (numeric strings, exponents, date-times, nulls)', () => {
    const text =
      '{"id":7,"wpi":"WPI-000007","inventory_bulk_wine":89255.3069989445285484236720,"inventory_finished_goods":"0.193e-4",' +
      '"inventory_sales":4.184e-6,"vintage_forecast":null,"vintage_make":-65983.02344427893628177595217,"first_sale":"2002-02-06T00:00:00.000000Z","bond":"x"}';
    const line = fastPathLine(text, new CopyWriter(true));
    expect(line).toBe(
      `0\t7\tWPI-000007\t89255.306998944528548423672\t0.0000193\t0.000004184\t\\N\t-65983.02344427893628177595217` +
        `\t2002-02-06\t{"bond":"x"}\t29\t${text.length}\t-5\t6\t9\n`,
    );
  });

  it('writes a first load line for the table (fields, then the shared columns) as the zod path does', () => {
    const texts = [
      '{"id":7,"wpi":"WPI-000007","inventory_bulk_wine":89255.3069989445285484236720,"inventory_sales":4.184e-6,"vintage_forecast":null,"first_sale":"2002-02-06T00:00:00.000000Z"}',
      '{"id":"8","wpi":12.5,"inventory_finished_goods":"-0","vintage_make":"","first_sale":"0000-00-00"}',
    ];
    const suffix = '\t2026-01-02T03:04:05.123456Z\t2026-01-02T03:04:05.123456Z\t42\n';
    const writer = new CopyWriter(true, Buffer.from(suffix));
    for (const text of texts) {
      const line = fastPathLine(text, writer);
      const doc = Buffer.from(`{"bulk_wine_reconciliation":[${text}]}`);
      // The zod path's value of the same record: numbers kept as their text.
      const [record] = new ListingParser().push(doc);
      const result = transformRecord(record!.value);
      if (!result.ok) throw new Error('expected a valid record');
      expect(line).toBe(rowLine(result.row, null, suffix));
      expect(line.split('\t')).toHaveLength(KNOWN_FIELDS.length + 4);
    }
  });
});

describe('unknown members on the fast path', () => {
  it('are counted per name with every kind of value seen, wherever they stand, and named up to the cap', async () => {
    const values = ['1', '"a"', '"2021-03-04"', 'true', 'null', '{"b":1}'];
    // "x" moves between the first and the second unknown place; "y" only ever holds numbers.
    const records = values.map((v, i) =>
      i % 2 === 0 ? `{"id":${i + 1},"wpi":"W","x":${v},"y":${i}}` : `{"id":${i + 1},"wpi":"W","y":${i},"x":${v}}`,
    );
    // Then 1,000 more names, one record each: the counter names at most 1,000 (MAX_EXTRA_FIELDS).
    for (let n = 0; n < 1000; n++) records.push(`{"id":${100 + n},"wpi":"W","f${n}":1}`);
    const tally = newTally();
    const fast = recordFastPaths(tally, UnchangedShortcut.empty(), { extras: true });
    let lines = 0;
    for await (const chunk of listingCopyLines({
      chunks: fileChunks(listingFile(records)),
      tally,
      writeRejects: async () => undefined,
      fast,
      extras: true,
    })) {
      lines += chunk.toString().split('\n').length - 1;
    }
    expect(lines).toBe(records.length);
    const fields = tally.fields.unknownFields();
    expect(fields.slice(0, 2)).toEqual([
      { name: 'x', records: 6, kinds: 1 | 2 | 4 | 8 | 16 },
      { name: 'y', records: 6, kinds: 1 },
    ]);
    expect(fields).toHaveLength(1000);
    expect(tally.fields.toJSON().unknown_truncated).toBe(true);
  });
});

describe('what extra_fields cannot hold', () => {
  it('a number that prints as more than 1000 digits rejects its record on either path, naming the field; a long name is kept exactly and shown shortened', async () => {
    const long = 'k'.repeat(3000);
    const bad = 'n'.repeat(3000);
    const records = [
      '{"id":1,"wpi":"W","n":1e999}',
      '{"id":2,"wpi":"W","n":1e1000}',
      '{"id":3,"wpi":"W","n":1e131000}',
      '{"id":4,"wpi":"W","n":1e-16383}',
      `{"id":5,"wpi":"W","${long}":1}`,
      `{"id":6,"wpi":"W","${bad}":1e1000}`,
      '{ "id": 7, "wpi": "W", "n": 0.5e-1000 }',
      '{"id":8,"wpi":"W","n":[1,{"x":1e-1001}]}',
      `{"id":9,"wpi":"W","${long}":2}`, // a long key again at the same place: read afresh, not remembered
    ];
    for (const fast of [true, false]) {
      const out = await run(listingFile(records), fast);
      expect(out.lines.map((l) => l.split('\t')[1])).toEqual(['1', '5', '9']);
      expect(out.lines[1]!.split('\t')[KNOWN_FIELDS.length + 1]).toBe(`{"${long}":1}`);
      expect(out.lines[2]!.split('\t')[KNOWN_FIELDS.length + 1]).toBe(`{"${long}":2}`);
      if (fast) expect(out.fast).toBe(3);
      expect(out.rejects.map((r) => [r.recordId, r.errors])).toEqual(
        [
          ['2', 'n'],
          ['3', 'n'],
          ['4', 'n'],
          ['6', shownName(bad)],
          ['7', 'n'],
          ['8', 'n'],
        ].map(([id, path]) => [
          id,
          [{ path, message: 'cannot be kept in extra_fields: a number that prints as more than 1000 digits' }],
        ]),
      );
      expect(Buffer.byteLength(shownName(bad))).toBeLessThanOrEqual(128);
      const counts = (out.tally.fields as { counts: FieldCounts }).counts.unknown;
      expect(Object.keys(counts).sort()).toEqual([shownName(bad), shownName(long), 'n'].sort());
      expect(counts[shownName(long)]).toBe(2);
    }
  });
});

/**
 * The COPY line the byte-level fast path writes for one record (its fingerprint -5/6), taking it over from the parser.
 */
function fastPathLine(text: string, writer: CopyWriter): string {
  const members = new MemberReader(KNOWN_FIELDS);
  let line = '';
  const parser = new ListingParser({
    recordHook: {
      record(bytes, start, end, ends, count, position, byteOffset) {
        expect(members.read(bytes!, start, end, ends, count)).toBe(true);
        expect(writer.write(bytes!, start, end, members, position, byteOffset, new Int32Array([-5, 6, 9]))).toBe(true);
        line = writer.take().toString();
        return true;
      },
    },
  });
  expect(parser.push(Buffer.from(`{"bulk_wine_reconciliation":[${text}]}`))).toEqual([]);
  return line;
}
