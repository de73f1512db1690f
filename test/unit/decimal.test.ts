import { describe, expect, it } from 'vitest';
import { normalizeDecimal, normalizeId } from '../../src/transform/decimal.js';

const accepted = (input: unknown) => {
  const r = normalizeDecimal(input);
  if (!r.ok) throw new Error(`rejected ${JSON.stringify(input)}: ${r.message}`);
  return r.value;
};
const rejected = (input: unknown) => {
  const r = normalizeDecimal(input);
  if (r.ok) throw new Error(`accepted ${String(input)} as ${String(r.value)}`);
  return r.message;
};

describe('normalizeDecimal', () => {
  it.each([
    ['1234.5678901234567890123', '1234.5678901234567890123'],
    ['0', '0'],
    ['0.5', '0.5'],
    ['-0.5', '-0.5'],
    ['42', '42'],
    ['-42', '-42'],
    ['0.123456789012345678901234567890123', '0.123456789012345678901234567890123'],
    [
      '98765432109876543210987654321.000000000000000000000000000001',
      '98765432109876543210987654321.000000000000000000000000000001',
    ],
  ])('keeps canonical %s unchanged', (input, expected) => {
    expect(accepted(input)).toBe(expected);
  });

  it.each([
    ['1.5e-7', '0.00000015'],
    ['1.5E+7', '15000000'],
    ['12345e-2', '123.45'],
    ['0.000e10', '0'],
    ['1E+3', '1000'],
    ['1e3', '1000'],
    ['-2.5e2', '-250'],
    ['-1.23e-2', '-0.0123'],
    ['100e-2', '1'],
    ['123.456e1', '1234.56'],
    ['123.456e3', '123456'],
    ['123.456e-3', '0.123456'],
    ['5e0', '5'],
    ['5e-0', '5'],
    ['5e+00000000000000000000000000000002', '500'],
    ['0e5', '0'],
    ['0e999999999999999999999999999999', '0'],
  ])('expands exponent %s to %s', (input, expected) => {
    expect(accepted(input)).toBe(expected);
  });

  it.each([
    ['-0', '0'],
    ['-0.000', '0'],
    ['+0', '0'],
    ['-0e-5', '0'],
    ['+5', '5'],
    ['+5.50', '5.5'],
    ['007.50', '7.5'],
    ['-007.50', '-7.5'],
    ['000', '0'],
    ['00.000100', '0.0001'],
    ['1.500', '1.5'],
    ['2.000', '2'],
    ['2.', '2'],
    ['.5', '0.5'],
    ['-.5', '-0.5'],
    ['1000', '1000'],
    ['10.010', '10.01'],
  ])('normalizes sign and zeros: %s -> %s', (input, expected) => {
    expect(accepted(input)).toBe(expected);
  });

  it('accepts numeric strings with surrounding whitespace', () => {
    expect(accepted(' 12.50 ')).toBe('12.5');
    expect(accepted('\t-3e2\n')).toBe('-300');
  });

  it('accepts bigint exactly', () => {
    expect(accepted(12345678901234567890123n)).toBe('12345678901234567890123');
  });

  it('maps null, missing and "" to null', () => {
    expect(accepted(null)).toBeNull();
    expect(accepted(undefined)).toBeNull();
    expect(accepted('')).toBeNull();
  });

  it.each([
    [true, 'expected a decimal number, got boolean'],
    [false, 'expected a decimal number, got boolean'],
    [{}, 'expected a decimal number, got object'],
    [{ value: '1' }, 'expected a decimal number, got object'],
    [[], 'expected a decimal number, got array'],
    [['1.5'], 'expected a decimal number, got array'],
    ['NaN', 'expected a finite decimal number, got NaN'],
    ['Infinity', 'expected a finite decimal number, got Infinity'],
    ['-Infinity', 'expected a finite decimal number, got -Infinity'],
    ['12 kg', 'expected a decimal number, got text "12 kg"'],
    ['1,5', 'expected a decimal number, got text "1,5"'],
    ['0x10', 'expected a decimal number, got text "0x10"'],
    ['1_000', 'expected a decimal number, got text "1_000"'],
    ['.', 'expected a decimal number, got text "."'],
    ['-', 'expected a decimal number, got text "-"'],
    ['e5', 'expected a decimal number, got text "e5"'],
    ['1e', 'expected a decimal number, got text "1e"'],
    ['1.2.3', 'expected a decimal number, got text "1.2.3"'],
    ['--1', 'expected a decimal number, got text "--1"'],
    ['1 2', 'expected a decimal number, got text "1 2"'],
    ['   ', 'expected a decimal number, got text "   "'],
    ['١٢', 'expected a decimal number, got text "١٢"'],
  ])('rejects %j', (input, message) => {
    expect(rejected(input)).toBe(message);
  });

  it('rejects a JavaScript number (its exact text is lost)', () => {
    expect(rejected(1.5)).toMatch(/JavaScript number/);
  });

  it('quotes at most 40 characters of the offending text', () => {
    const text = `${'x'.repeat(60)} kg`;
    expect(rejected(text)).toBe(`expected a decimal number, got text "${'x'.repeat(40)}"…`);
    expect(rejected('a\u0000b')).toBe('expected a decimal number, got text "a\\u0000b"');
  });

  it('accepts 1000 digits and rejects 1001', () => {
    const thousand = `9${'8'.repeat(999)}`;
    expect(accepted(thousand)).toBe(thousand);
    expect(rejected(`${thousand}7`)).toBe('more than 1000 digits');

    const fraction = `0.${'1'.repeat(1000)}`;
    expect(accepted(fraction)).toBe(fraction);
    expect(rejected(`0.${'1'.repeat(1001)}`)).toBe('more than 1000 digits');

    const mixed = `-${'1'.repeat(500)}.${'2'.repeat(500)}`;
    expect(accepted(mixed)).toBe(mixed);
    expect(rejected(`${mixed}3`)).toBe('more than 1000 digits');

    expect(accepted('1e999')).toBe(`1${'0'.repeat(999)}`);
    expect(rejected('1e1000')).toBe('more than 1000 digits');
    expect(accepted('1e-1000')).toBe(`0.${'0'.repeat(999)}1`);
    expect(rejected('1e-1001')).toBe('more than 1000 digits');
  });

  it('counts digits of the canonical result, not of redundant zeros', () => {
    expect(accepted(`${'0'.repeat(5000)}1.5${'0'.repeat(5000)}`)).toBe('1.5');
  });

  it('rejects huge exponents fast, without expanding them', () => {
    const start = performance.now();
    expect(rejected('1e999999999')).toBe('more than 1000 digits');
    expect(rejected('1e-999999999')).toBe('more than 1000 digits');
    expect(rejected('1e100000')).toBe('more than 1000 digits');
    expect(rejected(`1e${'9'.repeat(5000)}`)).toBe('more than 1000 digits');
    expect(rejected(`-1.5e-${'9'.repeat(5000)}`)).toBe('more than 1000 digits');
    expect(performance.now() - start).toBeLessThan(100);
  });
});

