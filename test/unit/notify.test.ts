import { describe, expect, it } from 'vitest';
import type { RunRow } from '../../src/load/audit.js';
import { notificationBody, notifyEvent, redactedUrl } from '../../src/observe/notify.js';

const run = (status: RunRow['status'], extra: Partial<RunRow> = {}): RunRow => ({
  id: 7, trigger: 'schedule', status, dry_run: false, started_at: '2024-05-01T03:00:00.000Z', finished_at: '2024-05-01T03:00:09.000Z',
  error: status === 'succeeded' ? null : 'listing failed', unknown_fields: [], app_version: '0', source: null,
  reported_count: 3, reported_record_count: 3, received: 3, rejected: 1, duplicates: 0, inserted: 2, updated: 0, unchanged: 0, deleted: 0, restored: 0, bytes: 100,
  ...extra,
});

describe('notifications', () => {
  it('go out on failure and abort, on the first success after a failure, and on every run only with "all"', () => {
    expect(notifyEvent(run('failed'), run('succeeded'), 'failure')).toBe('failed');
    expect(notifyEvent(run('aborted'), undefined, 'failure')).toBe('aborted');
    expect(notifyEvent(run('succeeded'), run('failed'), 'failure')).toBe('recovered');
    expect(notifyEvent(run('succeeded'), run('abandoned'), 'failure')).toBe('recovered');
    expect(notifyEvent(run('succeeded'), run('succeeded'), 'failure')).toBeUndefined();
    expect(notifyEvent(run('succeeded'), undefined, 'failure')).toBeUndefined();
    expect(notifyEvent(run('succeeded'), run('succeeded'), 'all')).toBe('succeeded');
    expect(notifyEvent(run('succeeded'), run('succeeded'), 'failure', [{ name: 'colour', count: 3 }])).toBe('new_fields');
  });

  it('carry a text for chat and the structured fields, including new upstream fields', () => {
    const body = notificationBody({ event: 'failed', run: run('failed'), where: { host: 'sync-1', database: 'db:5432/wine', schema: 'public' }, newFields: [{ name: 'colour', count: 3, kept: { shownAs: null, note: 'name longer than 63 bytes' } }] });
    expect(body).toMatchObject({ event: 'failed', run_id: 7, status: 'failed', trigger: 'schedule', error: 'listing failed', new_fields: [{ name: 'colour', count: 3, kept: { shownAs: null, note: 'name longer than 63 bytes' } }], host: 'sync-1' });
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
