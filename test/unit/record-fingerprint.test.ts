import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ListingParser, type RecordBytesHook } from '../../src/extract/json/listing-parser.js';
import { locateRecord } from '../../src/extract/json/record-locate.js';
import { MemberReader } from '../../src/extract/json/record-members.js';
import { KNOWN_FIELDS } from '../../src/fields.js';
import { fingerprint } from '../../src/fingerprints/fingerprint.js';

function hash(bytes: Buffer, start = 0, end = bytes.length, seed = 0x5eed1e55): string {
  const out = new Int32Array(2);
  fingerprint(bytes, start, end, out, seed);
  return `${out[0]}:${out[1]}`;
}

describe('record fingerprint', () => {
  it('depends on every byte and on the length, not on where the bytes sit', () => {
    const text = Buffer.from(
      '{"id":12,"wpi":"W-12","inventory_sales":0.1234567890123456789,"first_sale":"2021-03-04"}',
    );
    const seen = new Set<string>();
    for (let n = 0; n <= text.length; n++) seen.add(hash(text, 0, n));
    expect(seen.size).toBe(text.length + 1);
    const base = hash(text);
    for (let i = 0; i < text.length; i++) {
      for (const flip of [1, 0x20, 0x80]) {
        const changed = Buffer.from(text);
        changed[i]! ^= flip;
        expect(hash(changed), `byte ${i} ^ ${flip}`).not.toBe(base);
      }
    }
    const padded = Buffer.concat([Buffer.from('xyz'), text, Buffer.from('abc')]);
    expect(hash(padded, 3, 3 + text.length)).toBe(base);
  });

  it('gives the values of the byte-at-a-time implementation, at any length, offset and alignment', () => {
    // Stored fingerprints stay valid only while the function does not change: these were computed
    // by the first implementation (four byte loads a word). Buffer.from takes its bytes from a
    // shared pool, so the record does not start at its ArrayBuffer's start either.
    const text = Buffer.from(
      'xyz{"id":12,"wpi":"W-12","inventory_sales":0.1234567890123456789,"first_sale":"2021-03-04","é":"日本"}',
    );
    expect([0, 1, 2, 3].map((n) => hash(text, 3, 3 + n))).toEqual([
      '-356499718:184518117',
      '-48938081:1168713496',
      '-833487399:936450227',
      '-61496829:1560292767',
    ]);
    expect([39, 40].map((n) => hash(text, 3, 3 + n))).toEqual(['-252269128:2086130895', '-496579723:1891520370']);
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((s) => hash(text, s, text.length, -1))).toEqual([
      '-1180657199:1667148983',
      '-1625455212:260032584',
      '-1319487734:524189114',
      '1498950058:1068533126',
      '-313942602:1740586251',
      '1697162430:-620523571',
      '-374322032:364706150',
      '439454999:551204277',
    ]);
    // Every length from 0 to 40 (each tail of 0-15 bytes after 0-2 blocks), folded.
    const out = new Int32Array(2);
    let folded = 0;
    for (let n = 0; n <= 40; n++) {
      fingerprint(text, 3, 3 + n, out, 0x5eed1e55);
      folded = (Math.imul(folded, 31) + out[0]!) ^ out[1]!;
    }
    expect(folded).toBe(-435465786);
  });

  it('depends on the seed, so a build with another trust key matches no stored fingerprint', () => {
    const text = Buffer.from('{"id":12,"wpi":"W-12"}');
    expect(hash(text, 0, text.length, 1)).not.toBe(hash(text, 0, text.length, 2));
    expect(hash(text, 0, text.length, 1)).toBe(hash(text, 0, text.length, 1));
  });
});

describe('MemberReader', () => {
  const reader = new MemberReader(KNOWN_FIELDS);
  const bit = (name: string) => 1 << (KNOWN_FIELDS as readonly string[]).indexOf(name);

  /** Member ends as the scanner records them, for a compact record. */
  function read(text: string): boolean {
    const b = Buffer.from(text, 'latin1');
    const ends = new Float64Array(256);
    let count = 0;
    let depth = 0;
    let inString = false;
    for (let i = 0; i < b.length; i++) {
      const c = b[i]!;
      if (inString) {
        if (c === 0x5c) i++;
        else if (c === 0x22) inString = false;
      } else if (c === 0x22) inString = true;
      else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (depth === 1 && text[i - 1] !== '{') ends[count++] = i;
        depth--;
      } else if (c === 0x2c && depth === 1) ends[count++] = i;
    }
    return reader.read(b, 0, b.length, ends, count);
  }

  it('reads presence, nulls, unknown keys and the id of a compact record', () => {
    expect(read('{"id":42,"wpi":"A","inventory_sales":null,"bond":1,"x":"y"}')).toBe(true);
    expect(reader.id).toBe(42);
    expect(reader.present).toBe(bit('id') | bit('wpi') | bit('inventory_sales'));
    expect(reader.nonNull).toBe(bit('id') | bit('wpi'));
    expect(reader.unknownCount).toBe(2);
    expect(read('{"id":"123456789012345","wpi":"A"}')).toBe(true);
    expect(reader.id).toBe(123456789012345);
  });

  it('declines anything unusual, which then takes the full path', () => {
    for (const text of [
      '{"id": 42,"wpi":"A"}',
      '{"id":42 ,"wpi":"A"}',
      '{ "id":42}',
      '{"id":42,"id":43}',
      '{"id":042}',
      '{"id":"042"}',
      '{"id":1234567890123456}',
      '{"id":-1}',
      '{"id":1.5}',
      '{"id":{"a":1}}',
      '{"i\\u0064":1,"id":2}',
      '{"wpi":"A"}',
      '{}',
    ]) {
      expect(read(text), text).toBe(false);
    }
  });
});

