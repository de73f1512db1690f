/**
 * The status page in a real browser: `serve` as a child process on a schema that real
 * runs filled, and Debian's chromium. Every page loads without a console error or a CSP
 * violation; the plots' bars are the runs' numbers and lead to their runs; rejects page; hostile
 * text from the upstream and the database shows as text and never runs; the overview's
 * screenshot (UPDATE_SCREENSHOT=1 writes it to docs/status-page.png, shown in the README).
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

const valid = (id: number, wpi = `W${id}`, extra = '') => `{"id":${id},"wpi":${JSON.stringify(wpi)},"inventory_bulk_wine":"${id}.5","inventory_sales":2,"first_sale":"2021-03-04"${extra}}`;
/** Rejected: inventory_sales is not a number; its raw text carries the hostile strings. */
const invalid = (id: number) => `{"id":${id},"wpi":${JSON.stringify(`${PRE} ${id}`)},"inventory_sales":${JSON.stringify(`${IMG} ${SCRIPT}`)}}`;

const REJECTS = 61;
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
    await sync([...base100.slice(0, 99), valid(100, SCRIPT, `,${JSON.stringify(HOSTILE_FIELD)}:${JSON.stringify(IMG)}`), ...Array.from({ length: REJECTS }, (_, i) => invalid(1000 + i))]);
    // A listing broken where hostile text stands: the run fails, and its error quotes that text.
    await sync([valid(1), `{"id":2,"wpi":"x" ${SCRIPT} ${IMG} ${PRE}}`]);
    await sync(base100.slice(0, 90)); // 10 deleted
    await sync(base100.map((r, i) => (i < 5 ? valid(i + 1, `changed ${i}`) : r)), '--dry-run');
    await sync(base100.map((r, i) => (i < 5 ? valid(i + 1, `changed ${i}`) : r))); // 5 updated, 10 restored

    serve = startCli(['serve', '--port', '0'], { DATABASE_URL: fx.env.DATABASE_URL!, SYNC_DB_SCHEMA: fx.db.schema, SYNC_TIMEZONE: 'Europe/Paris' });
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
    const paths = ['/', '/?plot=90', '/?plot=365', '/?status=failed', '/?trigger=manual', '/fields', ...runIds.map((id) => `/runs/${id}`), `/runs/${runIds[0]}?after=49`];
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
          values: Object.fromEntries([...a.querySelectorAll('rect.bar')].map((r) => [r.getAttribute('data-series'), Number(r.getAttribute('data-value'))])),
        })),
      );
    const rows = await fx.db.rows<Record<string, string>>(
      `SELECT id, status, received, rejected, inserted, updated, deleted, restored, extract(epoch FROM finished_at - started_at) * 1000 AS ms FROM sync_runs ORDER BY id`,
    );
    const n = (v: string) => Number(v);
    expect(await bars('plot-received')).toEqual(rows.map((r) => ({ run: n(r.id!), values: { received: n(r.received!) } })));
    expect(await bars('plot-rejected')).toEqual(rows.map((r) => ({ run: n(r.id!), values: { rejected: n(r.rejected!) } })));
    expect(await bars('plot-changed')).toEqual(
      rows.map((r) => ({ run: n(r.id!), values: { inserted: n(r.inserted!), updated: n(r.updated!), deleted: n(r.deleted!), restored: n(r.restored!) } })),
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
    const rows = await fx.db.rows<{ id: string; phases: Array<{ phase: string; ms: number }> }>('SELECT id, phases FROM sync_runs WHERE id = ANY($1) ORDER BY id', [[runIds[0], runIds[4]]]);
    const [first, later] = rows.map((r) => r.phases.map((p) => p.phase));
    expect(first).toEqual(['download', 'read live rows', 'parse and stage', 'duplicates', 'BI count', 'new fields', 'archive', 'commit']);
    expect(later).toEqual(expect.arrayContaining(['download', 'parse and stage', 'classify', 'apply', 'commit']));
    for (const r of rows) for (const p of r.phases) expect(Number.isInteger(p.ms) && p.ms >= 0).toBe(true);
    const { page, problems } = await watchedPage(context);
    await page.goto(`${base}/runs/${runIds[0]}`);
    expect(await page.locator('#phases g.phase').evaluateAll((gs) => gs.map((g) => [g.getAttribute('data-phase'), Number(g.getAttribute('data-ms'))]))).toEqual(
      rows[0]!.phases.map((p) => [p.phase, p.ms]),
    );
    expect(await page.locator('#archive').textContent()).toContain('Load it again with');
    expect(await page.locator('pre', { hasText: 'replay --run' }).textContent()).toBe(`wine-recon-sync replay --run ${runIds[0]}`);
    expect(problems).toEqual([]);
  });

  it('pages through the rejects of a run, and back', async () => {
    const { page, problems } = await watchedPage(context);
    await page.goto(`${base}/runs/${runIds[0]}`);
    const positions = () => page.locator('#rejects-table tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-position'))));
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
    expect(await page.locator('#runs-table tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-run'))))).toEqual([runIds[1]]);
    await page.goto(`${base}/`);
    expect(await page.locator(`#runs-table tr[data-run="${runIds[3]}"] .badge`).textContent()).toBe('dry run');
    expect(await page.locator('#freshness').getAttribute('data-state')).toBe('fresh');

    // A month of nights for the picture: the generated listing changing a little every night, one night the upstream down.
    const nights = inProcess({ ...fx.env, SYNC_MAX_DELETE_RATIO: '1', WINE_API_RETRIES: '2' });
    fx.sim.setRecordsJson(null);
    for (let night = 0; night < 24; night++) {
      fx.sim.mutate({ change: (night * 7) % 5, add: night % 3, remove: night % 4 === 3 ? 1 : 0 });
      if (night === 17) fx.sim.setFault('server-error', { times: 2 });
      await nights.run({ trigger: 'schedule' }).catch(() => undefined);
    }
    await page.goto(`${base}/`);
    expect(await page.locator('#plot-duration a.run-bar').count()).toBe(29);
    expect(problems).toEqual([]);
    // The README's picture: written into docs/ only when asked, so that `npm test` leaves the tree clean.
    const path = process.env.UPDATE_SCREENSHOT === '1' ? join(ROOT, 'docs', 'status-page.png') : join(fx.dir, 'status-page.png');
    const png = await page.screenshot({ path, fullPage: false, clip: { x: 0, y: 0, width: 1280, height: 1100 } });
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(problems).toEqual([]);
  });
});
