/**
 * The run checks on the status page, in Debian's chromium at 390 and 1280 px: the "Totals per run"
 * plots (one per numeric field, labels rounded as the BI views round), a warned run marked in the
 * runs table and the plots, a run page's checks failed first with observed and expected, and the
 * JSON twins. The runs are real syncs; their profile and check rows are written here directly, as
 * the run would write them (sync_run_profiles, sync_run_checks). SCREENSHOT_DIR keeps the pictures.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chromiumAvailable, launchBrowser, watchedPage } from '../support/browser.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, startCli, type CliProcess } from '../support/harness.js';
import { describeWith } from '../support/programs.js';

const fx = useSyncFixture('page-checks', { simulator: { records: 40 } });
/** The BI views' scale for this test: labels with two decimals. */
const SCALE = '2';

/** Exact totals per run: inventory_bulk_wine grows, run 4 has it ×1000 (warned); inventory_sales ends negative. */
const BULK = ['1234567.891234', '1234570.005', '1234580.125', '1234580125.5', '1234590.994999'];
const SALES = ['250.5', '251', '-3.5', '12', '-1000.125'];

describeWith('chromium and playwright-core', chromiumAvailable, 'run checks on the status page, in chromium', () => {
  let browser: Browser;
  let serve: CliProcess;
  let base: string;
  const ids: string[] = [];
  let warned: string;
  let refused: string;

  beforeAll(async () => {
    const env = { ...fx.env, SYNC_BI_SCALE: SCALE };
    for (let i = 0; i < 5; i++) {
      fx.sim.mutate({ change: 2 });
      const r = await runCli(['run', '--json'], env);
      ids.push(String(JSON.parse(r.stdout).id));
    }
    // A sixth run fails (a broken listing): refused as a check would refuse it (status failed, an error row).
    fx.sim.setRecordsJson(['{"id":1,"wpi":"W1"}', '{"id":2,"wpi":"x" broken}']);
    const failedRun = await runCli(['run', '--json'], env);
    expect(failedRun.code, failedRun.stderr).not.toBe(0);
    const [last] = await fx.db.rows<{ id: string; status: string }>(
      'SELECT id::text, status FROM sync_runs ORDER BY id DESC LIMIT 1',
    );
    expect(last!.status).toBe('failed');
    refused = last!.id;
    warned = ids[3]!;
    // The runs stored their own profiles and checks: replaced by these hard values.
    await fx.db.rows('DELETE FROM sync_run_profiles; DELETE FROM sync_run_checks');
    const profile = async (run: string, field: string, total: string | null, min: string | null, max: string | null) =>
      fx.db.rows(
        `INSERT INTO sync_run_profiles (run_id, field, row_count, null_count, total, min_value, max_value)
         VALUES ($1, $2, 40, 3, $3, $4, $5)`,
        [run, field, total, min, max],
      );
    for (const [i, run] of [...ids, refused].entries()) {
      await profile(run, 'inventory_bulk_wine', BULK[i] ?? '1234600.5', '0.5', '99999.125');
      await profile(run, 'inventory_sales', SALES[i] ?? '10', '-5.5', '20');
      await profile(run, 'first_sale', null, '2020-01-02', '2026-11-01');
      await profile(run, 'wpi', null, null, null);
    }
    const check = async (
      run: string,
      name: string,
      field: string | null,
      severity: string,
      passed: boolean,
      observed: string,
      expected: string,
    ) =>
      fx.db.rows(
        `INSERT INTO sync_run_checks (run_id, check_name, field, severity, passed, observed, expected, message)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [run, name, field, severity, passed, observed, expected, `${name}: observed ${observed}, expected ${expected}`],
      );
    for (const run of ids) {
      await check(run, 'volume', null, 'warn', true, '40', 'within 30% of 40');
      await check(run, 'nulls:inventory_sales', 'inventory_sales', 'warn', true, '7.5%', 'at most +20 points');
    }
    await check(
      warned,
      'total:inventory_bulk_wine',
      'inventory_bulk_wine',
      'warn',
      false,
      BULK[3]!,
      'within 50% of 1234580.125',
    );
    await check(refused, 'min:inventory_sales', 'inventory_sales', 'error', false, '-5.5', '>= 0');
    // Run 5 was let through by a person (run --accept-check), as the run records it.
    await fx.db.rows("UPDATE sync_runs SET accepted_checks = ARRAY['min:inventory_sales'] WHERE id = $1", [ids[4]]);
    await check(refused, 'volume', null, 'warn', true, '40', 'within 30% of 40');

    serve = startCli(['serve', '--port', '0'], { DATABASE_URL: fx.env.DATABASE_URL!, SYNC_DB_SCHEMA: fx.db.schema });
    base = JSON.parse(await serve.waitForLog(/serving the status page/)).page.replace(/\/$/, '');
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    serve?.kill('SIGTERM');
    await serve?.result;
  });

  for (const width of [1280, 390]) {
    it(`at ${width} px: totals with BI-rounded labels, the warned run marked, nothing too wide`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      const { page, problems } = await watchedPage(context);
      await page.goto(`${base}/`);
      await expect.poll(() => page.locator('#totals').isVisible()).toBe(true);
      // One plot per numeric field, in the catalogue's order; text and date fields have none.
      expect(await page.locator('figure.totals').evaluateAll((fs) => fs.map((f) => f.dataset.field))).toEqual([
        'inventory_bulk_wine',
        'inventory_sales',
      ]);
      // The last total as the BI views show it: rounded half away from zero to 2 places, digits grouped.
      const last = (field: string) => page.locator(`figure.totals[data-field="${field}"] .last-total`).innerText();
      expect(await last('inventory_bulk_wine')).toBe(`run ${refused}: 1,234,600.5`);
      expect(await last('inventory_sales')).toBe(`run ${refused}: 10`);
      const labels = await page
        .locator('#totals-inventory_sales a.run-bar')
        .evaluateAll((as) => as.map((a) => [a.getAttribute('data-run'), a.getAttribute('data-label')]));
      expect(labels).toEqual([
        [ids[0], '250.5'],
        [ids[1], '251'],
        [ids[2], '-3.5'],
        [ids[3], '12'],
        [ids[4], '-1,000.13'],
        [refused, '10'],
      ]);
      // The same in the BI view an analyst reads.
      const [view] = await fx.db.rows<{ total: string }>(
        `SELECT total::text FROM "${fx.db.schema}_bi".run_profiles WHERE run_id = $1 AND field = 'inventory_sales'`,
        [ids[4]],
      );
      expect(view!.total).toBe('-1000.13');
      // The warned run: a mark above its bar in the totals and in the other plots, a badge in the runs table.
      for (const plot of ['#totals-inventory_bulk_wine', '#plot-duration', '#plot-received']) {
        const marked = await page
          .locator(`${plot} a.run-bar[data-warned] .warn-mark`)
          .evaluateAll((ms) =>
            ms.map((m) => (m.closest('a') as Element).getAttribute('data-run') + ':' + m.getBoundingClientRect().width),
          );
        expect(
          marked.map((m) => m.split(':')[0]),
          plot,
        ).toEqual([warned]);
        expect(Number(marked[0]!.split(':')[1]), plot).toBeGreaterThan(4);
      }
      const badge = page.locator(`#runs-table tr[data-run="${warned}"] .badge.check-warn`);
      expect(await badge.isVisible()).toBe(true);
      expect(await badge.innerText()).toBe('1 warn');
      expect(await page.locator(`#runs-table tr[data-run="${refused}"] .badge.check-error`).innerText()).toBe(
        '1 error',
      );
      expect(await page.locator('#runs-table .badge.check-warn').count()).toBe(1);
      // The refused run's bar is drawn pale red: what it would have committed.
      expect(
        await page.locator(`#totals-inventory_bulk_wine a.run-bar[data-run="${refused}"] rect.refused`).count(),
      ).toBe(1);
      const fit = await page.evaluate(() => {
        const texts = [...document.querySelectorAll('#totals svg text, figure.totals svg text')] as SVGTextElement[];
        const sizes = texts.map(
          (t) => parseFloat(getComputedStyle(t).fontSize) * Math.hypot(t.getScreenCTM()!.a, t.getScreenCTM()!.b),
        );
        return { scroll: document.documentElement.scrollWidth, inner: innerWidth, smallest: Math.min(...sizes) };
      });
      expect(fit.scroll).toBeLessThanOrEqual(fit.inner);
      expect(fit.smallest).toBeGreaterThanOrEqual(11);
      const lefts = await page
        .locator('figure.totals')
        .evaluateAll((fs) => fs.map((f) => Math.round(f.getBoundingClientRect().left)));
      expect(new Set(lefts).size, `totals plot columns at ${width} px`).toBe(width === 390 ? 1 : 2);
      const shots = process.env.SCREENSHOT_DIR ?? fx.dir;
      mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: join(shots, `checks-overview-${width}.png`), fullPage: true });
      // The part this test is about, from the totals down to the runs table, at full size.
      const clip = await page.evaluate(() => {
        const top = document.querySelector('#totals')!.getBoundingClientRect().top + scrollY;
        const bottom = document.querySelector('#runs-table')!.getBoundingClientRect().bottom + scrollY;
        return { x: 0, y: top - 8, width: innerWidth, height: Math.min(bottom - top + 16, 1400) };
      });
      await page.screenshot({ path: join(shots, `checks-totals-${width}.png`), fullPage: true, clip });

      // The warned run's page: its checks, failed first, observed and expected as stored.
      await page.goto(`${base}/runs/${warned}`);
      expect(await page.locator('#checks').isVisible()).toBe(true);
      expect(await page.locator('h1 .badge.check-warn').innerText()).toBe('1 warn');
      expect(await page.locator('#checks-summary').innerText()).toContain('1 failed at warn level');
      const rows = await page
        .locator('#checks-table tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-check'), tr.getAttribute('data-passed')]));
      expect(rows).toEqual([
        ['total:inventory_bulk_wine', 'false'],
        ['nulls:inventory_sales', 'true'],
        ['volume', 'true'],
      ]);
      const first = await page.locator('#checks-table tbody tr').first().innerText();
      expect(first).toContain(BULK[3]);
      expect(first).toContain('within 50% of 1234580.125');
      expect(first).toContain('failed');
      // The profile: exact, and the total as the BI views show it.
      const bulk = await page.locator('#profile-table tr[data-field="inventory_bulk_wine"]').innerText();
      expect(bulk).toContain(BULK[3]);
      expect(bulk).toContain('1,234,580,125.5');
      await page.screenshot({ path: join(shots, `checks-run-${width}.png`), fullPage: true });
      await page.screenshot({ path: join(shots, `checks-run-top-${width}.png`) });
      await page.locator('#checks-table').screenshot({ path: join(shots, `checks-table-${width}.png`) });
      await page.locator('#profile-table').screenshot({ path: join(shots, `checks-profile-${width}.png`) });

      await page.goto(`${base}/runs/${ids[4]}`);
      expect(await page.locator('#checks-accepted').innerText()).toBe(
        'Let through by a person (run --accept-check): min:inventory_sales.',
      );
      expect(await page.locator('h1 .badge').count()).toBe(0);
      // The refused run: its error first.
      await page.goto(`${base}/runs/${refused}`);
      expect(await page.locator('#checks-table tbody tr').first().getAttribute('data-check')).toBe(
        'min:inventory_sales',
      );
      expect(await page.locator('#checks-summary').innerText()).toContain('refused before commit');
      for (const path of [`/runs/${warned}`, `/runs/${refused}`]) {
        await page.goto(`${base}${path}`);
        const w = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
        expect(w[0], `${path} at ${width} px`).toBeLessThanOrEqual(w[1]);
      }
      expect(problems).toEqual([]);
      await context.close();
    });
  }

  it('the JSON twins carry the totals (exact and BI-rounded), the checks failed first, and the profile', async () => {
    const index = (await (await fetch(`${base}/index.json`)).json()) as {
      runs: Array<{ id: string; checks_warned: string; checks_refused: string }>;
      totals: {
        biScale: number;
        fields: Array<{ field: string; runs: Array<{ id: string; total: string; bi_total: string; failed: null }> }>;
      };
    };
    expect(index.totals.biScale).toBe(2);
    expect(index.totals.fields.map((f) => f.field)).toEqual(['inventory_bulk_wine', 'inventory_sales']);
    expect(index.totals.fields[0]!.runs[0]).toEqual({
      id: ids[0],
      total: BULK[0],
      bi_total: '1234567.89',
      failed: null,
    });
    expect(index.totals.fields[0]!.runs[3]).toMatchObject({ id: warned, failed: 'total:inventory_bulk_wine' });
    expect(index.runs.find((r) => r.id === warned)).toMatchObject({ checks_warned: '1', checks_refused: '0' });
    expect(index.runs.find((r) => r.id === refused)).toMatchObject({ checks_warned: '0', checks_refused: '1' });
    const run = (await (await fetch(`${base}/runs/${refused}.json`)).json()) as {
      checks: Array<{ check_name: string; passed: boolean; severity: string; observed: string; expected: string }>;
      profile: Array<{ field: string; total: string | null; bi_total: string | null }>;
      biScale: number;
    };
    expect(run.checks.map((c) => [c.check_name, c.severity, c.passed, c.observed, c.expected])).toEqual([
      ['min:inventory_sales', 'error', false, '-5.5', '>= 0'],
      ['volume', 'warn', true, '40', 'within 30% of 40'],
    ]);
    expect(run.profile.find((p) => p.field === 'inventory_sales')).toMatchObject({ total: '10', bi_total: '10.00' });
    expect(run.biScale).toBe(2);
  });
});
