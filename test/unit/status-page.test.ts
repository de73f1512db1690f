import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { judgeFreshness, staleRuleFromSchedule } from '../../src/observe/page/freshness.js';
import { html } from '../../src/observe/page/html.js';
import { presentedToken, sameSecret } from '../../src/observe/page/security.js';
import { barChart, chartScale, niceCeiling } from '../../src/observe/page/svg.js';

const DB = { DATABASE_URL: 'postgres://u@h/db' };

describe('html templates', () => {
  it('escape every value, in text and in attributes, unless it is Html already', () => {
    const hostile = `</pre><script>alert("x")</script><img src=x onerror='y'>&`;
    expect(html`<p title="${hostile}">${hostile}</p>`.text).toBe(
      '<p title="&lt;/pre&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&amp;">&lt;/pre&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&amp;</p>',
    );
    expect(html`<ul>${['<a>', html`<li>b</li>`, null, undefined, false]}</ul>`.text).toBe(
      '<ul>&lt;a&gt;<li>b</li></ul>',
    );
  });

  it('draw a chart whose bars carry their runs and values, and whose title is escaped', () => {
    const svg = barChart({
      id: 'c',
      title: '<b>t</b>',
      unit: 'rows',
      series: [{ key: 'inserted', name: 'inserted' }],
      bars: [{ runId: '7', values: [{ series: 'inserted', value: 3 }], label: 'run 7' }],
    }).text;
    expect(svg).toContain('<a href="/runs/7" class="run-bar" data-run="7">');
    expect(svg).toContain('data-value="3"');
    expect(svg).toContain('&lt;b&gt;t&lt;/b&gt;');
    expect([niceCeiling(0.3), niceCeiling(3), niceCeiling(5), niceCeiling(5000), niceCeiling(9000)]).toEqual([
      0.4, 4, 8, 8000, 10000,
    ]);
  });
});

describe('freshness', () => {
  const rule = { ms: 3_600_000, why: '' };
  const now = Date.parse('2026-01-02T12:00:00Z');
  it('is failing when the newest finished run did not succeed, late when the last load is too old or missing, else fresh', () => {
    expect(
      judgeFreshness({ now, lastLoadAt: new Date(now - 60_000), latest: { id: '9', status: 'failed' }, rule }).state,
    ).toBe('failing');
    // A failed attempt with a retry pending says so; a retry time already past is not promised.
    const retryAt = new Date(now + 300_000);
    expect(
      judgeFreshness({
        now,
        lastLoadAt: undefined,
        latest: { id: '9', status: 'failed', attempt: 1, retry_at: retryAt },
        rule,
        attempts: 4,
      }).headline,
    ).toBe(`Failing: the last run (9) failed (attempt 1 of 4), retrying at ${retryAt.toISOString()}`);
    expect(
      judgeFreshness({
        now,
        lastLoadAt: undefined,
        latest: { id: '9', status: 'failed', attempt: 2, retry_at: new Date(now - 1) },
        rule,
      }).headline,
    ).toBe('Failing: the last run (9) failed (attempt 2)');
    expect(
      judgeFreshness({ now, lastLoadAt: new Date(now - 2 * 3_600_000), latest: { id: '9', status: 'succeeded' }, rule })
        .state,
    ).toBe('late');
    expect(judgeFreshness({ now, lastLoadAt: undefined, latest: undefined, rule }).state).toBe('late');
    expect(
      judgeFreshness({ now, lastLoadAt: new Date(now - 60_000), latest: { id: '9', status: 'succeeded' }, rule }).state,
    ).toBe('fresh');
  });
  it('takes its limit from the schedule: the gap between two runs, plus as much again up to an hour', () => {
    const daily = [new Date('2026-01-03T03:00:00Z'), new Date('2026-01-04T03:00:00Z')];
    expect(staleRuleFromSchedule(daily)?.ms).toBe(25 * 3_600_000);
    const minutely = [new Date('2026-01-03T03:00:00Z'), new Date('2026-01-03T03:01:00Z')];
    expect(staleRuleFromSchedule(minutely)?.ms).toBe(120_000);
  });
});

describe('SYNC_UI_TOKEN and SYNC_STALE_AFTER', () => {
  it('are read from the environment, the token also from a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wrs-ui-'));
    writeFileSync(join(dir, 'token'), 'from-a-file-0123456789\n');
    expect(
      loadConfig(
        { ...DB, SYNC_UI_TOKEN_FILE: join(dir, 'token'), SYNC_STALE_AFTER: '90m' },
        { api: false, database: true },
      ).ui,
    ).toEqual({ token: 'from-a-file-0123456789', staleAfterMs: 5_400_000, allowedHosts: [] });
    expect(loadConfig(DB, { api: false, database: true }).ui).toEqual({
      token: undefined,
      staleAfterMs: undefined,
      allowedHosts: [],
    });
    expect(
      loadConfig(
        { ...DB, SYNC_UI_ALLOWED_HOSTS: ' Status.Example.com , ops.example.com:8443,' },
        { api: false, database: true },
      ).ui.allowedHosts,
    ).toEqual(['status.example.com', 'ops.example.com:8443']);
  });
  it('refuse a short token and a length of time without a unit, naming the variable and never echoing the token', () => {
    let error: unknown;
    try {
      loadConfig({ ...DB, SYNC_UI_TOKEN: 'short-secret', SYNC_STALE_AFTER: '26' }, { api: false, database: true });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('SYNC_UI_TOKEN: must be at least 16 characters');
    expect((error as Error).message).toContain('SYNC_STALE_AFTER: must be a positive length of time');
    expect((error as Error).message).not.toContain('short-secret');
  });
});

