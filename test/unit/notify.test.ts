import { describe, expect, it } from 'vitest';
import type { RunRow } from '../../src/load/audit.js';
import { notificationBody, notifyEvent, redactedUrl } from '../../src/observe/notify.js';

const run = (status: RunRow['status'], extra: Partial<RunRow> = {}): RunRow => ({
  id: 7,
  trigger: 'schedule',
  status,
  dry_run: false,
  started_at: '2024-05-01T03:00:00.000Z',
  finished_at: '2024-05-01T03:00:09.000Z',
  error: status === 'succeeded' ? null : 'listing failed',
  unknown_fields: [],
  app_version: '0',
  source: null,
  attempt: 1,
  retry_of: null,
  retry_at: null,
  reported_count: 3,
  reported_record_count: 3,
  received: 3,
  rejected: 1,
  duplicates: 0,
  inserted: 2,
  updated: 0,
  unchanged: 0,
  deleted: 0,
  restored: 0,
  bytes: 100,
  ...extra,
});

const FAILURE = { on: 'failure', retries: false } as const;
const ALL = { on: 'all', retries: false } as const;
const RETRY = { on: 'failure', retries: true } as const;

describe('notifications', () => {
  it('go out on failure and abort, on the first success after a failure, and on every run only with "all"', () => {
    expect(notifyEvent(run('failed'), run('succeeded'), FAILURE)).toBe('failed');
    expect(notifyEvent(run('aborted'), undefined, FAILURE)).toBe('aborted');
    expect(notifyEvent(run('succeeded'), run('failed'), FAILURE)).toBe('recovered');
    expect(notifyEvent(run('succeeded'), run('abandoned'), FAILURE)).toBe('recovered');
    expect(notifyEvent(run('succeeded'), run('succeeded'), FAILURE)).toBeUndefined();
    expect(notifyEvent(run('succeeded'), undefined, FAILURE)).toBeUndefined();
    expect(notifyEvent(run('succeeded'), run('succeeded'), ALL)).toBe('succeeded');
    expect(notifyEvent(run('succeeded'), run('succeeded'), FAILURE, [{ name: 'colour', count: 3 }])).toBe('new_fields');
  });

  it('wait for the daemon to give up on a failure it retries, unless SYNC_NOTIFY_ON has retry', () => {
    const pending = { attempt: 1, attempts: 4, retryAt: new Date('2024-05-01T03:05:09Z'), firstError: null };
    expect(notifyEvent(run('failed'), undefined, FAILURE, [], pending)).toBeUndefined();
    expect(notifyEvent(run('failed'), undefined, RETRY, [], pending)).toBe('retrying');
    expect(
      notifyEvent(run('failed'), undefined, FAILURE, [], {
        attempt: 4,
        attempts: 4,
        retryAt: null,
        firstError: 'HTTP 503',
        ended: 'retries-spent',
      }),
    ).toBe('failed');
    // A success after a retried attempt that nobody was told of is no recovery.
    expect(notifyEvent(run('succeeded'), run('failed', { retry_at: '2024-05-01T03:05:09Z' }), FAILURE)).toBeUndefined();
    expect(notifyEvent(run('succeeded'), run('failed', { retry_at: '2024-05-01T03:05:09Z' }), RETRY)).toBe('recovered');
  });

  it("say which attempt gave up, and the first attempt's error when it differed", () => {
    const body = notificationBody({
      event: 'failed',
      run: run('failed', { attempt: 4, retry_of: 4, error: 'HTTP 502' }),
      where: { host: 'sync-1', database: 'db:5432/wine', schema: 'public' },
      chain: { attempt: 4, attempts: 4, retryAt: null, firstError: 'HTTP 503', ended: 'retries-spent' },
    });
    expect(body).toMatchObject({ attempt: 4, attempts: 4, retry_of: 4, retry_at: null, first_error: 'HTTP 503' });
    expect(String(body.text)).toContain(
      "error: HTTP 502\nattempt 4 of 4, every retry spent\nfirst attempt's error: HTTP 503\n",
    );
  });

  it('carry a text for chat and the structured fields, including new upstream fields', () => {
    const body = notificationBody({
      event: 'failed',
      run: run('failed'),
      where: { host: 'sync-1', database: 'db:5432/wine', schema: 'public' },
      newFields: [{ name: 'colour', count: 3, kept: { shownAs: null, note: 'name longer than 63 bytes' } }],
    });
    expect(body).toMatchObject({
      event: 'failed',
      run_id: 7,
      status: 'failed',
      trigger: 'schedule',
      error: 'listing failed',
      new_fields: [{ name: 'colour', count: 3, kept: { shownAs: null, note: 'name longer than 63 bytes' } }],
      host: 'sync-1',
    });
    expect(body.text).toBe(
      'wine-recon-sync run 7 FAILED [schedule] on db:5432/wine, schema public (host sync-1)\n' +
        'received 3, rejected 1, duplicates 0, inserted 2, updated 0, unchanged 0, deleted 0, restored 0\n' +
        'error: listing failed\nnew field colour in 3 records: kept in extra_fields only (name longer than 63 bytes)\nstarted 2024-05-01T03:00:00.000Z, finished 2024-05-01T03:00:09.000Z',
    );
  });

  it('log a webhook URL without its path, where the secret is', () => {
    expect(redactedUrl('https://hooks.slack.com/services/T0/B0/XYZsecret')).toBe('https://hooks.slack.com/…');
  });
});
