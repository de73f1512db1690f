import { describe, it, expect } from 'vitest';
import {
  ARRAY_AT_TOP_MESSAGE,
  ListingParser,
  ListingSyntaxError,
  type ListingEnvelope,
  type ListingParserOptions,
  type ParsedRecord,
} from '../../src/extract/json/listing-parser.js';
import { pickWith, xorshift } from '../support/random.js';

interface Parsed {
  records: ParsedRecord[];
  envelope: ListingEnvelope;
}

/** Feeds `doc` in chunks of `size` bytes (the whole document when omitted). */
function parse(doc: string | Buffer, size?: number, options?: ListingParserOptions): Parsed {
  const buf = typeof doc === 'string' ? Buffer.from(doc, 'utf8') : doc;
  const step = size ?? Math.max(1, buf.length);
  const parser = new ListingParser(options);
  const records: ParsedRecord[] = [];
  for (let i = 0; i < buf.length; i += step) {
    for (const r of parser.push(buf.subarray(i, i + step))) records.push(r);
  }
  return { records, envelope: parser.end() };
}

/** Feeds `doc` cut at the given byte offsets. */
function parseSplit(doc: string, cuts: number[]): Parsed {
  const buf = Buffer.from(doc, 'utf8');
  const parser = new ListingParser();
  const records: ParsedRecord[] = [];
  let at = 0;
  for (const cut of [...cuts, buf.length]) {
    records.push(...parser.push(buf.subarray(at, cut)));
    at = cut;
  }
  return { records, envelope: parser.end() };
}

/** The ListingSyntaxError thrown by push() or end() for `doc` fed in chunks of `size`. */
function syntaxError(doc: string | Buffer, size?: number): ListingSyntaxError {
  try {
    parse(doc, size);
  } catch (error) {
    expect(error).toBeInstanceOf(ListingSyntaxError);
    return error as ListingSyntaxError;
  }
  throw new Error('expected a ListingSyntaxError');
}

/** Where the error surfaces: 'push' or 'end'. */
function failsIn(doc: string): { where: 'push' | 'end'; error: ListingSyntaxError } {
  const parser = new ListingParser();
  try {
    parser.push(Buffer.from(doc, 'utf8'));
  } catch (error) {
    expect(error).toBeInstanceOf(ListingSyntaxError);
    return { where: 'push', error: error as ListingSyntaxError };
  }
  try {
    parser.end();
  } catch (error) {
    expect(error).toBeInstanceOf(ListingSyntaxError);
    return { where: 'end', error: error as ListingSyntaxError };
  }
  throw new Error('expected a ListingSyntaxError');
}

const wrap = (records: string) => `{"message":"ok","bulk_wine_reconciliation":[${records}],"recordCount":1}`;
const PREFIX = '{"message":"ok","bulk_wine_reconciliation":[';

const SAMPLE =
  '{ "message" : "ok", "count": 4,\n "bulk_wine_reconciliation" : [\n' +
  '  {"id":1,"wpi":"A","inventory_sales":0.1234567890123456789012345,"first_sale":"2021-03-04"},\n' +
  '  {"id": -0, "name": "Ch\\u00e2teau \\"Mäder\\" 日本 🍷 \\ud83c\\udf77", "qty": [1e5, -1.5E-7, 12.50, 0], "ok": true, "note": null, "x": NaN, "y": -Infinity, "z": Infinity},\n' +
  '  42 , "just a string", null, [ {"deep": {"deeper": [1.0]}} ]\n' +
  ' ],\n "recordCount": 6, "meta": {"pages": [1, 2.5], "more": false}\n}\n';

