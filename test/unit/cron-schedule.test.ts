import { describe, expect, it } from 'vitest';
import { CronSchedule, isCronExpression } from '../../src/schedule/cron-schedule.js';

const iso = (d: Date | null) => d?.toISOString() ?? null;

describe('the schedule', () => {
  it('accepts 5 fields, or 6 with seconds first, and nothing else', () => {
    expect(isCronExpression('0 3 * * *')).toBe(true);
    expect(isCronExpression('*/5 * * * * *')).toBe(true);
    expect(isCronExpression('0 0 3 * * * 2026')).toBe(false);
    expect(isCronExpression('0 3 * *')).toBe(false);
    expect(isCronExpression('61 3 * * *')).toBe(false);
  });

  it('gives the slot strictly before and strictly after a moment', () => {
    const daily = new CronSchedule('0 3 * * *', 'UTC');
    const at = new Date('2026-11-28T03:00:00Z');
    expect(iso(daily.previous(at))).toBe('2026-11-27T03:00:00.000Z');
    expect(iso(daily.next(at))).toBe('2026-11-29T03:00:00.000Z');
    expect(iso(daily.previous(new Date('2026-11-28T03:00:01Z')))).toBe('2026-11-28T03:00:00.000Z');
  });

  describe('in Europe/Paris across DST', () => {
    const nightly = new CronSchedule('30 2 * * *', 'Europe/Paris');
    it('runs a slot that does not exist on the spring-forward day at the first valid time after the gap', () => {
      // 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 does not exist.
      expect(iso(nightly.next(new Date('2026-03-28T12:00:00Z')))).toBe('2026-03-29T01:00:00.000Z');
      expect(iso(nightly.previous(new Date('2026-03-29T12:00:00Z')))).toBe('2026-03-29T01:00:00.000Z');
      expect(iso(nightly.next(new Date('2026-03-29T12:00:00Z')))).toBe('2026-03-30T00:30:00.000Z');
      expect(iso(nightly.previous(new Date('2026-03-29T00:59:00Z')))).toBe('2026-03-28T01:30:00.000Z');
    });

    it('runs a slot that occurs twice on the fall-back day once, at its first occurrence', () => {
      // 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens at 00:30Z and at 01:30Z.
      expect(nightly.nextRuns(2, new Date('2026-10-24T12:00:00Z')).map(iso)).toEqual([
        '2026-10-25T00:30:00.000Z',
        '2026-10-26T01:30:00.000Z',
      ]);
      expect(iso(nightly.previous(new Date('2026-10-25T12:00:00Z')))).toBe('2026-10-25T00:30:00.000Z');
      expect(iso(nightly.previous(new Date('2026-10-26T01:29:00Z')))).toBe('2026-10-25T00:30:00.000Z');
    });

    it('keeps an interval schedule every 30 minutes through the repeated hour', () => {
      const halfHourly = new CronSchedule('*/30 * * * *', 'Europe/Paris');
      expect(halfHourly.nextRuns(4, new Date('2026-10-25T00:15:00Z')).map(iso)).toEqual([
        '2026-10-25T00:30:00.000Z',
        '2026-10-25T01:00:00.000Z',
        '2026-10-25T01:30:00.000Z',
        '2026-10-25T02:00:00.000Z',
      ]);
      expect(iso(halfHourly.previous(new Date('2026-10-25T01:10:00Z')))).toBe('2026-10-25T01:00:00.000Z');
    });
  });
});
