import { describe, expect, it } from 'vitest';
import { DATA_COLUMNS, normalizeWpi, recordSchema, transformRecord, type Row } from '../../src/transform/record.js';

/** A record as the lossless parser delivers it: JSON numbers as their exact text. */
const typical = () => ({
  id: '123',
  wpi: 'BW-CA-4711',
  inventory_bulk_wine: '1234.5678901234567890123',
  inventory_finished_goods: '0.50',
  inventory_sales: '1.5e-7',
  vintage_forecast: '-0',
  vintage_make: null,
  first_sale: '2021-03-04T23:30:00+02:00',
});

describe('transformRecord', () => {
  it('turns a valid record into a row of canonical text', () => {
    const result = transformRecord(typical());
    expect(result).toEqual({
      ok: true,
      row: {
        id: '123',
        wpi: 'BW-CA-4711',
        inventory_bulk_wine: '1234.5678901234567890123',
        inventory_finished_goods: '0.5',
        inventory_sales: '0.00000015',
        vintage_forecast: '0',
        vintage_make: null,
        first_sale: '2021-03-04',
      } satisfies Row,
    });
  });

  it('maps missing optional fields to null', () => {
    expect(transformRecord({ id: '7', wpi: 'W' })).toEqual({
      ok: true,
      row: {
        id: '7',
        wpi: 'W',
        inventory_bulk_wine: null,
        inventory_finished_goods: null,
        inventory_sales: null,
        vintage_forecast: null,
        vintage_make: null,
        first_sale: null,
      },
    });
  });

  it('row has exactly id plus DATA_COLUMNS', () => {
    const result = transformRecord({ ...typical(), extra: 1 });
    expect(result.ok).toBe(true);
    if (result.ok) expect(Object.keys(result.row).sort()).toEqual(['id', ...DATA_COLUMNS].sort());
  });

  it('ignores unknown fields without rejecting (they are counted by FieldCounter)', () => {
    const result = transformRecord({ ...typical(), colour: 'red', notes: { a: 1 } });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.row).not.toHaveProperty('colour');
  });

  it('reports every reason of a bad record, with the readable id', () => {
    const result = transformRecord({
      id: '0042',
      wpi: true,
      inventory_bulk_wine: '12 kg',
      inventory_finished_goods: [],
      inventory_sales: 'NaN',
      vintage_forecast: `1e${'9'.repeat(100)}`,
      vintage_make: '1.5',
      first_sale: '2023-02-30',
      extra: 'x',
    });
    expect(result).toEqual({
      ok: false,
      recordId: '42',
      id: '42',
      errors: [
        { path: 'wpi', message: 'expected text, got boolean' },
        { path: 'inventory_bulk_wine', message: 'expected a decimal number, got text "12 kg"' },
        { path: 'inventory_finished_goods', message: 'expected a decimal number, got array' },
        { path: 'inventory_sales', message: 'expected a finite decimal number, got NaN' },
        { path: 'vintage_forecast', message: 'more than 1000 digits' },
        { path: 'first_sale', message: 'not a calendar date: "2023-02-30"' },
      ],
    });
  });

  it('reports a missing id and wpi as required', () => {
    expect(transformRecord({})).toEqual({
      ok: false,
      recordId: null,
      id: null,
      errors: [
        { path: 'id', message: 'required' },
        { path: 'wpi', message: 'required' },
      ],
    });
  });

  it.each([
    [{ record_id: '5', wpi: 'W', inventory_sales: '1' }],
    [{ id: null, wpi: '', inventory_sales: '12 kg', first_sale: '2023-02-30', vintage_make: true }],
    [{ id: '9223372036854775808', inventory_bulk_wine: [], vintage_forecast: 'NaN' }],
    [{ wpi: null, first_sale: '0000-00-00' }],
  ])('without id or wpi (checked without zod) gives exactly the reasons zod gives: %j', (record) => {
    const result = transformRecord(record);
    const parsed = recordSchema.safeParse(record);
    expect(parsed.success).toBe(false);
    const zodErrors = parsed.error!.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    // An id that is there but invalid is still shown as written.
    const written = 'id' in record && typeof record.id === 'string' ? record.id : null;
    expect(result).toEqual({ ok: false, recordId: written, id: null, errors: zodErrors });
  });

  it('gives the valid id of a record that lacks wpi, so that its live row is kept', () => {
    expect(transformRecord({ id: 5, inventory_sales: '1' })).toMatchObject({
      ok: false,
      recordId: '5',
      id: '5',
      errors: [{ path: 'wpi', message: 'required' }],
    });
    expect(transformRecord({ ...typical(), id: '12.0' })).toMatchObject({ ok: false, id: null });
  });

  it('gives the id as written when it is readable but invalid', () => {
    const outOfRange = transformRecord({ ...typical(), id: '9223372036854775808' });
    expect(outOfRange).toMatchObject({
      ok: false,
      recordId: '9223372036854775808',
      errors: [{ path: 'id', message: 'must be an integer from 1 to 9223372036854775807, got "9223372036854775808"' }],
    });
    expect(transformRecord({ ...typical(), id: '12.0' })).toMatchObject({ ok: false, recordId: '12.0' });
    expect(transformRecord({ ...typical(), id: { n: 1 } })).toMatchObject({ ok: false, recordId: null });
    const long = transformRecord({ ...typical(), id: 'x'.repeat(1000) });
    expect(long.ok === false && long.recordId?.length).toBe(101);
  });

  it('accepts the largest id and rejects 2^63', () => {
    expect(transformRecord({ ...typical(), id: '9223372036854775807' }).ok).toBe(true);
    expect(transformRecord({ ...typical(), id: '9223372036854775808' }).ok).toBe(false);
  });

  it.each([[[]], [[{ id: '1', wpi: 'a' }]], ['{"id":1}'], ['12'], [null], [true], [undefined]])(
    'rejects non-object record %j',
    (value) => {
      expect(transformRecord(value)).toEqual({
        ok: false,
        recordId: null,
        id: null,
        errors: [{ path: '', message: 'record is not a JSON object' }],
      });
    },
  );

  it('accepts an object without prototype', () => {
    const record = Object.assign(Object.create(null) as object, typical());
    expect(transformRecord(record).ok).toBe(true);
  });
});

