/**
 * What a listing's field names and reject reasons may cost, whatever it sends: a long name is
 * shown by its first bytes and a digest (field-name.ts), the counter names at most
 * MAX_EXTRA_FIELDS of them, and the reasons tally counts at most MAX_REASONS reasons one by one.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_REASON_CHARS, MAX_REASONS, OTHER_REASONS, RejectReasons } from '../../src/run/reject-reasons.js';
import { FieldCounter, MAX_EXTRA_FIELDS } from '../../src/transform/field-counts.js';
import { MAX_NAME_BYTES, shownName } from '../../src/transform/field-name.js';

const sha8 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 8);

describe('a field name as stored and shown', () => {
  it('is the name itself up to 128 bytes, else its first bytes cut on a character boundary, … and 8 hex digits of its SHA-256', () => {
    for (const name of ['x', 'inventoryInTransit', 'a'.repeat(128), 'é'.repeat(64), '🍷'.repeat(32)])
      expect(shownName(name)).toBe(name);
    const ascii = 'a'.repeat(129);
    expect(shownName(ascii)).toBe(`${'a'.repeat(117)}…${sha8(ascii)}`);
    // 2-byte characters: 58 of them (116 bytes) fit before the cut, a 59th would not.
    const accents = 'é'.repeat(65);
    expect(shownName(accents)).toBe(`${'é'.repeat(58)}…${sha8(accents)}`);
    // A 4-byte character is never split in two (nor its UTF-16 surrogate pair).
    const emoji = `${'a'.repeat(115)}🍷tail${'b'.repeat(20)}`;
    expect(shownName(emoji)).toBe(`${'a'.repeat(115)}…${sha8(emoji)}`);
    for (const name of [ascii, accents, emoji, 'x'.repeat(60_000), 'é'.repeat(30_000)]) {
      expect(Buffer.byteLength(shownName(name), 'utf8')).toBeLessThanOrEqual(MAX_NAME_BYTES);
      expect(shownName(shownName(name))).toBe(shownName(name));
    }
    // Long names that differ only past the cut stay apart.
    expect(shownName(`${'q'.repeat(3000)}1`)).not.toBe(shownName(`${'q'.repeat(3000)}2`));
  });

  it('bounds what the counter keeps: 20,000 distinct 3 kB names make at most 1,000 names of at most 128 bytes', () => {
    const counter = new FieldCounter();
    for (let i = 0; i < 20_000; i++) counter.count({ id: '1', wpi: 'W', [`${i}:${'z'.repeat(3000)}`]: 1 });
    const names = counter.unknownNames();
    expect(names).toHaveLength(MAX_EXTRA_FIELDS);
    expect(Math.max(...names.map((n) => Buffer.byteLength(n)))).toBeLessThanOrEqual(MAX_NAME_BYTES);
    expect(counter.toJSON().unknown_truncated).toBe(true);
    expect(counter.toJSON().unknown[shownName(`0:${'z'.repeat(3000)}`)]).toBe(1);
  });
});

describe('the reject reasons tally', () => {
  it('counts the first 100 distinct reasons one by one and the rest together, each reason bounded', () => {
    const reasons = new RejectReasons();
    for (let k = 0; k < 3; k++) reasons.count('id', 'required');
    for (let i = 0; i < 20_000; i++)
      reasons.count(
        shownName(`bad${i}${'x'.repeat(60_000)}`),
        'cannot be kept in extra_fields: the NUL character (\\u0000)',
      );
    for (let k = 0; k < 5; k++) reasons.count('wpi', 'must not be empty');
    reasons.count('id', 'required');
    reasons.count('', `record larger than ${'9'.repeat(10_000)} bytes`);
    const entries = reasons.entries();
    expect(entries).toHaveLength(MAX_REASONS);
    expect(entries[0]).toEqual({ reason: 'id: required', count: 4 });
    // 99 names met after "id: required", 19,901 more names, wpi (5) and the long one: told apart no more.
    expect(reasons.otherCount).toBe(20_000 - 99 + 5 + 1);
    expect(reasons.top(3)).toEqual([
      { reason: OTHER_REASONS, count: 19_907 },
      { reason: 'id: required', count: 4 },
      {
        reason:
          `${shownName(`bad0${'x'.repeat(60_000)}`)}` + ': cannot be kept in extra_fields: the NUL character (\\u0000)',
        count: 1,
      },
    ]);
    expect(Math.max(...reasons.top(200).map((r) => r.reason.length))).toBeLessThanOrEqual(
      MAX_NAME_BYTES + 2 + MAX_REASON_CHARS + 1,
    );

    const long = new RejectReasons();
    long.count('x'.repeat(60_000), `${'m'.repeat(60_000)}`);
    expect(long.top(1)[0]!.reason.length).toBeLessThanOrEqual(MAX_NAME_BYTES + 2 + MAX_REASON_CHARS + 1);
  });
});