describe('ListingParser: chunking', () => {
  const whole = parse(SAMPLE);

  it('parses the sample into exact values', () => {
    const { records, envelope } = whole;
    expect(records.map((r) => r.position)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(records[0]!.value).toEqual({
      id: '1',
      wpi: 'A',
      inventory_sales: '0.1234567890123456789012345',
      first_sale: '2021-03-04',
    });
    expect(records[1]!.value).toEqual({
      id: '-0',
      name: 'Château "Mäder" 日本 🍷 🍷',
      qty: ['1e5', '-1.5E-7', '12.50', '0'],
      ok: true,
      note: null,
      x: 'NaN',
      y: '-Infinity',
      z: 'Infinity',
    });
    expect(records[2]!.value).toBe('42');
    expect(records[3]!.value).toBe('just a string');
    expect(records[4]!.value).toBe(null);
    expect(records[5]!.value).toEqual([{ deep: { deeper: ['1.0'] } }]);
    expect(records.every((r) => r.problem === undefined)).toBe(true);
    expect(envelope).toEqual({
      topLevelKeys: ['message', 'count', 'bulk_wine_reconciliation', 'recordCount', 'meta'],
      scalars: { message: 'ok', count: '4', recordCount: '6', meta: { pages: ['1', '2.5'], more: false } },
      recordsKey: 'bulk_wine_reconciliation',
      recordsType: 'array',
      recordCount: 6,
      bytes: Buffer.byteLength(SAMPLE),
    });
  });

  it('gives raw text and exact byte offsets/lengths (multi-byte characters included)', () => {
    const buf = Buffer.from(SAMPLE, 'utf8');
    for (const r of whole.records) {
      expect(buf.subarray(r.byteOffset, r.byteOffset + r.byteLength).toString('utf8')).toBe(r.raw);
      expect(Buffer.byteLength(r.raw)).toBe(r.byteLength);
    }
    const second = whole.records[1]!;
    expect(second.raw.startsWith('{"id": -0, "name": "Ch\\u00e2teau')).toBe(true);
    expect(second.raw.endsWith('"z": Infinity}')).toBe(true);
    expect(second.byteOffset).toBe(Buffer.byteLength(SAMPLE.slice(0, SAMPLE.indexOf('{"id": -0'))));
    expect(whole.records[2]!.raw).toBe('42');
    expect(whole.records[2]!.byteOffset).toBe(Buffer.byteLength(SAMPLE.slice(0, SAMPLE.indexOf('42 ,'))));
    expect(whole.records[2]!.byteLength).toBe(2);
    expect(whole.records[3]!.raw).toBe('"just a string"');
  });

  it.each([1, 2, 3, 7, 13, 64, 4093])('gives identical records and envelope with %i-byte chunks', (size) => {
    const chunked = parse(SAMPLE, size);
    expect(chunked.records).toEqual(whole.records);
    expect(chunked.envelope).toEqual(whole.envelope);
  });

  it('emits each record from the push that completes it', () => {
    const doc = wrap('{"a":1},{"b":2}');
    const buf = Buffer.from(doc);
    const parser = new ListingParser();
    const endOfFirst = doc.indexOf('}') + 1;
    expect(parser.push(buf.subarray(0, endOfFirst - 1))).toEqual([]);
    const first = parser.push(buf.subarray(endOfFirst - 1, endOfFirst));
    expect(first.map((r) => r.value)).toEqual([{ a: '1' }]);
    const rest = parser.push(buf.subarray(endOfFirst));
    expect(rest.map((r) => r.value)).toEqual([{ b: '2' }]);
    expect(parser.end().recordCount).toBe(2);
  });

  it('handles many records in one chunk across internal batch boundaries', () => {
    const recs: string[] = [];
    for (let i = 0; i < 5000; i++) recs.push(`{"id":${i},"v":0.${String(i).padStart(30, '7')},"s":"r${i} é"}`);
    const doc = wrap(recs.join(',\n'));
    const one = parse(doc);
    expect(one.records.length).toBe(5000);
    expect(one.records[4321]!.value).toEqual({ id: '4321', v: '0.' + '7'.repeat(26) + '4321', s: 'r4321 é' });
    expect(one.records[4999]!.position).toBe(4999);
    const chunked = parse(doc, 4093);
    expect(chunked.records).toEqual(one.records);
    expect(chunked.envelope).toEqual(one.envelope);
  });

  it('accepts Uint8Array chunks', () => {
    const parser = new ListingParser();
    const bytes = new Uint8Array(Buffer.from(wrap('{"a":2.50}')));
    expect(parser.push(bytes).map((r) => r.value)).toEqual([{ a: '2.50' }]);
    expect(parser.end().recordCount).toBe(1);
  });
});

describe('ListingParser: numbers are exact text', () => {
  it('keeps long decimals, exponents, negatives, -0 and huge integers verbatim', () => {
    const numbers = [
      '0.123456789012345678901234567890123',
      '98765432109876543210.000000000000000000001',
      '-1.5e-7',
      '1E+2',
      '2e400',
      '-0',
      '-0.0',
      '0',
      '12.50',
      '123456789012345678901234567890',
      '-9007199254740993',
    ];
    const doc = wrap(`{"n":[${numbers.join(',')}]}, ${numbers.join(' , ')}`);
    for (const size of [undefined, 1, 5]) {
      const { records } = parse(doc, size);
      expect(records[0]!.value).toEqual({ n: numbers });
      expect(records.slice(1).map((r) => r.value)).toEqual(numbers);
      expect(records.slice(1).map((r) => r.raw)).toEqual(numbers);
    }
  });

  it('keeps a number split across chunks intact', () => {
    const doc = wrap('{"amount":1234.5678901234567890123456789e-12}');
    const start = doc.indexOf('1234');
    const { records } = parseSplit(doc, [start + 2, start + 5, start + 6, start + 30, start + 40]);
    expect(records.length).toBe(1);
    expect(records[0]!.value).toEqual({ amount: '1234.5678901234567890123456789e-12' });
  });

  it('keeps a bare number element split at the end of a chunk', () => {
    const doc = wrap('17,0.25');
    const { records } = parseSplit(doc, [doc.indexOf('17') + 2, doc.indexOf('0.2') + 3]);
    expect(records.map((r) => [r.value, r.byteOffset, r.byteLength])).toEqual([
      ['17', PREFIX.length, 2],
      ['0.25', PREFIX.length + 3, 4],
    ]);
  });

  it('parses top-level numbers losslessly too', () => {
    const { envelope } = parse(
      '{"count": 0.30000000000000000000000000001, "bulk_wine_reconciliation": [], "n": -2E-5}',
    );
    expect(envelope.scalars).toEqual({ count: '0.30000000000000000000000000001', n: '-2E-5' });
    expect(envelope.recordCount).toBe(0);
  });
});

describe('ListingParser: strings', () => {
  it('decodes escapes, surrogate pairs and raw non-ASCII; offsets are byte offsets', () => {
    const doc = wrap('{"s":"q\\"b\\\\s\\/n\\n\\t\\u00e9\\uD83C\\uDF77"}, "é", "日本", "🍷", {"日本":"é"}');
    for (const size of [undefined, 1, 3]) {
      const { records } = parse(doc, size);
      const decoded = [{ s: 'q"b\\s/n\n\té🍷' }, 'é', '日本', '🍷', { 日本: 'é' }];
      expect(records.map((r) => r.value)).toEqual(decoded);
      expect(records.map((r) => r.raw)).toEqual([
        '{"s":"q\\"b\\\\s\\/n\\n\\t\\u00e9\\uD83C\\uDF77"}',
        '"é"',
        '"日本"',
        '"🍷"',
        '{"日本":"é"}',
      ]);
      expect(records.map((r) => r.byteLength)).toEqual(records.map((r) => Buffer.byteLength(r.raw)));
      expect(records.map((r) => r.byteLength)).toEqual([40, 4, 8, 6, 15]);
      let expected = PREFIX.length;
      for (const r of records) {
        expect(r.byteOffset).toBe(expected);
        expected += r.byteLength + 2; // ", "
      }
    }
  });

  it('keeps characters above U+00FF and lone escaped surrogates exact', () => {
    const text = 'Ω ж ‰ € \u2028 \uFFFF 𝄞';
    const doc = wrap(JSON.stringify({ t: text, lone: '\\ud800' }).replace('\\\\ud800', '\\ud800'));
    const { records } = parse(doc, 2);
    expect(records[0]!.value).toEqual({ t: text, lone: '\ud800' });
  });

  it('replaces invalid UTF-8 with U+FFFD instead of failing', () => {
    const doc = Buffer.concat([
      Buffer.from(PREFIX + '{"s":"a'),
      Buffer.from([0xff, 0xc3, 0x41, 0xe6, 0x97]),
      Buffer.from('"},"ok"],"recordCount":2}'),
    ]);
    for (const size of [undefined, 1]) {
      const { records, envelope } = parse(doc, size);
      expect(records.map((r) => r.value)).toEqual([{ s: 'a\uFFFD\uFFFDA\uFFFD' }, 'ok']);
      expect(records[0]!.raw).toBe('{"s":"a\uFFFD\uFFFDA\uFFFD"}');
      expect(records[0]!.byteLength).toBe(14);
      expect(envelope.recordCount).toBe(2);
    }
  });
});

describe('ListingParser: long tokens', () => {
  it('keeps strings, numbers and keys longer than the internal scanning window exact', () => {
    const digits = '1234567890'.repeat(30_000); // 300,000 digits
    const text = 'ab"\\é日'.repeat(40_000);
    const key = 'k'.repeat(200_000);
    const doc = wrap(`{"n":-${digits}.${digits}e-7,"s":${JSON.stringify(text)},${JSON.stringify(key)}:1}`);
    for (const size of [undefined, 65536, 100_003]) {
      const { records } = parse(doc, size, { maxRecordBytes: 4 << 20, maxRawChars: 10 });
      expect(records.length).toBe(1);
      expect(records[0]!.problem).toBeUndefined();
      const value = records[0]!.value as Record<string, string>;
      expect(value.n).toBe(`-${digits}.${digits}e-7`);
      expect(value.s).toBe(text);
      expect(value[key]).toBe('1');
      expect(records[0]!.raw).toBe('{"n":-1234');
      expect(records[0]!.byteLength).toBe(Buffer.byteLength(doc) - PREFIX.length - '],"recordCount":1}'.length);
    }
  });
});

describe('ListingParser: envelope', () => {
  it('finds the records whatever the key order', () => {
    const { records, envelope } = parse(
      '{"recordCount":2,"count":2,"bulk_wine_reconciliation":[{"id":1},{"id":2}],"message":"ok"}',
      5,
    );
    expect(records.map((r) => r.value)).toEqual([{ id: '1' }, { id: '2' }]);
    expect(envelope.topLevelKeys).toEqual(['recordCount', 'count', 'bulk_wine_reconciliation', 'message']);
    expect(envelope.scalars).toEqual({ recordCount: '2', count: '2', message: 'ok' });
    expect(envelope.recordCount).toBe(2);
  });

  it('reports a missing records key', () => {
    const { records, envelope } = parse('{"message":"no data","count":0}');
    expect(records).toEqual([]);
    expect(envelope.recordsType).toBe('missing');
    expect(envelope.recordCount).toBe(0);
    expect(envelope.scalars).toEqual({ message: 'no data', count: '0' });
  });

  it.each([
    ['null', 'null', null],
    ['{"a":1}', 'object', { a: '1' }],
    ['"none"', 'string', 'none'],
    ['5', 'number', '5'],
    ['false', 'boolean', false],
  ])('reports records key holding %s', (value, type, scalar) => {
    const { records, envelope } = parse(`{"message":"ok","bulk_wine_reconciliation":${value},"count":0}`);
    expect(records).toEqual([]);
    expect(envelope.recordsType).toBe(type);
    expect(envelope.recordCount).toBe(0);
    expect(envelope.scalars).toEqual({ message: 'ok', bulk_wine_reconciliation: scalar, count: '0' });
  });

  it('ignores a UTF-8 byte order mark at the very start only', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const doc = Buffer.concat([bom, Buffer.from('{"bulk_wine_reconciliation":[{"a":1}]}')]);
    for (const size of [undefined, 1]) {
      const { records, envelope } = parse(doc, size);
      expect(records.map((r) => [r.value, r.byteOffset])).toEqual([[{ a: '1' }, 32]]);
      expect(envelope.bytes).toBe(doc.length);
    }
    expect(syntaxError(Buffer.concat([Buffer.from(' '), doc])).byteOffset).toBe(1);
    expect(syntaxError(Buffer.concat([bom.subarray(0, 2), Buffer.from('{}')])).byteOffset).toBe(2);
  });

  it('handles an empty records array and an empty envelope', () => {
    expect(parse('{"bulk_wine_reconciliation":[ ]}').envelope).toEqual({
      topLevelKeys: ['bulk_wine_reconciliation'],
      scalars: {},
      recordsKey: 'bulk_wine_reconciliation',
      recordsType: 'array',
      recordCount: 0,
      bytes: 32,
    });
    expect(parse(' {} ').envelope.recordsType).toBe('missing');
  });

  it('matches the records key after unescaping, and refuses it twice', () => {
    const { records } = parse('{"bulk\\u005fwine_reconciliation":[1]}');
    expect(records.map((r) => r.value)).toEqual(['1']);
    const error = syntaxError('{"bulk_wine_reconciliation":[1],"bulk_wine_reconciliation":[2]}');
    expect(error.message).toContain('duplicate key bulk_wine_reconciliation');
    expect(error.byteOffset).toBe(32);
  });

  it('keeps a __proto__ key as plain data', () => {
    const { envelope } = parse('{"__proto__":{"polluted":1},"bulk_wine_reconciliation":[]}');
    expect(Object.keys(envelope.scalars)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(envelope.scalars, '__proto__')?.value).toEqual({ polluted: '1' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('replaces a top-level value over 64 KiB by "<too large>"', () => {
    const big = 'x'.repeat(70_000);
    const doc = `{"huge":"${big}","list":[${'1,'.repeat(40_000)}1],"small":"s","bulk_wine_reconciliation":[{"a":1}]}`;
    for (const size of [undefined, 4093]) {
      const { records, envelope } = parse(doc, size);
      expect(envelope.scalars).toEqual({ huge: '<too large>', list: '<too large>', small: 's' });
      expect(records.map((r) => r.value)).toEqual([{ a: '1' }]);
    }
  });

  it('bounds 100,000-deep nesting outside the records without crashing', () => {
    const depth = 100_000;
    const doc = `{"x":${'['.repeat(depth)}${']'.repeat(depth)},"bulk_wine_reconciliation":[{"a":1}]}`;
    const { records, envelope } = parse(doc);
    expect(envelope.scalars).toEqual({ x: '<too large>' });
    expect(records.map((r) => r.value)).toEqual([{ a: '1' }]);
  });

  it('fails at the first byte of a top-level array, with the specific message', () => {
    const parser = new ListingParser();
    let caught: unknown;
    try {
      parser.push(Buffer.from('  ['));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ListingSyntaxError);
    expect((caught as ListingSyntaxError).message).toBe(ARRAY_AT_TOP_MESSAGE);
    expect((caught as ListingSyntaxError).message).toBe('listing is a JSON array, not the expected envelope object');
    expect((caught as ListingSyntaxError).byteOffset).toBe(2);
  });

  it.each(['"text"', '42', 'null', 'true'])('refuses a top-level %s', (doc) => {
    const error = syntaxError(doc);
    expect(error.message).toMatch(/^expected '\{'/);
    expect(error.byteOffset).toBe(0);
  });
});

describe('ListingParser: syntax errors', () => {
  const full = wrap('{"id":1,"name":"a"},{"id":2}');

  it.each([
    ['in a string', full.indexOf('"a"') + 1],
    ['in a number', full.indexOf(':1,') + 2],
    ['after a comma', full.indexOf('},{') + 2],
    ['in the middle of a key', full.indexOf('"name"') + 3],
    ['before the final }', full.length - 1],
    ['after the records array', full.indexOf('],') + 1],
    ['right after the opening {', 1],
  ])('throws from end() for a document truncated %s', (_label, cut) => {
    const doc = full.slice(0, cut);
    const { where, error } = failsIn(doc);
    expect(where).toBe('end');
    expect(error.byteOffset).toBe(Buffer.byteLength(doc));
    expect(error.message).toContain(`unexpected end of document at byte ${Buffer.byteLength(doc)}`);
    expect(error.message).toContain('truncated');
  });

  it('names an unterminated string when cut inside one', () => {
    const doc = full.slice(0, full.indexOf('"a"') + 2);
    expect(failsIn(doc).error.message).toContain('unterminated string in record 0');
  });

  it('throws from end() for an empty document', () => {
    const { where, error } = failsIn('   ');
    expect(where).toBe('end');
    expect(error.message).toContain('document is empty');
  });

  it('throws from end() for trailing non-whitespace', () => {
    const doc = wrap('{"a":1}') + ' \n x';
    const parser = new ListingParser();
    expect(parser.push(Buffer.from(doc)).map((r) => r.value)).toEqual([{ a: '1' }]);
    let caught: unknown;
    try {
      parser.end();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ListingSyntaxError);
    expect((caught as ListingSyntaxError).byteOffset).toBe(doc.length - 1);
    expect((caught as ListingSyntaxError).message).toContain('after the end of the listing object');
  });

  it.each([
    ['tru', '{"a":tru}', 8, 'invalid literal'],
    ['nul', '[nul]', 4, 'invalid literal'],
    ['01', '{"a":01}', 6, 'leading zero'],
    ['1.', '{"a":1.}', 7, "expected a digit after '.'"],
    ['.5', '{"a":.5}', 5, 'expected a JSON value'],
    ['+1', '{"a":+1}', 5, 'expected a JSON value'],
    ['-', '{"a":-}', 6, "expected a digit after '-'"],
    ['1e', '{"a":1e}', 7, 'exponent'],
    ['1.5.2', '{"a":1.5.2}', 8, "unexpected '.'"],
    ['control character', '{"a":"x\u0001y"}', 7, 'unescaped control character'],
    ['raw newline', '{"a":"x\ny"}', 7, 'unescaped control character'],
    ['bad escape', '{"a":"x\\qy"}', 8, 'invalid escape'],
    ['bad \\u escape', '{"a":"\\u12G4"}', 10, 'hexadecimal digit'],
    ['single quotes', "{'a':1}", 1, 'expected a string key'],
    ['unquoted key', '{a:1}', 1, 'expected a string key'],
    ['missing colon', '{"a" 1}', 5, "expected ':'"],
    ['trailing comma in object', '{"a":1,}', 7, 'expected a string key'],
    ['trailing comma in array', '[1,]', 3, 'expected a JSON value'],
    ['missing comma', '{"a":1 "b":2}', 7, "expected ',' or '}'"],
    ['mismatched bracket', '{"a":[1}', 7, "expected ',' or ']'"],
    ['nan outside NaN spelling', '{"a":nan}', 6, 'invalid literal'],
    ['Infinity misspelt', '{"a":Infinty}', 10, 'invalid literal'],
  ])('throws with a byte offset for %s', (_label, element, at, text) => {
    const doc = wrap(element);
    for (const size of [undefined, 1]) {
      const { where, error } = size === undefined ? failsIn(doc) : { where: 'push', error: syntaxError(doc, size) };
      expect(where).toBe('push');
      expect(error.byteOffset).toBe(PREFIX.length + at);
      expect(error.message).toContain(text);
      expect(error.message).toContain(`at byte ${PREFIX.length + at}`);
      expect(error.excerpt.length).toBeLessThanOrEqual(60);
      expect(error.excerpt.length).toBeGreaterThan(0);
    }
  });

  it('puts the text around the error in the message', () => {
    const error = syntaxError(wrap('{"id":1,"wpi":01}'));
    expect(error.excerpt).toContain('"wpi":01');
    expect(error.message).toContain("found '1'");
  });

  it('refuses NaN and Infinity outside records', () => {
    expect(syntaxError('{"count":NaN,"bulk_wine_reconciliation":[]}').byteOffset).toBe(9);
    expect(syntaxError('{"count":-Infinity}').byteOffset).toBe(10);
  });

  it('refuses invalid separators in the envelope and the records array', () => {
    expect(syntaxError('{"a":1 "b":2}').byteOffset).toBe(7);
    expect(syntaxError('{"bulk_wine_reconciliation":[1 2]}').message).toContain("expected ',' or ']' after a record");
    expect(syntaxError('{"bulk_wine_reconciliation":[1,]}').byteOffset).toBe(31);
    expect(syntaxError('{"a" 1}').message).toContain("expected ':' after a top-level key");
    expect(syntaxError('{1:2}').message).toContain('expected a top-level key');
  });

  it('keeps failing after the first error', () => {
    const parser = new ListingParser();
    expect(() => parser.push(Buffer.from(wrap('{"a":01}')))).toThrow(ListingSyntaxError);
    expect(() => parser.push(Buffer.from(' '))).toThrow(ListingSyntaxError);
    expect(() => parser.end()).toThrow(ListingSyntaxError);
  });
});

describe('ListingParser: problem records', () => {
  it('turns NaN, Infinity and -Infinity inside records into strings', () => {
    const { records } = parse(wrap('{"a":NaN,"b":[Infinity,-Infinity]}, NaN'), 1);
    expect(records.map((r) => r.value)).toEqual([{ a: 'NaN', b: ['Infinity', '-Infinity'] }, 'NaN']);
    expect(records[0]!.raw).toBe('{"a":NaN,"b":[Infinity,-Infinity]}');
  });

  it('emits non-object elements as records', () => {
    const { records } = parse(wrap('1, "s", null, true, false, [1, 2], {"a":1}, []'));
    expect(records.map((r) => r.value)).toEqual(['1', 's', null, true, false, ['1', '2'], { a: '1' }, []]);
    expect(records.map((r) => r.raw)).toEqual(['1', '"s"', 'null', 'true', 'false', '[1, 2]', '{"a":1}', '[]']);
    expect(records.map((r) => r.position)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('sets a problem for 100,000-deep nesting inside a record, and goes on', () => {
    const depth = 100_000;
    const deep = `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const doc = wrap(`{"id":1},${deep},{"id":3}`);
    for (const size of [undefined, 65536]) {
      const { records, envelope } = parse(doc, size);
      expect(records.length).toBe(3);
      const bad = records[1]!;
      expect(bad.problem).toBe('nested deeper than 32 levels');
      expect(bad.value).toBeUndefined();
      expect(bad.byteLength).toBe(deep.length);
      expect(bad.byteOffset).toBe(PREFIX.length + 9);
      expect(bad.raw.length).toBe(65536);
      expect(bad.raw).toBe(deep.slice(0, 65536));
      expect(records[0]!.value).toEqual({ id: '1' });
      expect(records[2]!.value).toEqual({ id: '3' });
      expect(records[2]!.position).toBe(2);
      expect(envelope.recordCount).toBe(3);
    }
  });

  it('survives 1,000,000 nested arrays in a record', () => {
    const depth = 1_000_000;
    const doc = wrap(`${'['.repeat(depth)}${']'.repeat(depth)},{"ok":true}`);
    const { records } = parse(doc, 1 << 20);
    expect(records.map((r) => r.problem)).toEqual([
      'record larger than 1048576 bytes; nested deeper than 32 levels',
      undefined,
    ]);
    expect(records[1]!.value).toEqual({ ok: true });
  });

  it('accepts exactly maxDepth levels and refuses one more', () => {
    const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const { records } = parse(wrap(`${nest(4)},${nest(5)}`), undefined, { maxDepth: 4 });
    expect(records[0]!.value).toEqual([[[[]]]]);
    expect(records[1]!.problem).toBe('nested deeper than 4 levels');
    expect(records[1]!.raw).toBe(nest(5));
  });

  it('sets a problem for a record over 1 MiB, with truncated raw', () => {
    const big = `{"id":7,"s":"${'é'.repeat(1_000_000)}"}`; // ~2 MB
    const doc = wrap(`{"id":6},${big},{"id":8}`);
    for (const size of [undefined, 65536, 1_000_003]) {
      const { records } = parse(doc, size);
      expect(records.length).toBe(3);
      const bad = records[1]!;
      expect(bad.problem).toBe('record larger than 1048576 bytes');
      expect(bad.value).toBeUndefined();
      expect(bad.byteLength).toBe(Buffer.byteLength(big));
      expect(bad.raw.length).toBe(65536);
      expect(bad.raw).toBe(big.slice(0, 65536));
      expect(records[2]!.value).toEqual({ id: '8' });
      expect(records[2]!.byteOffset).toBe(bad.byteOffset + bad.byteLength + 1);
    }
  });

  it('honours maxRecordBytes and maxRawChars', () => {
    const { records } = parse(wrap('{"a":"0123456789"},{"a":1}'), 3, { maxRecordBytes: 12, maxRawChars: 5 });
    expect(records[0]!.problem).toBe('record larger than 12 bytes');
    expect(records[0]!.raw).toBe('{"a":');
    expect(records[1]!.value).toEqual({ a: '1' });
    expect(records[1]!.raw).toBe('{"a":');
    expect(records[1]!.raw.length).toBe(5);
  });

  it('does not cut a surrogate pair when truncating raw', () => {
    const { records } = parse(wrap('"ab🍷cd"'), undefined, { maxRawChars: 4 });
    expect(records[0]!.value).toBe('ab🍷cd');
    expect(records[0]!.raw).toBe('"ab');
  });
});

describe('ListingParser: randomized', () => {
  const NUMBERS = [
    '0',
    '-0',
    '7',
    '-12',
    '3.25',
    '0.000000000000000000000000000001',
    '1e9',
    '-2.5E-3',
    '1E+400',
    '123456789012345678901234567890.5',
  ];
  const STRINGS = ['', 'a', 'é', '日本', '🍷', 'q"uote', 'back\\slash', 'line\nbreak', '\u0001', 'tab\there'];

  /** Random JSON text and the value the parser must give for it. */
  function gen(rand: () => number, depth: number): [string, unknown] {
    const ws = () => [' ', '', '\n', '\t', '\r\n '][Math.floor(rand() * 5)]!;
    const r = rand();
    if (depth > 3 || r < 0.35) {
      const k = Math.floor(rand() * 4);
      if (k === 0) {
        const n = NUMBERS[Math.floor(rand() * NUMBERS.length)]!;
        return [n, n];
      }
      if (k === 1) {
        const s = STRINGS[Math.floor(rand() * STRINGS.length)]!;
        return [
          rand() < 0.5
            ? JSON.stringify(s)
            : JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')),
          s,
        ];
      }
      const lit = [true, false, null][Math.floor(rand() * 3)]!;
      return [String(lit), lit];
    }
    const n = Math.floor(rand() * 4);
    if (r < 0.65) {
      const parts: string[] = [];
      const value: unknown[] = [];
      for (let i = 0; i < n; i++) {
        const [t, v] = gen(rand, depth + 1);
        parts.push(ws() + t + ws());
        value.push(v);
      }
      return ['[' + (parts.join(',') || ws()) + ']', value];
    }
    const parts: string[] = [];
    const value: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = `k${i}${STRINGS[Math.floor(rand() * STRINGS.length)]}`;
      const [t, v] = gen(rand, depth + 1);
      parts.push(ws() + JSON.stringify(key) + ws() + ':' + ws() + t + ws());
      value[key] = v;
    }
    return ['{' + (parts.join(',') || ws()) + '}', value];
  }

  function genDoc(rand: () => number): { doc: string; values: unknown[] } {
    const values: unknown[] = [];
    const parts: string[] = [];
    const count = Math.floor(rand() * 6);
    for (let i = 0; i < count; i++) {
      const [t, v] = gen(rand, 0);
      parts.push(t);
      values.push(v);
    }
    return {
      doc: `{"message":"ok", "bulk_wine_reconciliation" : [ ${parts.join(' ,\n ')} ], "recordCount":${count}}`,
      values,
    };
  }

  /** The outcome of parsing `buf` with random chunk sizes: values, or the error offset and message. */
  function outcome(buf: Buffer, rand: () => number): { values?: unknown[]; raws?: string[]; error?: [number, string] } {
    const parser = new ListingParser();
    const values: unknown[] = [];
    const raws: string[] = [];
    try {
      let at = 0;
      while (at < buf.length) {
        const size = rand() < 0.3 ? 1 : 1 + Math.floor(rand() * 40);
        for (const r of parser.push(buf.subarray(at, at + size))) {
          values.push(r.value);
          raws.push(r.raw);
        }
        at += size;
      }
      parser.end();
      return { values, raws };
    } catch (error) {
      if (!(error instanceof ListingSyntaxError)) throw error;
      return { error: [error.byteOffset, error.message.split('; near: ')[0]!] }; // the excerpt depends on the chunking
    }
  }

  it('parses random valid documents exactly, whatever the chunking', () => {
    const rand = xorshift(20240611);
    for (let iter = 0; iter < 300; iter++) {
      const { doc, values } = genDoc(rand);
      const buf = Buffer.from(doc, 'utf8');
      const whole = parse(buf);
      expect(whole.records.map((r) => r.value)).toEqual(values);
      expect(whole.envelope.recordCount).toBe(values.length);
      for (const r of whole.records)
        expect(buf.subarray(r.byteOffset, r.byteOffset + r.byteLength).toString('utf8')).toBe(r.raw);
      const chunked = outcome(buf, rand);
      expect(chunked.values).toEqual(values);
      expect(chunked.raws).toEqual(whole.records.map((r) => r.raw));
    }
  });

  it('decodes arbitrary bytes in strings exactly like Buffer#toString', () => {
    const rand = xorshift(99);
    for (let iter = 0; iter < 500; iter++) {
      const bytes: number[] = [];
      const n = 1 + Math.floor(rand() * 12);
      for (let k = 0; k < n; k++) {
        const r = rand();
        // Mostly high bytes (valid and invalid UTF-8), some ASCII.
        bytes.push(r < 0.8 ? 0x80 + Math.floor(rand() * 128) : 0x61 + Math.floor(rand() * 26));
      }
      const inner = Buffer.from(bytes);
      const doc = Buffer.concat([
        Buffer.from(PREFIX + '"'),
        inner,
        Buffer.from('",{"k":"'),
        inner,
        Buffer.from('"}]}'),
      ]);
      const expected = inner.toString('utf8');
      const chunked = outcome(doc, rand);
      expect(chunked.values).toEqual([expected, { k: expected }]);
      expect(parse(doc).records[0]!.raw).toBe('"' + expected + '"');
    }
  });

  it('accepts exactly what JSON.parse accepts for random one-byte mutations, with the same error wherever the chunks end', () => {
    const rand = xorshift(7);
    const alphabet = '{}[],:"\\ 0123456789.eE+-tfnulrs\t\n\u0001';
    let rejected = 0;
    for (let iter = 0; iter < 1500; iter++) {
      const { doc } = genDoc(rand);
      const pos = Math.floor(rand() * doc.length);
      const op = rand();
      const ch = alphabet[Math.floor(rand() * alphabet.length)]!;
      const mutated =
        op < 0.4
          ? doc.slice(0, pos) + doc.slice(pos + 1)
          : op < 0.7
            ? doc.slice(0, pos) + ch + doc.slice(pos)
            : doc.slice(0, pos) + ch + doc.slice(pos + 1);
      const buf = Buffer.from(mutated, 'utf8');
      let reference = true;
      try {
        const v: unknown = JSON.parse(mutated);
        if (typeof v !== 'object' || v === null || Array.isArray(v)) reference = false;
        else if (mutated.split('"bulk_wine_reconciliation"').length > 2) reference = false;
      } catch {
        reference = false;
      }
      const a = outcome(buf, () => 0.99); // big chunks
      const b = outcome(buf, rand);
      expect(a.error === undefined, mutated).toBe(reference);
      expect(b).toEqual(a);
      if (!reference) rejected++;
    }
    expect(rejected).toBeGreaterThan(500);
  });
});

describe('ListingParser: flat-object fast path', () => {
  // A flat object record is built without JSON.parse; the same object one level down (inside an
  // array record) goes through the rewrite + JSON.parse path. Both must give the same value.
  const viaFastPath = (record: string) => parse(wrap(record)).records[0]!.value;
  const viaSlowPath = (record: string) => (parse(wrap(`[${record}]`)).records[0]!.value as unknown[])[0];

  /** Same own properties, in the same order, with the same values; a plain object. */
  function expectSameObject(actual: unknown, expected: unknown, label: string): void {
    expect(actual, label).toStrictEqual(expected);
    expect(Object.getPrototypeOf(actual), label).toBe(Object.prototype);
    expect(Reflect.ownKeys(actual as object), label).toEqual(Reflect.ownKeys(expected as object));
    for (const key of Reflect.ownKeys(expected as object)) {
      expect(Object.getOwnPropertyDescriptor(actual, key), label).toEqual(
        Object.getOwnPropertyDescriptor(expected, key),
      );
    }
  }

  const CASES = [
    '{}',
    '{ \n }',
    '{"a":""}',
    '{"":""}',
    '{"":1,"a":"","b":" "}',
    '{"id":1,"wpi":"A","inventory_sales":0.1234567890123456789012345,"first_sale":"2021-03-04"}',
    '{"a":-0,"b":1e5,"c":-2.5E-3,"d":1E+400,"e":123456789012345678901234567890.5,"f":0,"g":-7}',
    '{"x":NaN,"y":-Infinity,"z":Infinity}',
    '{"t":true,"f":false,"n":null}',
    '{ "a" : true , "b" :false,"c": null\t,\r\n"d"  :  "s"  , "e" : 12.5 }',
    '{"a\\"b":"x\\ny","c":"\\u00e9\\ud83c\\udf77","d":"\\\\","e\\\\":"\\/"}',
    '{"lone":"\\ud800","pair":"\\ud83c\\udf77","low":"\\udc00x"}',
    '{"é":"日本🍷","k":"Château Mäder","ü\\u00fc":"ÿ\\u0100"}',
    '{"s":"a,b}c:d]e[f{g","t":"\\"},{\\""}',
    '{"a":1,"b":2,"a":3}',
    '{"a":"1","a":"2","a":"3"}',
    '{"__proto__":"p","a":1}',
    '{"a":1,"__proto__":null,"b":2}',
    '{"__proto__":1,"__proto__":2}',
    '{"__pro\\u0074o__":"escaped"}',
    '{"2":"b","1":"a","x":"c","0":"z"}',
    '{"constructor":"c","toString":"t","hasOwnProperty":"h"}',
    '{"k":"line\\u2028sep\\u2029"}',
  ];

  it('gives the same value as the JSON.parse path', () => {
    for (const record of CASES) {
      const fast = viaFastPath(record);
      expectSameObject(fast, viaSlowPath(record), record);
      // And what JSON.parse of the text gives, with numbers kept as their text.
      const reference = JSON.parse(
        record.replace(/("(?:[^"\\]|\\.)*")|(-?(?:\d[\d.eE+-]*|Infinity)|NaN)/g, (m, str: string | undefined) =>
          str !== undefined ? m : JSON.stringify(m),
        ),
      ) as unknown;
      expectSameObject(fast, reference, record);
    }
  });

  it('keeps __proto__ as an own data property and never touches prototypes', () => {
    const value = viaFastPath('{"__proto__":"p","polluted":1}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')).toEqual({
      value: 'p',
      enumerable: true,
      writable: true,
      configurable: true,
    });
    expect(Object.keys(value)).toEqual(['__proto__', 'polluted']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('gives the same values for invalid UTF-8 in keys and values', () => {
    const bad = Buffer.from([0xc3, 0x28, 0xe2, 0x82, 0xf0, 0x9f, 0x8d, 0xff, 0x61, 0xed, 0xa0, 0x80]);
    const record = Buffer.concat([
      Buffer.from('{"'),
      bad,
      Buffer.from('":"'),
      bad,
      Buffer.from('","k":"'),
      bad,
      Buffer.from('"}'),
    ]);
    const text = bad.toString('utf8');
    const fast = parse(Buffer.concat([Buffer.from(PREFIX), record, Buffer.from(']}')])).records[0]!.value;
    const slow = (
      parse(Buffer.concat([Buffer.from(PREFIX + '['), record, Buffer.from(']]}')])).records[0]!.value as unknown[]
    )[0];
    expectSameObject(fast, { [text]: text, k: text }, 'invalid UTF-8');
    expectSameObject(slow, fast, 'invalid UTF-8');
  });

  it('gives the same values for a sequence of records split across chunks at every byte', () => {
    // Repeated and changing key sets (the fast path remembers the last record's keys), keys that
    // are prefixes of each other, escaped keys, whitespace, non-ASCII.
    const records = [
      '{"a":1,"ab":"x","abc":true}',
      '{"a":2,"ab":"y","abc":false}',
      '{"ab":3,"a":"z","abc":null}',
      '{"a":4,"ab":"y","abcd":5}',
      '{"a":5,"ab":"y"}',
      '{"a":6,"ab":"y","abc":7,"x":8}',
      '{"a\\\\":1,"b":2}',
      '{"a\\"":1,"b":2}',
      '{"a\\\\":3,"b":4}',
      '{"é":"日本","b":"🍷"}',
      '{"é":"Mäder","b":"\\ud83c\\udf77"}',
      '{ "a" : 1 , "ab" : "y" , "abc" : 7 }',
      '{"a":1,"ab":"y","abc":7}',
      '{"a":[1],"ab":"y","abc":7}',
      '{"a":1,"ab":{"b":2},"abc":7}',
      '{}',
      '{"a":1,"a":2}',
      '{"__proto__":1,"a":2}',
      '{"__proto__":3,"a":4}',
    ];
    const doc = wrap(records.join(','));
    const buf = Buffer.from(doc, 'utf8');
    const expected = records.map((r) => viaSlowPath(r));
    const whole = parse(buf).records.map((r) => r.value);
    records.forEach((r, k) => expectSameObject(whole[k], expected[k], r));
    for (let cut = 1; cut < buf.length; cut++) {
      const split = parseSplit(doc, [cut]).records.map((r) => r.value);
      expect(split, `cut at ${cut}`).toStrictEqual(whole);
    }
    expect(parse(buf, 1).records.map((r) => r.value)).toStrictEqual(whole);
    expect(parse(buf, 7).records.map((r) => r.value)).toStrictEqual(whole);
  });

  it('gives the same values when raw is truncated (the JSON.parse path is used then)', () => {
    const doc = wrap('{"a":"0123456789","b":12.50},{"a":"x"},{"k":"日本🍷"}');
    const full = parse(doc).records.map((r) => r.value);
    expect(full).toStrictEqual([{ a: '0123456789', b: '12.50' }, { a: 'x' }, { k: '日本🍷' }]);
    for (const size of [1, 3, undefined]) {
      const { records } = parse(doc, size, { maxRawChars: 5 });
      expect(records.map((r) => r.value)).toStrictEqual(full);
      expect(records[0]!.raw).toBe('{"a":');
    }
  });

  it('gives the same values for the usual compact records when they go through JSON.parse after all', () => {
    // The scanner takes a compact flat record whole without writing its rewritten text; when raw
    // is truncated that text is written afterwards (numbers quoted) for JSON.parse.
    const records = [
      '{"id":1,"wpi":"W-1","q":12.50,"r":-0,"s":1e5,"t":-2.5E-3,"u":0,"v":1E+400}',
      '{"t":true,"f":false,"n":null,"e":"","s":" ~\x7f"}',
      '{"a":1,"a":"2"}',
      '{"k":"v"}',
    ];
    const doc = wrap(records.join(','));
    const full = parse(doc).records.map((r) => r.value);
    expect(full[0]).toStrictEqual({
      id: '1',
      wpi: 'W-1',
      q: '12.50',
      r: '-0',
      s: '1e5',
      t: '-2.5E-3',
      u: '0',
      v: '1E+400',
    });
    for (const size of [1, 5, undefined]) {
      const { records } = parse(doc, size, { maxRawChars: 2 });
      expect(records.map((r) => r.value)).toStrictEqual(full);
    }
  });

  it('gives the same values for compact records whatever the scanning window (numbers and strings cut at its end)', () => {
    // Records of every length from 1 to 400 bytes, so that the scanner's 128 KiB windows end in
    // every part of some record.
    const texts: string[] = [];
    const expected: unknown[] = [];
    for (let k = 0; texts.join(',').length < 300_000; k++) {
      const pad = 'x'.repeat(k % 97);
      const digits = '1234567890'.repeat(1 + (k % 7)).slice(0, 1 + (k % 61));
      texts.push(`{"id":${k},"s":"${pad}","n":-${digits}.${digits}e+${k % 9},"b":${k % 2 === 0},"z":null}`);
      expected.push({ id: String(k), s: pad, n: `-${digits}.${digits}e+${k % 9}`, b: k % 2 === 0, z: null });
    }
    const doc = wrap(texts.join(','));
    for (const size of [undefined, 16384, 65536 + 7]) {
      expect(parse(doc, size).records.map((r) => r.value)).toStrictEqual(expected);
    }
  });

  it('accepts and refuses every byte in a compact record exactly as the byte-by-byte scanner does', () => {
    // The fast lane for compact records reads strings and digits four bytes at a time: every byte
    // value at every place in a key, a string and a number's digits must give what the same record
    // one level down gives (there the state machine scans it), values or the error.
    const outcome = (doc: Buffer) => {
      try {
        return parse(doc).records.map((r) => r.value);
      } catch (error) {
        return (error as ListingSyntaxError).byteOffset;
      }
    };
    const templates = [
      '{"k":1,"key_0123456789":"v"}',
      '{"k":1,"s":"value_0123456789"}',
      '{"k":1,"n":-1234567890.1234567890e+1234567}',
    ];
    const places = [
      [9, 23],
      [12, 28],
      [12, 23, 25, 35, 38, 42],
    ];
    templates.forEach((template, t) => {
      for (const at of places[t]!.flatMap((p) => (p < 20 ? [p, p + 1, p + 2, p + 3] : [p, p - 1, p - 2, p - 3]))) {
        for (let x = 0; x < 256; x++) {
          const record = Buffer.from(template, 'latin1');
          record[at] = x;
          const direct = outcome(Buffer.concat([Buffer.from(PREFIX), record, Buffer.from(']}')]));
          const nested = outcome(Buffer.concat([Buffer.from(PREFIX + '['), record, Buffer.from(']]}')]));
          const label = `${template} with byte ${x} at ${at}`;
          // The same error at the same byte of the record (or both after it: a string left open).
          const recordEnd = PREFIX.length + record.length;
          if (typeof nested === 'number')
            expect(direct, label).toBe(nested - 1 < recordEnd ? nested - 1 : Math.max(direct as number, recordEnd));
          else expect(direct, label).toStrictEqual((nested as unknown[][]).map((v) => v[0]));
        }
      }
    });
  });

  it('handles records with more members than it tracks', () => {
    const members = Array.from(
      { length: 600 },
      (_, k) => `"k${k}":${k % 3 === 0 ? `"s${k}"` : k % 3 === 1 ? `${k}.5` : 'true'}`,
    );
    const record = `{${members.join(',')}}`;
    const doc = wrap(`${record},${record}`);
    const values = parse(doc).records.map((r) => r.value);
    expectSameObject(values[0], viaSlowPath(record), 'wide');
    expectSameObject(values[1], values[0], 'wide, repeated');
    expect(parse(doc, 1000).records.map((r) => r.value)).toStrictEqual(values);
  });

  it('matches a reference for random flat records with repeating shapes, whatever the chunking', () => {
    const rand = xorshift(12345);
    const pick = pickWith(rand);
    const KEYS = [
      'id',
      'wpi',
      'a',
      'ab',
      'abc',
      '__proto__',
      'k"q',
      'back\\slash',
      'é',
      '日本',
      '2',
      '1',
      '',
      'inventory_bulk_wine',
    ];
    const NUMS = [
      '0',
      '-0',
      '7',
      '-12',
      '3.25',
      '1e9',
      '-2.5E-3',
      '1E+400',
      '123456789012345678901234567890.5',
      'NaN',
      '-Infinity',
    ];
    const STRS = ['', 'a', 'é', '日本', '🍷', 'q"uote', 'back\\slash', 'line\nbreak', '\u0001', 'a,b}c'];
    const ws = () => (rand() < 0.8 ? '' : pick([' ', '\n', '\t', '\r\n ']));
    const str = (x: string) =>
      rand() < 0.7
        ? JSON.stringify(x)
        : JSON.stringify(x).replace(
            /[^\x20-\x7e]|[a-c]/g,
            (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'),
          );
    for (let iter = 0; iter < 60; iter++) {
      let shape: string[] = [];
      const texts: string[] = [];
      const expected: unknown[] = [];
      for (let r = 0; r < 12; r++) {
        if (r === 0 || rand() < 0.3) shape = Array.from({ length: Math.floor(rand() * 6) }, () => pick(KEYS));
        const value: Record<string, unknown> = {};
        const parts = shape.map((key) => {
          const k = rand();
          const [text, v]: [string, unknown] =
            k < 0.4
              ? ((n) => [n, n])(pick(NUMS))
              : k < 0.8
                ? ((x) => [str(x), x])(pick(STRS))
                : ((l) => [String(l), l])(pick([true, false, null]));
          Object.defineProperty(value, key, { value: v, enumerable: true, writable: true, configurable: true });
          return ws() + str(key) + ws() + ':' + ws() + text + ws();
        });
        texts.push('{' + (parts.join(',') || ws()) + '}');
        expected.push(value);
      }
      const buf = Buffer.from(wrap(texts.join(',')), 'utf8');
      for (const size of [undefined, 1, 1 + Math.floor(rand() * 50)]) {
        const values = parse(buf, size).records.map((r) => r.value);
        values.forEach((v, k) => expectSameObject(v, expected[k], texts[k]!));
      }
    }
  });
});
