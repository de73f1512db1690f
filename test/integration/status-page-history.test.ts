/**
 * The status page's history at some age: 130 runs of every status and trigger, paged
 * by run id through the "older" and "newer" links, filtered by status and trigger, and the
 * freshness verdict as the runs change: fresh, failing, late.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { startCli, type CliProcess } from '../support/harness.js';

const fx = useSyncFixture('pagehist');
let serve: CliProcess;
let base: string;

const ids = (html: string) => [...html.matchAll(/<tr data-run="(\d+)">/g)].map((m) => Number(m[1]));
const link = (html: string, id: 'older' | 'newer') =>
  [...html.matchAll(/<a href="([^"]+)" rel="(?:next|prev)" id="(\w+)">/g)]
    .find((m) => m[2] === id)?.[1]
    ?.replaceAll('&amp;', '&');
const get = async (path: string) => {
  const r = await fetch(`${base}${path}`);
  expect(r.status, path).toBe(200);
  return r.text();
};

beforeAll(async () => {
  // Run i: failed when i % 7 = 0, else succeeded; trigger replay when i % 5 = 0, else schedule.
  await fx.db.rows(
    `INSERT INTO sync_runs (trigger, status, started_at, finished_at, received, app_version)
     SELECT CASE WHEN i % 5 = 0 THEN 'replay' ELSE 'schedule' END,
       CASE WHEN i % 7 = 0 THEN 'failed' ELSE 'succeeded' END,
            now() - (200 - i) * interval '1 minute',
            now() - (200 - i) * interval '1 minute' + interval '5 seconds', i, 'test'
     FROM generate_series(1, 130) AS i`,
  );
  serve = startCli(['serve', '--port', '0'], {
    DATABASE_URL: fx.env.DATABASE_URL!,
    SYNC_DB_SCHEMA: fx.db.schema,
    SYNC_STALE_AFTER: '2h',
  });
  base = JSON.parse(await serve.waitForLog(/serving the status page/)).page.replace(/\/$/, '');
});
afterAll(async () => {
  serve?.kill('SIGTERM');
  await serve?.result;
});

it('pages through every run by id, newest first, and back', async () => {
  const first = await get('/');
  expect(ids(first)).toEqual(Array.from({ length: 50 }, (_, i) => 130 - i));
  expect(link(first, 'newer')).toBeUndefined();
  const second = await get(link(first, 'older')!);
  expect(ids(second)).toEqual(Array.from({ length: 50 }, (_, i) => 80 - i));
  const third = await get(link(second, 'older')!);
  expect(ids(third)).toEqual(Array.from({ length: 30 }, (_, i) => 30 - i));
  expect(link(third, 'older')).toBeUndefined();
  expect(ids(await get(link(third, 'newer')!))).toEqual(ids(second));
  expect(ids(await get(link(second, 'newer')!))).toEqual(ids(first));
});

it('filters by status and by trigger, and keeps the filter while paging', async () => {
  const failed = Array.from({ length: 130 }, (_, i) => 130 - i).filter((i) => i % 7 === 0);
  expect(ids(await get('/?status=failed'))).toEqual(failed);
  const replays = Array.from({ length: 130 }, (_, i) => 130 - i).filter((i) => i % 5 === 0);
  expect(ids(await get('/?trigger=replay'))).toEqual(replays);
  const both = await get('/?status=succeeded&trigger=schedule');
  const expected = Array.from({ length: 130 }, (_, i) => 130 - i).filter((i) => i % 7 !== 0 && i % 5 !== 0);
  expect(ids(both)).toEqual(expected.slice(0, 50));
  const next = link(both, 'older')!;
  expect(next).toContain('status=succeeded');
  expect(ids(await get(next))).toEqual(expected.slice(50, 100));
  // An unknown value is no filter at all, never SQL.
  expect(ids(await get("/?status=x'%20OR%201=1--"))).toHaveLength(50);
});

it('shows a run in progress, and says when its process most likely died', async () => {
  await fx.db.rows(
    `INSERT INTO sync_runs (trigger, status, started_at, app_version)
    VALUES ('schedule', 'running', now() - interval '10 minutes', 'test')`,
  );
  let page = await get('/');
  expect(page).toContain('id="running"');
  expect(page).toContain('<meta http-equiv="refresh" content="5">');
  expect(page).not.toContain('id="stuck"');
  expect(page).toContain('No records parsed yet.');
  // What the run last wrote of its progress (every second), for a page served apart from the daemon.
  await fx.db.rows(`UPDATE sync_runs SET received = 123456, bytes = 31457280 WHERE status = 'running'`);
  page = await get('/');
  expect(page).toContain('123,456 records parsed, 30.0 MiB received so far.');
  await fx.db.rows(`UPDATE sync_runs SET started_at = now() - interval '3 hours' WHERE status = 'running'`);
  page = await get('/');
  expect(page).toContain('It has outlived SYNC_RUN_TIMEOUT_MS');
  await fx.db.rows(`DELETE FROM sync_runs WHERE status = 'running'`);
  expect(await get('/')).not.toContain('id="running"');
});

it('says fresh, failing or late, from the runs', async () => {
  const state = async () => /data-state="(\w+)"/.exec(await get('/'))![1];
  expect(await state()).toBe('fresh'); // run 130 succeeded 70 min ago, within SYNC_STALE_AFTER=2h
  await fx.db.rows(`UPDATE sync_runs SET status = 'failed', error = 'boom' WHERE id = 130`);
  expect(await state()).toBe('failing');
  await fx.db.rows(
    `UPDATE sync_runs SET status = 'succeeded', error = NULL, finished_at = now() - interval '3 hours' WHERE id = 130`,
  );
  await fx.db.rows(`UPDATE sync_runs SET finished_at = now() - interval '4 hours' WHERE id < 130`);
  expect(await state()).toBe('late');
});