describe('MemberReader over records of changing shapes', () => {
  it('reads each record as if it were the first, whatever the keys of the one before', () => {
    // The reader tries the key found at each position in the last record first: a prefix of it,
    // a longer key starting with it, an escaped spelling or another order must not be taken for it.
    const fields = (reader: MemberReader, text: string) => {
      const ok = readWith(reader, text);
      if (!ok) return [ok];
      const at = KNOWN_FIELDS.map((_, k) =>
        (reader.present >> k) & 1 ? [reader.valueStart[k], reader.valueEnd[k]] : [],
      );
      return [
        ok,
        reader.present,
        reader.nonNull,
        reader.unknownCount,
        reader.id,
        at,
        Array.from(reader.unknown.subarray(0, 2 * reader.unknownCount)),
      ];
    };
    const shared = new MemberReader(KNOWN_FIELDS);
    const texts = [
      '{"id":1,"wpi":"A","first_sale":null}',
      '{"id":2,"wp":"A","first_sale":null}',
      '{"id":3,"wpix":"A","first_sale":"2020-01-01"}',
      '{"id":4,"wpi":"A","first_sale":null}',
      '{"id":5,"w\\u0070i":"A"}',
      '{"wpi":"B","id":6}',
      '{"idx":7,"id":7}',
      '{"id":8,"wpi":"A","wpi":"B"}',
      '{"id":9,"wpi":"A","inventory_sales":1,"first_sale":null}',
      '{"id":10,"wpi":"A","first_sale":null,"inventory_sales":1}',
      '{"id":11,"wpi\\"":"A"}',
      '{"id":12,"wpi":"é"}',
      '{"id":13,"w":2}',
      '{"id":14,"wpi":"A","inventory_sale":1}',
    ];
    // Each after a usual record too, whose keys are then the ones tried first.
    const usual = '{"id":1,"wpi":"A","inventory_sales":1,"first_sale":null}';
    for (let round = 0; round < 2; round++) {
      for (const text of texts.flatMap((t) => [usual, t])) {
        expect(fields(shared, text), text).toEqual(fields(new MemberReader(KNOWN_FIELDS), text));
      }
    }
  });
});

/** Member ends as the scanner records them (a compact record without brackets in strings), then MemberReader.read. */
function readWith(reader: MemberReader, text: string): boolean {
  const b = Buffer.from(text, 'utf8');
  const ends = new Float64Array(256);
  let count = 0;
  let inString = false;
  for (let i = 1; i < b.length; i++) {
    const c = b[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2c || c === 0x7d) ends[count++] = i;
  }
  return reader.read(b, 0, b.length, ends, count);
}

describe('ListingParser record hook', () => {
  it('sees every record whole, with its member ends, whatever the chunking, and can take it over', () => {
    const records = ['{"id":1,"a":"x,y"}', '{"id":2,"b":[1,{"c":2}]}', '42', '{"id":3,"é":"ü"}', '{ "id" : 4 }'];
    const doc = Buffer.from(`{"count":5,"bulk_wine_reconciliation":[${records.join(', ')}],"recordCount":5}`);
    for (let size = 1; size <= doc.length; size++) {
      const seen: string[] = [];
      const hook: RecordBytesHook = {
        record(bytes, start, end, ends, count, position) {
          const text = bytes!.toString('utf8', start, end);
          const at = Array.from(ends.subarray(0, count)).map((e) => `${e}${String.fromCharCode(bytes![start + e]!)}`);
          seen.push(`${position}:${text}:${at.join('/')}`);
          return position % 2 === 0;
        },
      };
      const parser = new ListingParser({ recordHook: hook });
      const out: number[] = [];
      for (let i = 0; i < doc.length; i += size)
        for (const r of parser.push(doc.subarray(i, i + size))) out.push(r.position);
      parser.end();
      expect(out, `chunk ${size}`).toEqual([1, 3]);
      expect(seen, `chunk ${size}`).toEqual([
        '0:{"id":1,"a":"x,y"}:7,/17}',
        '1:{"id":2,"b":[1,{"c":2}]}:7,/23}',
        '2:42:',
        '3:{"id":3,"é":"ü"}:7,/17}',
        '4:{ "id" : 4 }:11}',
      ]);
    }
  });
});

describe('locateRecord', () => {
  it('finds the record a number of records after a known start', async () => {
    const records = ['{"id":1,"s":"a,]}\\"b"}', '7', '"x, y"', '[1,[2]]', '{"id":5}', 'null'];
    const prefix = '{"bulk_wine_reconciliation":[';
    const doc = `${prefix}${records.join(' ,\n ')}]}`;
    const path = join(mkdtempSync(join(tmpdir(), 'locate-')), 'listing.json');
    writeFileSync(path, doc);
    for (let skip = 0; skip < records.length; skip++) {
      const found = await locateRecord(path, prefix.length, skip, 1000);
      expect(found.bytes.toString()).toBe(records[skip]);
      expect(doc.slice(found.byteOffset, found.byteOffset + found.byteLength)).toBe(records[skip]);
    }
  });
});
