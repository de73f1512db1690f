/**
 * The status page in a real browser: `serve` as a child process on a schema that real
 * runs filled, and Debian's chromium. Every page loads without a console error or a CSP
 * violation; the plots' bars are the runs' numbers and lead to their runs; rejects page; hostile
 * text from the upstream and the database shows as text and never runs; the overview's
 * screenshots at 1280 and 390 px (UPDATE_SCREENSHOT=1 writes them to docs/, shown in the README);
 * every page fits a phone.
 */
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chromiumAvailable, launchBrowser, watchedPage } from '../support/browser.js';
import { useSyncFixture } from '../support/fixture.js';
import { inProcess, ROOT, runCli, startCli, type CliProcess } from '../support/harness.js';
import { describeWith } from '../support/programs.js';

const SCRIPT = '<script>window.__pwned = "script"</script>';
const IMG = '<img src=x onerror="window.__pwned = \'img\'">';
const PRE = '</pre><script>window.__pwned = "pre"</script>';
const HOSTILE_FIELD = `<img src=x onerror=window.__pwned=1>`;
/** Long text without a space, which a page must wrap rather than widen itself for. */
const LONG_WPI = 'W'.repeat(300);
const LONG_FIELD = `f_${'ä'.repeat(99)}`; // 200 bytes
const LONG_ERROR = 'Ë'.repeat(1000); // 2 kB

const valid = (id: number, wpi = `W${id}`, extra = '') =>
  `{"id":${id},"wpi":${JSON.stringify(wpi)},"inventory_bulk_wine":"${id}.5"` +
  `,"inventory_sales":2,"first_sale":"2021-03-04"${extra}}`;
/** Rejected: inventory_sales is not a number; its raw text carries the hostile strings. */
const invalid = (id: number, wpi = `${PRE} ${id}`) =>
  `{"id":${id},"wpi":${JSON.stringify(wpi)},"inventory_sales":${JSON.stringify(`${IMG} ${SCRIPT}`)}}`;

const REJECTS = 62;
const fx = useSyncFixture('page', { simulator: { records: 400 } });

