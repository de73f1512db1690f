/** The checks file's reading, the checks' verdicts at their thresholds, and the exact decimals they use. */
import { describe, expect, it } from 'vitest';
import { parseChecks } from '../../src/checks/checks-file.js';
import { evaluateChecks, type CheckInput } from '../../src/checks/evaluate.js';
import { notifyEvent } from '../../src/observe/notify.js';
import type { RunRow } from '../../src/load/audit.js';
import {
  addDecimal,
  divideToText,
  formatDecimal,
  parseDecimal,
  subtractDecimal,
} from '../../src/text/exact-decimal.js';

describe('exact decimals', () => {
  it('add, subtract and format without a float', () => {
    const d = (t: string) => parseDecimal(t)!;
    expect(formatDecimal(addDecimal(d('0.1'), d('0.2')))).toBe('0.3');
    expect(
      formatDecimal(subtractDecimal(d('12345678901234567890.000000000000000001'), d('0.000000000000000001'))),
    ).toBe('12345678901234567890');
    expect(formatDecimal(subtractDecimal(d('1.5'), d('1.50')))).toBe('0');
    expect(formatDecimal(subtractDecimal(d('-0.25'), d('0.5')))).toBe('-0.75');
    expect(divideToText(d('2'), d('3'), 1)).toBe('0.7');
    expect(divideToText(d('-2'), d('3'), 1)).toBe('-0.7');
    expect(parseDecimal('NaN')).toBeUndefined();
  });
});

describe('the checks file', () => {
  it('reads every form, numbers as written', () => {
    const rules = parseChecks(
      [
        'checks:',
        '  - {volume: true, max_change_percent: 12.50, severity: warn}',
        '  - {total: inventory_sales, max_change_percent: 0.1, severity: error}',
        '  - {nulls: vintage_make, off: true}',
        '  - field: first_sale',
        '    max: today',
        '    severity: warn',
      ].join('\n'),
      'c.yaml',
    );
    expect(rules).toMatchObject([
      { kind: 'volume', off: false, maxChangePercent: '12.50', severity: 'warn', line: 2 },
      { kind: 'total', field: 'inventory_sales', maxChangePercent: '0.1', severity: 'error', line: 3 },
      { kind: 'nulls', field: 'vintage_make', off: true, line: 4 },
      { kind: 'value', field: 'first_sale', max: 'today', notNull: false, severity: 'warn', line: 5 },
    ]);
  });

  it.each([
    [
      'checks:\n  - {volume: true, severity: warn}\n',
      'line 2, rule {volume: true, severity: warn}: max_change_percent is missing',
    ],
    [
      'checks:\n  - {total: x, max_change_percent: 5, severity: fatal}\n',
      'line 2, rule {total: x, max_change_percent: 5, severity: fatal}: severity must be warn or error, not "fatal"',
    ],
    [
      'checks:\n  - {field: x, severity: warn}\n',
      'line 2, rule {field: x, severity: warn}: a field rule needs min, max or not_null: true',
    ],
    [
      'checks:\n  - {field: x, min: 0, severity: warn, colour: red}\n',
      'line 2, rule {field: x, min: 0, severity: warn, colour: red}: unknown key "colour"',
    ],
    [
      'checks:\n  - {volume: false}\n  - {volume: false}\n',
      'line 3, rule {volume: false}: check volume is already set on line 2',
    ],
    ['rules: []\n', 'line 1: unknown key "rules"'],
    ['checks:\n  - 5\n', 'line 2: a rule must be a mapping'],
  ])('refuses %j naming the line and the rule', (text, why) => {
    expect(() => parseChecks(text, 'c.yaml')).toThrow(`SYNC_CHECKS_FILE: c.yaml ${why}`);
  });
});

describe('the checks', () => {
  const row = (field: string, rows: number, nulls: number, total: string | null = null) => ({
    field,
    row_count: String(rows),
    null_count: String(nulls),
    total,
    min_value: null,
    max_value: null,
  });
  const input = (now: CheckInput['profile'], before: CheckInput['profile'], received = 1000): CheckInput => ({
    received,
    recentReceived: [1000, 990, 1010],
    fields: new Map([['inventory_sales', 'decimal']]),
    profile: now,
    previous: { runId: '9', profile: before },
    today: '2026-11-28',
  });
  const verdict = (i: CheckInput) => evaluateChecks([], i).map((c) => [c.check_name, c.passed ? 'ok' : c.severity]);

  it('pass at their thresholds and fail just past them', () => {
    const before = [row('inventory_sales', 1000, 20, '100')];
    // 20% volume, 50% total, 10 points of nulls: all allowed.
    expect(verdict(input([row('inventory_sales', 1000, 120, '150')], before, 1200))).toEqual([
      ['volume', 'ok'],
      ['total:inventory_sales', 'ok'],
      ['nulls:inventory_sales', 'ok'],
    ]);
    expect(verdict(input([row('inventory_sales', 1000, 121, '150.01')], before, 1201))).toEqual([
      ['volume', 'warn'],
      ['total:inventory_sales', 'warn'],
      ['nulls:inventory_sales', 'warn'],
    ]);
  });

  it('makes a field that stopped being filled an error, and a field often null a warning', () => {
    expect(
      verdict(input([row('inventory_sales', 1000, 501, '1')], [row('inventory_sales', 1000, 50, '1')]))[2],
    ).toEqual(['nulls:inventory_sales', 'error']);
    expect(
      verdict(input([row('inventory_sales', 1000, 600, '1')], [row('inventory_sales', 1000, 51, '1')]))[2],
    ).toEqual(['nulls:inventory_sales', 'warn']);
  });
});

describe('the notification of a run whose checks warned', () => {
  it('is sent once, with SYNC_NOTIFY_ON=check', () => {
    const run = { status: 'succeeded', retry_at: null } as unknown as RunRow;
    const warned = [{ check_name: 'volume', severity: 'warn' as const, observed: '1', expected: '2', message: 'm' }];
    expect(notifyEvent(run, undefined, { on: 'failure', retries: false, checks: true }, [], undefined, warned)).toBe(
      'checks',
    );
    expect(notifyEvent(run, undefined, { on: 'failure', retries: false, checks: false }, [], undefined, warned)).toBe(
      undefined,
    );
  });
});
