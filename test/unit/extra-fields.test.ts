/**
 * The pure parts of keeping new upstream fields: the jsonb text of a record's unknown members
 * (zod path), the kinds of values, the column rule and the BI kind.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { biKindOf, columnFor, snakeCase } from '../../src/load/extra-fields.js';
import { extraFieldsOf, kindNames, valueKind } from '../../src/transform/extra-fields.js';
import {
  baselineOf,
  findDisappeared,
  newFields,
  schemaChangeRefusal,
  type Baseline,
} from '../../src/transform/schema-drift.js';
import { shownName } from '../../src/transform/field-name.js';
import { KNOWN_FIELDS, type FieldCounts } from '../../src/fields.js';

const known = new Set<string>(KNOWN_FIELDS);
const isKnown = (name: string) => known.has(name);

describe("extra_fields from a record's raw text", () => {
  it('keeps every unknown member as sent, COPY-escaped, and leaves the known ones out', () => {
    const raw =
      '{ "id": 1, "wpi":"W", "qty" : 1.50e-3 ,\n"note":"a\\\\b\\"c\\u00e9","tab":"x\\ty","nested":{"a":[1, 2.50]},"w\\u0070i":"again"}';
    const out = extraFieldsOf(raw, isKnown);
    expect(out).toEqual({
      ok: true,
      text: '{"qty":1.50e-3,"note":"a\\\\\\\\b\\\\"c\\\\u00e9","tab":"x\\\\ty","nested":{"a":[1, 2.50]}}',
      members: [
        { name: 'qty', kind: kindOf('number') },
        { name: 'note', kind: kindOf('string') },
        { name: 'tab', kind: kindOf('string') },
        { name: 'nested', kind: kindOf('json') },
      ],
    });
    expect(extraFieldsOf('{"id":1,"wpi":"W"}', isKnown)).toEqual({ ok: true, text: null, members: [] });
  });

  it('refuses, naming the field, what jsonb cannot hold; accepts what it can', () => {
    const problem = (value: string) => {
      const out = extraFieldsOf(`{"id":1,"f":${value}}`, isKnown);
      return out.ok ? undefined : out.errors[0]!.message.replace('cannot be kept in extra_fields: ', '');
    };
    expect(problem('"a\\u0000"')).toBe('the NUL character (\\u0000)');
    expect(problem('"\\\\u0000"')).toBeUndefined(); // an escaped backslash, then text
    expect(problem('"\\ud800"')).toBe('an unpaired UTF-16 surrogate (not valid Unicode)');
    expect(problem('"\\udc00x"')).toBe('an unpaired UTF-16 surrogate (not valid Unicode)');
    expect(problem('"\\ud83c\\udf77"')).toBeUndefined();
    // A number prints every digit (extra_fields::text): at most 1000 of them, as for known decimals.
    const tooLong = 'a number that prints as more than 1000 digits';
    expect(problem('[1e999, -1.5e-998, 1.000e-997, 0.000e99999999, 0.00012e1003]')).toBeUndefined();
    for (const text of [
      '1e131000',
      '[1e-16383]',
      '{"x":1e131072}',
      '1e1000',
      '-12.5e999',
      '0e-1001',
      '1.0000e-997',
      `${'9'.repeat(1001)}`,
      `0.${'0'.repeat(1001)}`,
    ]) {
      expect(problem(text), text).toBe(tooLong);
    }
    expect(problem('0e1234567890')).toBe('a number with an exponent of more than 9 digits');
    // A record of many such members names the first ten, then says there are more.
    const many = extraFieldsOf(
      `{"id":1,${Array.from({ length: 4000 }, (_, k) => `"a${k}":1e131000`).join(',')}}`,
      isKnown,
    );
    expect(many.ok ? [] : many.errors.map((e) => e.path)).toEqual([
      ...Array.from({ length: 10 }, (_, k) => `a${k}`),
      '',
    ]);
    expect(many.ok ? '' : many.errors[10]!.message).toBe(
      'and more fields that cannot be kept in extra_fields (the first 10 are named)',
    );
    const named = extraFieldsOf('{"id":1,"bad\\u0000key":1}', isKnown);
    expect(named.ok ? [] : named.errors.map((e) => e.path)).toEqual(['bad\u0000key']);
  });

  it('tells the kinds apart: a date only when the calendar has it', () => {
    const kind = (text: string) => kindNames(valueKind(Buffer.from(text), 0, text.length));
    expect([
      kind('-1.5'),
      kind('"2024-02-29"'),
      kind('"2023-02-29"'),
      kind('"0000-01-01"'),
      kind('"x"'),
      kind('true'),
      kind('null'),
      kind('[1]'),
    ]).toEqual([['number'], ['date'], ['string'], ['string'], ['string'], ['boolean'], [], ['json']]);
  });
});

function kindOf(name: string): number {
  for (let bit = 1; bit <= 16; bit <<= 1) if (kindNames(bit)[0] === name) return bit;
  throw new Error(name);
}

describe('the column rule', () => {
  it('snake_cases names and keeps columns apart', () => {
    expect(
      ['inventoryInTransit', 'HTTPServerName', 'Süßwein Qualität', '  --x--  ', 'a"b', 'ÉTÉ2024'].map(snakeCase),
    ).toEqual(['inventory_in_transit', 'http_server_name', 'su_wein_qualitat', 'x', 'a_b', 'ete2024']);
    const reserved = new Set(['select', 'order']);
    const taken = new Set(['inventory_in_transit']);
    expect(columnFor('inventory_in_transit', taken, reserved)).toEqual({
      column: 'inventory_in_transit_2',
      note: null,
    });
    expect(columnFor('Order', taken, reserved)).toEqual({ column: 'order_field', note: null });
    expect(columnFor('deleted_at', taken, reserved)).toEqual({ column: 'deleted_at_field', note: null });
    expect(columnFor('Id', taken, reserved)).toEqual({ column: 'id_field', note: null });
    expect(columnFor('1st', taken, reserved)).toEqual({ column: 'field_1st', note: null });
    expect(columnFor('葡萄酒', taken, reserved)).toEqual({ column: null, note: 'name has no letter or digit' });
    expect(columnFor('x'.repeat(64), taken, reserved)).toEqual({ column: null, note: 'name longer than 63 bytes' });
    expect(columnFor('é'.repeat(32), taken, reserved)).toEqual({ column: null, note: 'name longer than 63 bytes' });
  });

  it('types a column from the kinds seen, anything mixed as JSON text', () => {
    const kinds = (...k: string[]) => biKindOf(new Set(k));
    expect([
      kinds('number'),
      kinds('date'),
      kinds('date', 'string'),
      kinds('string'),
      kinds('boolean'),
      kinds(),
      kinds('number', 'string'),
      kinds('json'),
      kinds('boolean', 'number'),
    ]).toEqual(['number', 'date', 'text', 'text', 'boolean', 'text', 'json', 'json', 'json']);
  });
});

describe('the disappearing-field guard over new fields', () => {
  const counts = (records: number, unknown: Record<string, number>): FieldCounts => ({
    records,
    fields: Object.fromEntries(
      KNOWN_FIELDS.map((f) => [f, { present: records, non_null: records }]),
    ) as FieldCounts['fields'],
    unknown,
  });
  const baseline = (unknown: Record<string, number>): Baseline => ({
    runId: '4',
    counts: counts(100, unknown),
    unknownNames: new Set(Object.keys(unknown)),
  });

  it('watches a kept field the last run saw in at least half its records, only when fields are kept', () => {
    const now = counts(100, {});
    expect(findDisappeared(baseline({ promo: 49 }), now, { extraFields: true })).toEqual([]);
    expect(findDisappeared(baseline({ promo: 50 }), now, { extraFields: true }).map((d) => [d.field, d.kind])).toEqual([
      ['promo', 'missing'],
    ]);
    expect(findDisappeared(baseline({ promo: 50 }), now, { extraFields: false })).toEqual([]);
    expect(
      findDisappeared(baseline({ promo: 50 }), { ...now, unknown_truncated: true }, { extraFields: true }),
    ).toEqual([]);
  });

  it('finds a long name that an older version stored whole under its shortened form', () => {
    const long = 'w'.repeat(500);
    const old = baselineOf({ id: '4', field_counts: counts(100, { [long]: 100 }), unknown_fields: [long] });
    const now = counts(100, { [shownName(long)]: 100 });
    expect(findDisappeared(old, now, { extraFields: true })).toEqual([]);
    expect(newFields(old, now)).toEqual([]);
    expect(findDisappeared(old, counts(100, {}), { extraFields: true }).map((d) => d.kind)).toEqual(['missing']);
  });

  it('says what accepting the change does', () => {
    const found = [
      {
        field: 'inventory_sales',
        kind: 'missing' as const,
        before: 1,
        presentNow: 0,
        renames: [{ name: 'inventorySales', count: 9 }],
      },
    ];
    expect(schemaChangeRefusal('X', found, { extraFields: true })).toBe(
      'X. Nothing was loaded. If the change is intended, run again with --accept-schema-change: inventory_sales then loads as NULL, and the values of inventorySales are kept in extra_fields.',
    );
    expect(schemaChangeRefusal('X', found)).toBe(
      'X. Nothing was loaded. If the change is intended, run again with --accept-schema-change.',
    );
  });
});

describe('SYNC_EXTRA_FIELDS', () => {
  it('is keep by default, drop when asked, and a configuration error naming the variable otherwise', () => {
    const needs = { api: false, database: false };
    expect(loadConfig({}, needs).extraFields).toBe('keep');
    expect(loadConfig({ SYNC_EXTRA_FIELDS: 'drop' }, needs).extraFields).toBe('drop');
    expect(() => loadConfig({ SYNC_EXTRA_FIELDS: 'yes' }, needs)).toThrow(
      'SYNC_EXTRA_FIELDS: must be keep or drop (got "yes")',
    );
  });
});
