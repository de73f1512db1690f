import { describe, expect, it } from 'vitest';
import { normalizeDate } from '../../src/transform/date.js';

describe('normalizeDate', () => {
  it.each([
    ['2021-03-04', '2021-03-04'],
    ['2024-02-29', '2024-02-29'],
    ['2000-02-29', '2000-02-29'],
    ['0001-01-01', '0001-01-01'],
    ['9999-12-31', '9999-12-31'],
    ['2021-01-31', '2021-01-31'],
    ['2021-04-30', '2021-04-30'],
    ['2021-12-31', '2021-12-31'],
  ])('accepts %s', (input, expected) => {
    expect(normalizeDate(input)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ['2021-03-04T00:00:00.000000Z', '2021-03-04'],
    ['2021-03-04T23:30:00+02:00', '2021-03-04'],
    ['2021-03-04T23:30:00-11:00', '2021-03-04'],
    ['2021-03-04T00:30:00+0200', '2021-03-04'],
    ['2021-03-04 10:00:00', '2021-03-04'],
    ['2021-03-04T10:00', '2021-03-04'],
    ['2021-03-04T10:00Z', '2021-03-04'],
    ['2021-03-04T23:59:59.999', '2021-03-04'],
    ['2021-12-31T23:59:60Z', '2021-12-31'],
  ])('keeps the date part of %s as written (no time zone shift)', (input, expected) => {
    expect(normalizeDate(input)).toEqual({ ok: true, value: expected });
  });

  it.each([[null], [undefined], [''], ['0000-00-00'], ['0000-00-00 00:00:00'], ['0000-00-00T00:00:00Z']])(
    'maps %j to null',
    (input) => {
      expect(normalizeDate(input)).toEqual({ ok: true, value: null });
    },
  );

  it.each([
    ['2023-02-29', 'not a calendar date: "2023-02-29"'],
    ['1900-02-29', 'not a calendar date: "1900-02-29"'],
    ['2023-02-30', 'not a calendar date: "2023-02-30"'],
    ['2021-04-31', 'not a calendar date: "2021-04-31"'],
    ['2021-01-32', 'not a calendar date: "2021-01-32"'],
    ['2021-13-01', 'not a calendar date: "2021-13-01"'],
    ['2021-00-10', 'not a calendar date: "2021-00-10"'],
    ['2021-01-00', 'not a calendar date: "2021-01-00"'],
    ['0000-01-01', 'not a calendar date: "0000-01-01"'],
    ['2023-02-30T10:00:00Z', 'not a calendar date: "2023-02-30T10:00:00Z"'],
  ])('rejects %s as not a calendar date', (input, message) => {
    expect(normalizeDate(input)).toEqual({ ok: false, message });
  });

  it.each([
    ['2021/03/04'],
    ['04-03-2021'],
    ['2021-3-4'],
    ['20210304'],
    ['21-03-04'],
    ['12021-03-04'],
    [' 2021-03-04'],
    ['2021-03-04 '],
    ['2021-03-04T'],
    ['2021-03-04T25:00'],
    ['2021-03-04T10:60'],
    ['2021-03-04T10'],
    ['2021-03-04T10:00:00+2'],
    ['2021-03-04T10:00:00 UTC'],
    ['2021-03-04Z'],
    ['March 4, 2021'],
    ['yesterday'],
    ['   '],
  ])('rejects text %j', (input) => {
    expect(normalizeDate(input)).toEqual({
      ok: false,
      message: `expected a date YYYY-MM-DD, got text ${JSON.stringify(input)}`,
    });
  });

  it('rejects non-strings (a JSON number arrives as text and is rejected as such)', () => {
    expect(normalizeDate('20210304')).toEqual({
      ok: false,
      message: 'expected a date YYYY-MM-DD, got text "20210304"',
    });
    expect(normalizeDate(true)).toEqual({ ok: false, message: 'expected a date YYYY-MM-DD, got boolean' });
    expect(normalizeDate({})).toEqual({ ok: false, message: 'expected a date YYYY-MM-DD, got object' });
    expect(normalizeDate(['2021-03-04'])).toEqual({ ok: false, message: 'expected a date YYYY-MM-DD, got array' });
    expect(normalizeDate(20210304)).toEqual({ ok: false, message: 'expected a date YYYY-MM-DD, got number' });
  });
});