describe('normalizeId', () => {
  const RANGE = 'must be an integer from 1 to 9223372036854775807';

  it.each([
    ['1', '1'],
    ['12', '12'],
    ['007', '7'],
    ['123456789012345678', '123456789012345678'],
    ['9223372036854775807', '9223372036854775807'],
    ['0009223372036854775807', '9223372036854775807'],
  ])('accepts %s as %s', (input, expected) => {
    expect(normalizeId(input)).toEqual({ ok: true, value: expected });
  });

  it('accepts safe JavaScript integers and bigints', () => {
    expect(normalizeId(12)).toEqual({ ok: true, value: '12' });
    expect(normalizeId(9223372036854775807n)).toEqual({ ok: true, value: '9223372036854775807' });
  });

  it.each([
    ['0', `${RANGE}, got "0"`],
    ['000', `${RANGE}, got "000"`],
    ['-1', `${RANGE}, got "-1"`],
    ['-0', `${RANGE}, got "-0"`],
    ['9223372036854775808', `${RANGE}, got "9223372036854775808"`],
    ['9999999999999999999', `${RANGE}, got "9999999999999999999"`],
    ['18446744073709551616', `${RANGE}, got "18446744073709551616"`],
    ['1.0', `${RANGE}, got "1.0"`],
    ['12.5', `${RANGE}, got "12.5"`],
    ['1e3', `${RANGE}, got "1e3"`],
    [' 12 ', `${RANGE}, got " 12 "`],
    ['+5', `${RANGE}, got "+5"`],
    ['abc', `${RANGE}, got "abc"`],
    ['', `${RANGE}, got ""`],
  ])('rejects %j', (input, message) => {
    expect(normalizeId(input)).toEqual({ ok: false, message });
  });

  it('rejects missing, null and non-integers', () => {
    expect(normalizeId(undefined)).toEqual({ ok: false, message: 'required' });
    expect(normalizeId(null)).toEqual({ ok: false, message: 'required' });
    expect(normalizeId(true)).toEqual({ ok: false, message: 'expected an integer, got boolean' });
    expect(normalizeId({})).toEqual({ ok: false, message: 'expected an integer, got object' });
    expect(normalizeId([1])).toEqual({ ok: false, message: 'expected an integer, got array' });
    expect(normalizeId(0n)).toEqual({ ok: false, message: `${RANGE}, got "0"` });
    expect(normalizeId(2 ** 63).ok).toBe(false);
  });
});