describeWith('chromium and playwright-core', chromiumAvailable, 'the status page in chromium', () => {
  let browser: Browser;
  let context: BrowserContext;
  let serve: CliProcess;
  let base: string;
  const runIds: number[] = [];

  beforeAll(async () => {
    const env = { ...fx.env, SYNC_MAX_REJECT_RATIO: '0.9', SYNC_MAX_DELETE_RATIO: '1' };
    const sync = async (records: string[], ...args: string[]) => {
      fx.sim.setRecordsJson(records);
      const r = await runCli(['run', '--json', ...args], env);
      runIds.push(JSON.parse(r.stdout).id);
    };
    const base100 = Array.from({ length: 100 }, (_, i) => valid(i + 1));
    // A first load with a hostile wpi, a hostile new field's name, and 61 hostile rejects.
    // The last reject's wpi is 300 characters without a space; record 99 brings a 200-byte field name.
    await sync([
      ...base100.slice(0, 98),
      valid(99, 'W99', `,${JSON.stringify(LONG_FIELD)}:1`),
      valid(100, SCRIPT, `,${JSON.stringify(HOSTILE_FIELD)}:${JSON.stringify(IMG)}`),
      ...Array.from({ length: REJECTS }, (_, i) => invalid(1000 + i, i === REJECTS - 1 ? LONG_WPI : undefined)),
    ]);
    // A listing broken where hostile text stands: the run fails, and its error quotes that text.
    await sync([valid(1), `{"id":2,"wpi":"x" ${SCRIPT} ${IMG} ${PRE}}`]);
    // A 2 kB error in one word before it: no failure writes one, but the pages must wrap whatever the column holds.
    await fx.db.rows('UPDATE sync_runs SET error = $2 || error WHERE id = $1', [runIds[1], LONG_ERROR]);
    await sync(base100.slice(0, 90)); // 10 deleted
    await sync(
      base100.map((r, i) => (i < 5 ? valid(i + 1, `changed ${i}`) : r)),
      '--dry-run',
    );
    await sync(base100.map((r, i) => (i < 5 ? valid(i + 1, `changed ${i}`) : r))); // 5 updated, 10 restored

    serve = startCli(['serve', '--port', '0'], {
      DATABASE_URL: fx.env.DATABASE_URL!,
      SYNC_DB_SCHEMA: fx.db.schema,
      SYNC_TIMEZONE: 'Europe/Paris',
    });
    const line = await serve.waitForLog(/serving the status page/);
    base = JSON.parse(line).page.replace(/\/$/, '');
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 1500 } });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    serve?.kill('SIGTERM');
    await serve?.result;
  });

  it('loads every page with no console error and no CSP violation, and none of the hostile text runs', async () => {
    const { page, problems } = await watchedPage(context);
    const paths = [
      '/',
      '/?plot=90',
      '/?plot=365',
      '/?status=failed',
      '/?trigger=manual',
      '/fields',
      ...runIds.map((id) => `/runs/${id}`),
      `/runs/${runIds[0]}?after=49`,
    ];
    for (const path of paths) {
      const response = await page.goto(`${base}${path}`);
      expect(response?.status(), path).toBe(200);
      expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
      expect(await page.evaluate(() => (window as { __pwned?: unknown }).__pwned), path).toBeUndefined();
      expect(await page.locator('img').count(), path).toBe(0);
    }
    expect(problems).toEqual([]);
  });

  it('shows hostile text as text: wpi and raw rejects, field names, the error', async () => {
    const { page, problems } = await watchedPage(context);
    await page.goto(`${base}/runs/${runIds[0]}`);
    const raws = await page.locator('#rejects-table pre.raw').allTextContents();
    expect(raws[0]).toBe(invalid(1000));
    expect(raws[0]).toContain('</pre><script>');
    expect(raws[0]).toContain('<img src=x onerror=');
    expect(await page.locator('#new-fields .field-name').allTextContents()).toContain(HOSTILE_FIELD);

    await page.goto(`${base}/fields`);
    expect(await page.locator('#discovered .field-name').allTextContents()).toContain(HOSTILE_FIELD);

    const [{ error }] = await fx.db.rows<{ error: string }>('SELECT error FROM sync_runs WHERE id = $1', [runIds[1]]);
    expect(error).toContain('<script>');
    await page.goto(`${base}/runs/${runIds[1]}`);
    expect(await page.locator('#error').textContent()).toBe(error);
    await page.goto(`${base}/?status=failed`);
    expect(await page.locator('#runs-table .error-start').first().textContent()).toBe(error.slice(0, 160));

    // The whole raw text of a reject, as plain text.
    const raw = await page.goto(`${base}/runs/${runIds[0]}/rejects/100/raw`);
    expect(raw?.headers()['content-type']).toBe('text/plain; charset=utf-8');
    expect(await raw?.text()).toBe(invalid(1000));
    // The hostile wpi of a loaded record is in the listing's archive, not on a page: its run's raw text is.
    expect(await page.evaluate(() => (window as { __pwned?: unknown }).__pwned)).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it("draws each run's numbers as its bars, and a bar leads to its run", async () => {
    const { page, problems } = await watchedPage(context);
    await page.goto(`${base}/`);
    const bars = async (chart: string) =>
      page.locator(`#${chart} a.run-bar`).evaluateAll((links) =>
        links.map((a) => ({
          run: Number(a.getAttribute('data-run')),
          values: Object.fromEntries(
            [...a.querySelectorAll('rect.bar')].map((r) => [
              r.getAttribute('data-series'),
              Number(r.getAttribute('data-value')),
            ]),
          ),
        })),
      );
    const rows = await fx.db.rows<Record<string, string>>(
      `SELECT id, status, received, rejected, inserted, updated, deleted, restored,
        extract(epoch FROM finished_at - started_at) * 1000 AS ms FROM sync_runs ORDER BY id`,
    );
    const n = (v: string) => Number(v);
    expect(await bars('plot-received')).toEqual(
      rows.map((r) => ({ run: n(r.id!), values: { received: n(r.received!) } })),
    );
    expect(await bars('plot-rejected')).toEqual(
      rows.map((r) => ({ run: n(r.id!), values: { rejected: n(r.rejected!) } })),
    );
    expect(await bars('plot-changed')).toEqual(
      rows.map((r) => ({
        run: n(r.id!),
        values: { inserted: n(r.inserted!), updated: n(r.updated!), deleted: n(r.deleted!), restored: n(r.restored!) },
      })),
    );
    // The plots' table twin: the same numbers, run by run.
    const twin = await page
      .locator('#plot-data tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(twin.map((t) => [t[0], ...t.slice(3)].map((v) => Number(v!.replaceAll(',', ''))))).toEqual(
      rows.map((r) => [r.id, r.inserted, r.updated, r.deleted, r.restored, r.received, r.rejected].map(n)),
    );
    const durations = await bars('plot-duration');
    expect(durations.map((b) => b.run)).toEqual(rows.map((r) => n(r.id!)));
    durations.forEach((b, i) => expect(b.values[rows[i]!.status!]).toBeCloseTo(n(rows[i]!.ms!), 6));
    expect(rows.map((r) => r.status)).toContain('failed');

    await page.locator(`#plot-received a.run-bar[data-run="${runIds[3]}"]`).click();
    await page.waitForURL(`${base}/runs/${runIds[3]}`);
    expect(await page.locator('h1').textContent()).toContain(`Run ${runIds[3]}`);
    expect(await page.locator('h1 .badge').textContent()).toBe('dry run');
    expect(await page.locator('#phases g.phase').count()).toBeGreaterThan(3);
    expect(problems).toEqual([]);
  });

  it("stores each run's phase times with it, in the order they started, and draws them", async () => {
    const rows = await fx.db.rows<{ id: string; phases: Array<{ phase: string; ms: number }> }>(
      'SELECT id, phases FROM sync_runs WHERE id = ANY($1) ORDER BY id',
      [[runIds[0], runIds[4]]],
    );
    const [first, later] = rows.map((r) => r.phases.map((p) => p.phase));
    expect(first).toEqual([
      'download',
      'read live rows',
      'parse and stage',
      'duplicates',
      'BI count',
      'new fields',
      'profile',
      'checks',
      'archive',
      'commit',
    ]);
    expect(later).toEqual(expect.arrayContaining(['download', 'parse and stage', 'classify', 'apply', 'commit']));
    for (const r of rows) for (const p of r.phases) expect(Number.isInteger(p.ms) && p.ms >= 0).toBe(true);
    const { page, problems } = await watchedPage(context);
    await page.goto(`${base}/runs/${runIds[0]}`);
    expect(
      await page
        .locator('#phases g.phase')
        .evaluateAll((gs) => gs.map((g) => [g.getAttribute('data-phase'), Number(g.getAttribute('data-ms'))])),
    ).toEqual(rows[0]!.phases.map((p) => [p.phase, p.ms]));
    expect(await page.locator('#archive').textContent()).toContain('Load it again with');
    expect(await page.locator('pre', { hasText: 'replay --run' }).textContent()).toBe(
      `wine-recon-sync replay --run ${runIds[0]}`,
    );
    // The archive's sizes say what they are: the document as parsed, and as kept compressed.
    const [archived] = await fx.db.rows<{ bytes: string; stored_bytes: string; algorithm: string }>(
      'SELECT bytes, stored_bytes, algorithm FROM sync_payloads WHERE run_id = $1',
      [runIds[0]],
    );
    expect(await page.locator('#archive-decoded').textContent()).toBe(
      `${(Number(archived!.bytes) / 1024).toFixed(1)} KiB decoded`,
    );
    expect(await page.locator('#archive-stored').textContent()).toBe(
      `kept as ${(Number(archived!.stored_bytes) / 1024).toFixed(1)} KiB of ${archived!.algorithm}`,
    );

    // The run page answers first: status, duration, trigger and the counts, then the error, then the rest.
    const [run] = await fx.db.rows<Record<string, string | null>>(
      'SELECT received, inserted, updated, deleted, restored, unchanged, rejected, kept_on_reject FROM sync_runs WHERE id = $1',
      [runIds[1]],
    );
    await page.goto(`${base}/runs/${runIds[1]}`);
    const counts = await page
      .locator('#counts li')
      .evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-count'), li.querySelector('strong')!.textContent]));
    expect(counts).toEqual(
      Object.entries(run!).map(([k, v]) => [k, v === null ? '–' : Number(v).toLocaleString('en-US')]),
    );
    expect(await page.locator('#summary').textContent()).toMatch(/^manual run, started .*, took \d/);
    const order = await page.evaluate(() =>
      ['h1', '#summary', '#counts', '#error', '#phases', '#rejects', '#archive'].map(
        (q) => document.querySelector(q)!.getBoundingClientRect().top,
      ),
    );
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(problems).toEqual([]);
  });

  it('pages through the rejects of a run, and back', async () => {
    const { page, problems } = await watchedPage(context);
    await page.goto(`${base}/runs/${runIds[0]}`);
    const positions = () =>
      page
        .locator('#rejects-table tbody tr')
        .evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-position'))));
    const first = await positions();
    expect(first).toEqual(Array.from({ length: 50 }, (_, i) => 100 + i));
    await page.locator('#rejects-next').click();
    expect(await positions()).toEqual(Array.from({ length: REJECTS - 50 }, (_, i) => 150 + i));
    expect(await page.locator('#rejects-next').count()).toBe(0);
    await page.locator('#rejects-previous').click();
    expect(await positions()).toEqual(first);
    const reasons = await page.locator('#reasons tbody tr').allTextContents();
    expect(reasons[0]).toContain('inventory_sales');
    expect(reasons[0]).toContain(String(REJECTS));
    expect(problems).toEqual([]);
  });

  it('filters the runs and marks dry runs; takes the screenshot of the overview', async () => {
    const { page, problems } = await watchedPage(context);
    await page.goto(`${base}/`);
    await page.selectOption('select[name=status]', 'failed');
    await page.locator('form.filters button').click();
    await page.waitForURL(/status=failed/);
    expect(
      await page
        .locator('#runs-table tbody tr')
        .evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-run')))),
    ).toEqual([runIds[1]]);
    await page.goto(`${base}/`);
    expect(await page.locator(`#runs-table tr[data-run="${runIds[3]}"] .badge`).textContent()).toBe('dry run');
    expect(await page.locator('#freshness').getAttribute('data-state')).toBe('fresh');

    // A month of nights for the picture: the generated listing changing a little every night, one night the upstream
    // down.
    const nights = inProcess({ ...fx.env, SYNC_MAX_DELETE_RATIO: '1', WINE_API_RETRIES: '2' });
    fx.sim.setRecordsJson(null);
    for (let night = 0; night < 24; night++) {
      fx.sim.mutate({ change: (night * 7) % 5, add: night % 3, remove: night % 4 === 3 ? 1 : 0 });
      if (night === 17) fx.sim.setFault('server-error', { times: 2 });
      await nights.run({ trigger: 'schedule' }).catch(() => undefined);
    }
    await page.goto(`${base}/`);
    expect(await page.locator('#plot-duration a.run-bar').count()).toBe(29);
    expect(await page.locator('#plots').textContent()).toBe('The last 29 runs');
    expect(problems).toEqual([]);
    // The README's pictures, wide and on a phone: written into docs/ only when asked, so that `npm test` leaves the
    // tree clean.
    const shots = process.env.UPDATE_SCREENSHOT === '1' ? join(ROOT, 'docs') : fx.dir;
    for (const [width, height, file] of [
      [1280, 1100, 'status-page.png'],
      [390, 1500, 'status-page-phone.png'],
    ] as const) {
      await page.setViewportSize({ width, height: 844 });
      await page.goto(`${base}/`);
      const png = await page.screenshot({
        path: join(shots, file),
        fullPage: true,
        clip: { x: 0, y: 0, width, height },
      });
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect(png.readUInt32BE(16)).toBe(width);
    }
    expect(problems).toEqual([]);
  });

  it('fits a 390 px phone and a 1280 px screen: no page scrolls sideways, plot text is 11 px or more, each run id sits under its bar', async () => {
    const failed = runIds[1]!;
    const paths = [
      '/',
      `/runs/${runIds[0]}`,
      `/runs/${runIds[0]}?after=149#rejects`,
      `/runs/${runIds[0]}/rejects?after=149`,
      `/runs/${failed}`,
      '/fields',
      '/runs/999999999',
      `/${'x'.repeat(300)}`,
    ];
    for (const width of [390, 1280]) {
      const narrow = await browser.newContext({ viewport: { width, height: 844 } });
      const { page, problems } = await watchedPage(narrow);
      for (const path of paths) {
        await page.goto(`${base}${path}`);
        // The rejects' own address leads to them on the run page, their paging kept.
        if (path.includes('/rejects')) expect(page.url()).toBe(`${base}/runs/${runIds[0]}?after=149#rejects`);
        const m = await page.evaluate(() => {
          const texts = [...document.querySelectorAll('svg text')] as SVGTextElement[];
          // What a reader sees: the computed size times the drawing's scale on the screen.
          const sizes = texts.map((t) => {
            const ctm = t.getScreenCTM()!;
            return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(ctm.a, ctm.b);
          });
          const outside = texts.filter((t) => {
            const box = t.getBoundingClientRect();
            const frame = t.ownerSVGElement!.getBoundingClientRect();
            return box.left < frame.left - 1 || box.right > frame.right + 1;
          });
          return {
            scrollWidth: document.documentElement.scrollWidth,
            innerWidth,
            smallest: Math.min(...sizes),
            outside: outside.map((t) => t.textContent),
          };
        });
        expect(m.scrollWidth, `${path} at ${width} px`).toBeLessThanOrEqual(m.innerWidth);
        if (path.startsWith('/runs/9999') || path.startsWith('/x')) continue;
        expect(m.smallest, `${path} at ${width} px`).toBeGreaterThanOrEqual(11);
        expect(m.outside, `${path} at ${width} px`).toEqual([]);
      }
      await page.goto(`${base}/`);
      // Every run id under the x axis is centred on its own bar, as drawn on the screen.
      const offsets = await page.locator('#plot-changed text.x-label').evaluateAll((labels) =>
        labels.map((label) => {
          const bar = label
            .ownerSVGElement!.querySelector(`a.run-bar[data-run="${label.getAttribute('data-run')}"] rect.hit`)!
            .getBoundingClientRect();
          const box = label.getBoundingClientRect();
          return Math.abs(box.left + box.width / 2 - (bar.left + bar.width / 2));
        }),
      );
      expect(offsets.length).toBeGreaterThan(1);
      expect(Math.max(...offsets)).toBeLessThan(1);
      // One plot per row on the phone.
      const lefts = await page
        .locator('.charts figure')
        .evaluateAll((fs) => fs.map((f) => f.getBoundingClientRect().left));
      expect(new Set(lefts).size, `plot columns at ${width} px`).toBe(width === 390 ? 1 : 3);
      // The runs table: what matters on a phone, everything on a wide screen.
      const shown = await page
        .locator(`#runs-table tr[data-run="${failed}"] td`)
        .evaluateAll((tds) =>
          tds.filter((td) => getComputedStyle(td).display !== 'none').map((td) => td.textContent!.trim()),
        );
      const [row] = await fx.db.rows<Record<string, string>>('SELECT trigger, received FROM sync_runs WHERE id = $1', [
        failed,
      ]);
      expect(shown.at(-1)).toBe(LONG_ERROR.slice(0, 160));
      if (width === 390)
        expect(shown.slice(0, 2).concat(shown.slice(4, 5), [String(shown.length)])).toEqual([
          String(failed),
          'failed',
          '0',
          '6',
        ]); // run, status, started, duration, rows changed, error
      else
        expect([...shown.slice(0, 3), shown[5], shown.length]).toEqual([
          String(failed),
          row!.trigger,
          'failed',
          row!.received,
          13,
        ]);
      // The error pages' own 404s are what they should be; nothing else.
      expect(problems.filter((p) => !p.includes('status of 404'))).toEqual([]);
      await narrow.close();
    }
  });
});
