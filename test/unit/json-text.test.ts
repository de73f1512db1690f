/**
 * Exact decimals written out as text: JSON number text for the OpenLineage facets (never a float,
 * never anything that is not a JSON number), and the status page's labels as the BI views round.
 */
import { describe, expect, it } from 'vitest';
import { JsonNumberText, jsonText } from '../../src/describe/json-text.js';
import { biLabel } from '../../src/observe/page/totals-plot.js';

describe('jsonText', () => {
  it('writes a JsonNumberText as its digits, everything else as JSON.stringify does', () => {
    const value = {
      sum: JsonNumberText.of('123456789012345678.123456789'),
      min: JsonNumberText.of('-0.005'),
      left: undefined,
      'a "key"': ['x', 1, null, undefined, true, { n: JsonNumberText.of('0') }],
      at: new Date('2026-11-28T02:00:00Z'),
    };
    const text = jsonText(value);
    expect(text).toBe(
      '{"sum":123456789012345678.123456789,"min":-0.005,"a \\"key\\"":["x",1,null,null,true,{"n":0}],"at":"2026-11-28T02:00:00.000Z"}',
    );
    expect(JSON.parse(text.replace('123456789012345678.123456789', '1'))).toMatchObject({ min: -0.005 });
  });

  it('takes only JSON number text: nothing else can be written into the document', () => {
    for (const bad of ['NaN', 'Infinity', '1.', '.5', '01', '+1', '1e', '1,5', '1}', '1 ,"x":2', '', null, undefined])
      expect(JsonNumberText.of(bad), String(bad)).toBeUndefined();
    for (const good of ['0', '-0', '12.50', '-3.25e-7', '1E+30'])
      expect(jsonText([JsonNumberText.of(good)])).toBe(`[${good}]`);
  });
});

describe('biLabel', () => {
  it('groups the rounded text, drops trailing zeros, and never writes a negative zero', () => {
    expect(biLabel('1234567.8900000000')).toBe('1,234,567.89');
    expect(biLabel('-1000.13')).toBe('-1,000.13');
    expect(biLabel('12345.0000')).toBe('12,345');
    expect(biLabel('-0.00')).toBe('0');
    expect(biLabel('-0.50')).toBe('-0.5');
    expect(biLabel('123456789012345678901234.12')).toBe('123,456,789,012,345,678,901,234.12');
    expect(biLabel(null)).toBe('–');
  });
});
