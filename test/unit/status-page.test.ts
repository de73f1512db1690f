import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { judgeFreshness, staleRuleFromSchedule } from '../../src/observe/page/freshness.js';
import { html } from '../../src/observe/page/html.js';
import { presentedToken, sameSecret } from '../../src/observe/page/security.js';
import { barChart, niceCeiling } from '../../src/observe/page/svg.js';

const DB = { DATABASE_URL: 'postgres://u@h/db' };

describe('html templates', () => {
  it('escape every value, in text and in attributes, unless it is Html already', () => {
    const hostile = `</pre><script>alert("x")</script><img src=x onerror='y'>&`;
    expect(html`<p title="${hostile}">${hostile}</p>`.text).toBe(
      '<p title="&lt;/pre&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&amp;">&lt;/pre&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&amp;</p>',
    );
    expect(html`<ul>${['<a>', html`<li>b</li>`, null, undefined, false]}</ul>`.text).toBe('<ul>&lt;a&gt;<li>b</li></ul>');
  });

  it('draw a chart whose bars carry their runs and values, and whose title is escaped', () => {
    const svg = barChart({ id: 'c', title: '<b>t</b>', unit: 'rows', series: [{ key: 'inserted', name: 'inserted' }], bars: [{ runId: '7', values: [{ series: 'inserted', value: 3 }], label: 'run 7' }] }).text;
    expect(svg).toContain('<a href="/runs/7" class="run-bar" data-run="7">');
    expect(svg).toContain('data-value="3"');
    expect(svg).toContain('&lt;b&gt;t&lt;/b&gt;');
    expect([niceCeiling(0.3), niceCeiling(3), niceCeiling(5), niceCeiling(5000), niceCeiling(9000)]).toEqual([0.4, 4, 8, 8000, 10000]);
  });
});

describe('freshness', () => {
  const rule = { ms: 3_600_000, why: '' };
  const now = Date.parse('2026-01-02T12:00:00Z');
  it('is failing when the newest finished run did not succeed, late when the last load is too old or missing, else fresh', () => {
    expect(judgeFreshness({ now, lastLoadAt: new Date(now - 60_000), latest: { id: '9', status: 'failed' }, rule }).state).toBe('failing');
    expect(judgeFreshness({ now, lastLoadAt: new Date(now - 2 * 3_600_000), latest: { id: '9', status: 'succeeded' }, rule }).state).toBe('late');
    expect(judgeFreshness({ now, lastLoadAt: undefined, latest: undefined, rule }).state).toBe('late');
    expect(judgeFreshness({ now, lastLoadAt: new Date(now - 60_000), latest: { id: '9', status: 'succeeded' }, rule }).state).toBe('fresh');
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
    expect(loadConfig({ ...DB, SYNC_UI_TOKEN_FILE: join(dir, 'token'), SYNC_STALE_AFTER: '90m' }, { api: false, database: true }).ui).toEqual({ token: 'from-a-file-0123456789', staleAfterMs: 5_400_000, allowedHosts: [] });
    expect(loadConfig(DB, { api: false, database: true }).ui).toEqual({ token: undefined, staleAfterMs: undefined, allowedHosts: [] });
    expect(loadConfig({ ...DB, SYNC_UI_ALLOWED_HOSTS: ' Status.Example.com , ops.example.com:8443,' }, { api: false, database: true }).ui.allowedHosts).toEqual(['status.example.com', 'ops.example.com:8443']);
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
  const req = (authorization?: string) => ({ headers: authorization === undefined ? {} : { authorization } }) as Parameters<typeof presentedToken>[0];
  it('is the Bearer token, or the password of Basic auth (which may hold colons)', () => {
    expect(presentedToken(req('Bearer abc.def'))).toBe('abc.def');
    expect(presentedToken(req(`Basic ${Buffer.from('ops:pa:ss').toString('base64')}`))).toBe('pa:ss');
    expect(presentedToken(req(`Basic ${Buffer.from('nocolon').toString('base64')}`))).toBeUndefined();
    expect(presentedToken(req())).toBeUndefined();
    expect(sameSecret('a', 'a')).toBe(true);
    expect(sameSecret('a', 'ab')).toBe(false);
  });
});
