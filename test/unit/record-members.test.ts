/**
 * The member reader with and without its key guide (listing-types.ts KeyGuide): the fast lane
 * tries each key the reader expects before scanning it, and the reader then takes the key the
 * lane found. Whatever the records, the reader must read exactly what it reads without the guide.
 */
import { describe, expect, it } from 'vitest';
import { ListingParser, type RecordBytesHook } from '../../src/extract/json/listing-parser.js';
import { MemberReader } from '../../src/extract/json/record-members.js';
import { KNOWN_FIELDS } from '../../src/fields.js';
import { pickWith, xorshift } from '../support/random.js';

/** What one read found, as plain data. */
function readOf(reader: MemberReader, catalogue: readonly string[], ok: boolean, plain: boolean): unknown {
  if (!ok) return { ok, plain };
  const known = catalogue.flatMap((name, k) =>
    (reader.present & (1 << k)) !== 0 ? [[name, reader.valueStart[k], reader.valueEnd[k]]] : [],
  );
  const unknown = Array.from({ length: reader.unknownCount }, (_, u) => [
    reader.unknownNames[u],
    ...reader.unknown.subarray(4 * u, 4 * u + 4),
  ]);
  return { ok, plain, id: reader.id, present: reader.present, nonNull: reader.nonNull, known, unknown };
}

/** Every record's read, by a reader given to the lane as its guide or not, the document pushed in chunks of `size`. */
function reads(doc: Buffer, catalogue: readonly string[], guided: boolean, size: number): unknown[] {
  const reader = new MemberReader(catalogue);
  const out: unknown[] = [];
  const hook: RecordBytesHook = {
    ...(guided ? { keys: reader } : {}),
    record(bytes, start, end, ends, count, _position, _offset, plain) {
      const ok = bytes !== undefined && reader.read(bytes, start, end, ends, count, plain);
      out.push(readOf(reader, catalogue, ok, plain));
      return false;
    },
  };
  const parser = new ListingParser({ recordHook: hook });
  for (let i = 0; i < doc.length; i += size) parser.push(doc.subarray(i, i + size));
  parser.end();
  return out;
}

describe('MemberReader guided by the fast lane', () => {
  // The catalogue's, and keys whose last letter falls in the last, partial word of `key":` (abcde, wxyz1).
  const CATALOGUES: Array<[string, readonly string[], readonly string[]]> = [
    [
      'the catalogue',
      KNOWN_FIELDS,
      ['i', 'idd', 'wp', 'wpix', 'wpj', 'inventory_sale', 'inventory_sales_', 'first_sald', 'lot_code', 'x'],
    ],
    [
      'keys ending in a partial word',
      ['id', 'abcde', 'abcdf', 'wxyz1', 'k'],
      ['abcdX', 'abcd', 'abcdef', 'abcdE', 'wxyz2', 'wxyz', 'kk', 'x'],
    ],
  ];
  it.each(CATALOGUES)(
    'reads exactly what it reads unguided, on random records with repeating shapes and near-miss keys: %s',
    (_name, catalogue, nearMisses) => {
      const rand = xorshift(0x9e3779b9);
      const pick = pickWith(rand);
      // Known keys, keys one byte off them (longer, shorter, another last byte), unknown ones, and keys the lane cannot
      // take.
      const KEYS = [...catalogue, ...nearMisses];
      const ODD_KEYS = ['é', 'k\\"q'];
      const VALUES = [
        '1',
        '42',
        '"17"',
        '0.5',
        '-3.25e-2',
        '"2021-03-04"',
        '"0000-00-00"',
        'null',
        '""',
        'true',
        '"text"',
      ];
      const ODD = ['[1]', '{"a":1}', 'NaN', '-Infinity', '"tab\\there"'];
      const value = () => (rand() < 0.95 ? pick(VALUES) : pick(ODD));
      let lane = 0;
      for (let iter = 0; iter < 200; iter++) {
        let shape: string[] = [];
        const texts: string[] = [];
        for (let r = 0; r < 20; r++) {
          if (r === 0 || rand() < 0.15)
            shape = ['id', ...Array.from({ length: 1 + Math.floor(rand() * 8) }, () => pick(KEYS))];
          // Mostly the shape as it is; sometimes one key swapped for another, or a space before its colon.
          const keys = shape.map((k) => (rand() < 0.1 ? pick(rand() < 0.9 ? KEYS : ODD_KEYS) : k));
          const parts = keys.map((k, m) => {
            // In this order: the random numbers drawn are those of the seed's sequence.
            const space = rand() < 0.03 ? ' ' : '';
            const text = m === 0 && rand() < 0.9 ? String(1 + Math.floor(rand() * 1e6)) : value();
            return `"${k}"${space}:${text}`;
          });
          texts.push(`{${parts.join(',')}}`);
        }
        const doc = Buffer.from(`{"bulk_wine_reconciliation":[${texts.join(',')}]}`);
        // Whole, and in chunks (a record across two is not the lane's).
        for (const size of [doc.length, 1 + Math.floor(rand() * 200)]) {
          const unguided = reads(doc, catalogue, false, size);
          expect(reads(doc, catalogue, true, size)).toEqual(unguided);
          if (size === doc.length)
            lane += unguided.filter(
              (r) => (r as { ok: boolean; plain: boolean }).ok && (r as { plain: boolean }).plain,
            ).length;
        }
      }
      // Most records are read, and through the lane.
      expect(lane).toBeGreaterThan(1000);
    },
  );
});
