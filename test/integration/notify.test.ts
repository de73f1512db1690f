import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const fx = useSyncFixture('notify', { simulator: { records: 30 }, each: true });
let hook: Receiver;
beforeEach(async () => {
  hook = await startReceiver();
  fx.onTeardown(() => hook.close());
  fx.env.SYNC_NOTIFY_URL = hook.url;
});

const run = async (extra: Record<string, string> = {}) => {
  const r = await runCli(['run', '--json'], { ...fx.env, ...extra });
  expect(r.stderr).not.toContain('webhook-secret-token-42');
  return { ...r, run: JSON.parse(r.stdout) };
};

describe('SYNC_NOTIFY_URL', () => {
  it('announces an upstream field seen for the first time once, even when only failures are notified', async () => {
    const records = (extra: string) =>
      Array.from(
        { length: 30 },
        (_, i) =>
          `{"id":${i + 1},"wpi":"W${i + 1}","inventory_bulk_wine":"1.5"` +
          `,"inventory_finished_goods":null,"inventory_sales":2` +
          `,"vintage_forecast":null,"vintage_make":null,"first_sale":"2021-03-04"${extra}}`,
      );
    fx.sim.setRecordsJson(records(''));
    expect((await run()).code).toBe(0);
    expect(hook.posts).toHaveLength(0);

    fx.sim.setRecordsJson(records(',"bottling_line":"L2"'));
    const widened = await run();
    expect(widened.code).toBe(0);
    expect(hook.posts).toHaveLength(1);
    const shownAs = `${fx.db.schema}_bi.reconciliation.bottling_line`;
    expect(hook.posts[0]!.body).toMatchObject({
      event: 'new_fields',
      run_id: widened.run.id,
      status: 'succeeded',
      new_fields: [{ name: 'bottling_line', count: 30, kept: { shownAs, note: null } }],
    });
    expect(hook.posts[0]!.body.text).toContain(
      `new field bottling_line in 30 records: kept in extra_fields, shown as ${shownAs}`,
    );

    expect((await run()).code).toBe(0);
    expect(hook.posts).toHaveLength(1);
  });

  it('escapes Slack markup and strips control characters in upstream text: field names arrive as text, not as a ping or a link', async () => {
    const extra = ',"<!channel>":1,"<https://example.com|Log in again>":2,"a&b @here \\u001b[2J":3';
    fx.sim.setRecordsJson(
      Array.from(
        { length: 30 },
        (_, i) =>
          `{"id":${i + 1},"wpi":"W${i + 1}","inventory_bulk_wine":"1.5"` +
          `,"inventory_finished_goods":null,"inventory_sales":2` +
          `,"vintage_forecast":null,"vintage_make":null,"first_sale":"2021-03-04"${extra}}`,
      ),
    );
    const r = await run();
    expect(r.code, r.run.error).toBe(0);
    expect(hook.posts).toHaveLength(1);
    const text = String(hook.posts[0]!.body.text);
    expect(text).toContain('new field &lt;!channel&gt; in 30 records');
    expect(text).toContain('new field &lt;https://example.com|Log in again&gt; in 30 records');
    expect(text).toContain('new field a&amp;b @\u200bhere [2J in 30 records');
    expect(text).not.toMatch(/[<>\u001b]/);
    // The structured fields keep the names exactly, for receivers that read them as data.
    expect((hook.posts[0]!.body.new_fields as Array<{ name: string }>).map((f) => f.name).sort()).toEqual([
      '<!channel>',
      '<https://example.com|Log in again>',
      'a&b @here \u001b[2J',
    ]);
  });

  it('posts once per failure (guard refusals included), once on recovery, never for a success after a success', async () => {
    expect((await run()).code).toBe(0);
    expect((await run()).code).toBe(0);
    expect(hook.posts).toHaveLength(0);

    fx.sim.setFault('html');
    const failed = await run();
    expect(failed.code).toBe(1);
    expect(hook.posts).toHaveLength(1);
    const notice = hook.posts[0]!;
    expect(notice.contentType).toBe('application/json');
    expect(notice.body).toMatchObject({
      event: 'failed',
      run_id: failed.run.id,
      status: 'failed',
      trigger: 'manual',
      error: failed.run.error,
      schema: fx.db.schema,
      started_at: failed.run.started_at,
      finished_at: failed.run.finished_at,
      counts: {
        received: 0,
        rejected: 0,
        duplicates: 0,
        inserted: 0,
        updated: 0,
        unchanged: 0,
        deleted: 0,
        restored: 0,
      },
    });
    expect(notice.body.text).toContain(`run ${failed.run.id} FAILED [manual]`);
    expect(notice.body.text).toContain(`schema ${fx.db.schema}`);
    expect(notice.body.text).toContain('error: listing is text/html');
    fx.sim.setFault(null);

    fx.sim.setRecordsJson([]);
    const refused = await run();
    expect(refused.code).toBe(1);
    expect(hook.posts).toHaveLength(2);
    expect(hook.posts[1]!.body).toMatchObject({
      event: 'failed',
      run_id: refused.run.id,
      error: expect.stringContaining('refusing to soft-delete 30 of 30'),
    });
    fx.sim.setRecordsJson(null);

    const recovered = await run();
    expect(recovered.code).toBe(0);
    expect(hook.posts).toHaveLength(3);
    expect(hook.posts[2]!.body).toMatchObject({
      event: 'recovered',
      run_id: recovered.run.id,
      status: 'succeeded',
      error: null,
    });
    expect(hook.posts[2]!.body.text).toContain('recovered');

    expect((await run()).code).toBe(0);
    expect(hook.posts).toHaveLength(3);
    // Nothing secret travels to the chat channel.
    const bodies = JSON.stringify(hook.posts.map((p) => p.body));
    expect(bodies).not.toContain(fx.sim.password);
    expect(bodies).not.toMatch(/eyJ[\w-]+\.[\w-]+/);
    expect(bodies).not.toContain('webhook-secret-token-42');
  });

  it('decides "recovered" from sync_runs, so a new process after a failure still says so', async () => {
    fx.sim.setFault('server-error', { status: 500 });
    expect((await run({ WINE_API_RETRIES: '1', SYNC_NOTIFY_URL: '' })).code).toBe(1);
    fx.sim.setFault(null);
    expect((await run()).code).toBe(0);
    expect(hook.posts.map((p) => p.body.event)).toEqual(['recovered']);
  });

  it('with SYNC_NOTIFY_ON=all posts every run; the URL can come from SYNC_NOTIFY_URL_FILE', async () => {
    const file = join(fx.dir, 'hook-url');
    await writeFile(file, `${hook.url}\n`);
    const fileEnv = { SYNC_NOTIFY_URL: '', SYNC_NOTIFY_URL_FILE: file, SYNC_NOTIFY_ON: 'all' };
    expect((await run(fileEnv)).code).toBe(0);
    expect((await run(fileEnv)).code).toBe(0);
    expect(hook.posts.map((p) => p.body.event)).toEqual(['succeeded', 'succeeded']);
    expect(hook.posts[0]!.body.counts).toMatchObject({ received: 30, inserted: 30 });
    expect(hook.posts[1]!.body.counts).toMatchObject({ received: 30, unchanged: 30 });
  });

  it('retries a receiver that answers 503, up to 3 attempts', async () => {
    hook.failNext(2, 503);
    fx.sim.setFault('html');
    const r = await run();
    expect(r.code).toBe(1);
    expect(hook.posts).toHaveLength(1);
    expect(r.stderr).toMatch(/"attempts":3.*"msg":"notification sent"/);
  });

  it('a receiver that is down changes neither the outcome nor the exit code, and its URL is never logged', async () => {
    const down = `http://127.0.0.1:${await freePort()}/hooks/T000/B000/webhook-secret-token-42`;
    const ok = await run({ SYNC_NOTIFY_URL: down, SYNC_NOTIFY_ON: 'all' });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.run.status).toBe('succeeded');
    expect(ok.stderr).toMatch(
      /"notifyUrl":"http:\/\/127\.0\.0\.1:\d+\/…".*"attempts":3.*"msg":"notification could not be delivered"/,
    );
    fx.sim.setFault('html');
    const failed = await run({ SYNC_NOTIFY_URL: down });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('notification could not be delivered');
    expect(await fx.db.rows('SELECT status FROM sync_runs ORDER BY id')).toEqual([
      { status: 'succeeded' },
      { status: 'failed' },
    ]);
  });

  it('the daemon notifies a failed run that it does not retry', async () => {
    fx.sim.setFault('html');
    const daemon = startCli(['schedule', '--run-now'], { ...fx.env, SYNC_HEALTH_FILE: join(fx.dir, 'health') });
    try {
      await daemon.waitForLog(/notification sent/);
    } finally {
      daemon.kill('SIGTERM');
    }
    expect((await daemon.result).code).toBe(0);
    expect(hook.posts).toHaveLength(1);
    expect(hook.posts[0]!.body).toMatchObject({
      event: 'failed',
      trigger: 'run-now',
      run_id: 1,
      attempt: 1,
      retry_at: null,
    });
  });
});