describe('normalizeWpi', () => {
  it.each([
    ['BW-CA-4711', 'BW-CA-4711'],
    ['  padded\t', 'padded'],
    ['12345', '12345'],
    ['1.50', '1.50'],
    ["'; DROP TABLE x; --", "'; DROP TABLE x; --"],
    ['Château Müller 日本', 'Château Müller 日本'],
    ['emoji 🍷', 'emoji 🍷'],
    ['tab\tand\\backslash', 'tab\tand\\backslash'],
  ])('accepts %j as %j', (input, expected) => {
    expect(normalizeWpi(input)).toEqual({ ok: true, value: expected });
  });

  it('takes a JSON number as its exact text', () => {
    // The lossless parse already turned `"wpi": 12.50` into the text "12.50".
    expect(transformRecord({ id: '1', wpi: '12.50' })).toMatchObject({ ok: true, row: { wpi: '12.50' } });
  });

  it.each([
    ['', 'must not be empty'],
    ['   ', 'must not be empty'],
    ['\n\t', 'must not be empty'],
    ['a\u0000b', 'must not contain the NUL character (\\u0000)'],
    ['\u0000', 'must not contain the NUL character (\\u0000)'],
    ['bad \ud800 surrogate', 'must not contain an unpaired UTF-16 surrogate (not valid Unicode)'],
    [null, 'required'],
    [undefined, 'required'],
    [true, 'expected text, got boolean'],
    [{}, 'expected text, got object'],
    [['a'], 'expected text, got array'],
  ])('rejects %j', (input, message) => {
    expect(normalizeWpi(input)).toEqual({ ok: false, message });
  });
});