describe('the token a request presents', () => {
  const req = (authorization?: string) =>
    ({ headers: authorization === undefined ? {} : { authorization } }) as Parameters<typeof presentedToken>[0];
  it('is the Bearer token, or the password of Basic auth (which may hold colons)', () => {
    expect(presentedToken(req('Bearer abc.def'))).toBe('abc.def');
    expect(presentedToken(req(`Basic ${Buffer.from('ops:pa:ss').toString('base64')}`))).toBe('pa:ss');
    expect(presentedToken(req(`Basic ${Buffer.from('nocolon').toString('base64')}`))).toBeUndefined();
    expect(presentedToken(req())).toBeUndefined();
    expect(sameSecret('a', 'a')).toBe(true);
    expect(sameSecret('a', 'ab')).toBe(false);
  });
});

describe('the plots', () => {
  const chart = (totals: number[]) =>
    barChart({
      id: 'c',
      title: 't',
      unit: 'rows',
      series: [
        { key: 'inserted', name: 'inserted' },
        { key: 'updated', name: 'updated' },
      ],
      bars: totals.map((t, i) => ({
        runId: String(1001 + i),
        values: [
          { series: 'inserted', value: t - Math.floor(t / 3) },
          { series: 'updated', value: Math.floor(t / 3) },
        ],
        label: `run ${1001 + i}`,
      })),
    }).text;
  const attrs = (tag: string) => Object.fromEntries([...tag.matchAll(/([\w-]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
  /** Each run's bar, read back from the SVG: its center, top and height. */
  const barsOf = (svg: string) =>
    [...svg.matchAll(/<a href="\/runs\/\d+" class="run-bar" data-run="(\d+)"([^>]*)>(.*?)<\/a>/g)].map(
      ([, run, more, inner]) => {
        const rects = [...inner!.matchAll(/<rect class="bar[^"]*"[^>]*>/g)].map((m) => attrs(m[0]));
        const x = Number(rects[0]!.x) + Number(rects[0]!.width) / 2;
        return {
          run: run!,
          center: x,
          top: Math.min(...rects.map((r) => Number(r.y))),
          height: rects.reduce((s, r) => s + Number(r.height), 0),
          cut: /data-cut=/.test(more!) || undefined,
        };
      },
    );
  const labelsOf = (svg: string) =>
    [...svg.matchAll(/<text class="x-label"[^>]*>/g)]
      .map((m) => attrs(m[0]))
      .map((a) => ({ run: a['data-run']!, x: Number(a.x) }));

  it('put each run id under the center of its own bar, the newest always, and never two ids on top of each other', () => {
    for (const n of [1, 2, 7, 30, 90, 365]) {
      const svg = chart(Array.from({ length: n }, (_, i) => 10 + (i % 5)));
      const bars = new Map(barsOf(svg).map((b) => [b.run, b.center]));
      const labels = labelsOf(svg);
      expect(labels.at(-1)!.run, `${n} bars`).toBe(String(1000 + n));
      for (const l of labels) expect(Math.abs(l.x - bars.get(l.run)!), `${n} bars, run ${l.run}`).toBeLessThan(0.02);
      // Four digits at 8 units each: the centres are at least a label's width apart.
      for (let i = 1; i < labels.length; i++) expect(labels[i]!.x - labels[i - 1]!.x).toBeGreaterThanOrEqual(32);
    }
  });

  it('cut a bar more than ten times the median run at the top, write its value on it and say so, and keep the others readable', () => {
    // The issue's own case: a first load of 3,000 rows, then a run that changed 125.
    const two = chart([3000, 125]);
    const [first, second] = barsOf(two);
    expect(first!.cut).toBe(true);
    expect(second!.cut).toBeUndefined();
    expect(second!.height).toBeGreaterThan(80); // of 160: the small run fills more than half the axis
    expect(two).toContain('<text class="cut-value" x="');
    expect(two).toMatch(/>3,000<\/text>/);
    expect(two).toContain(
      'Cut at the top and marked with its value, so that the other runs stay readable: run 1001 (3,000 rows).',
    );
    // A month of small nights after a first load 1,000 times as large.
    const month = barsOf(chart([5000, ...Array.from({ length: 29 }, (_, i) => 2 + (i % 4))]));
    expect(month.filter((b) => b.cut).map((b) => b.run)).toEqual(['1001']);
    // 2 rows: a quarter of the axis
    expect(Math.min(...month.slice(1).map((b) => b.height))).toBeGreaterThanOrEqual(40);
    // Nothing far above the median: nothing cut, the highest bar reaches near the top.
    const even = chart([100, 90, 80, 0]);
    expect(even).not.toContain('Cut at the top');
    expect(barsOf(even).every((b) => !b.cut)).toBe(true);
    expect(chartScale([100, 90, 80, 0])).toEqual({ top: 100, cutAbove: undefined });
    expect(chartScale([3000, 125])).toEqual({ top: 200, cutAbove: 125 });
    expect(chartScale([])).toEqual({ top: 1, cutAbove: undefined });
  });
});
