/**
 * A usage mistake is not a failed run: a --from-file that cannot be read or a --run with nothing
 * to replay exits 2 with one sentence, records no run and notifies no one (a real webhook
 * receiver listens throughout).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

// SYNC_NOTIFY_ON=all: any run, and any "could not run" error, would be posted.
const fx = useSyncFixture('usage_mistakes', {
  simulator: { records: 10 },
  env: { SYNC_NOTIFY_ON: 'all', SYNC_ARCHIVE_KEEP: '2' },
});
let hook: Receiver;
beforeAll(async () => {
  hook = await startReceiver();
  fx.onTeardown(() => hook.close());
  fx.env.SYNC_NOTIFY_URL = hook.url;
});

const runCount = async () => (await fx.db.rows<{ n: number }>('SELECT count(*)::int AS n FROM sync_runs'))[0]!.n;

/** The CLI must exit 2 with exactly one line on stderr, record no run and post nothing. */
async function mistake(args: string[], sentence: string): Promise<void> {
  const runsBefore = await runCount();
  const postsBefore = hook.posts.length;
  const r = await runCli(args, fx.env);
  expect(r.code, r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(`Error: ${sentence}\n`);
  expect(await runCount()).toBe(runsBefore);
  expect(hook.posts).toHaveLength(postsBefore);
}

describe('usage mistakes exit 2, record no run and notify no one', () => {
  it('a --from-file that does not exist, is a directory, or sits under a file', async () => {
    await mistake(
      ['run', '--from-file', '/nonexistent.json'],
      'cannot read --from-file /nonexistent.json: no such file; no run was recorded',
    );
    await mkdir(join(fx.dir, 'folder'));
    await mistake(
      ['run', '--from-file', join(fx.dir, 'folder')],
      `cannot read --from-file ${join(fx.dir, 'folder')}: it is a directory, not a listing file; no run was recorded`,
    );
    await writeFile(join(fx.dir, 'plain'), '{}');
    await mistake(
      ['run', '--dry-run', '--from-file', join(fx.dir, 'plain', 'listing.json')],
      `cannot read --from-file ${join(fx.dir, 'plain', 'listing.json')}` +
        `: a part of the path is not a directory; no run was recorded`,
    );
    expect(await runCount()).toBe(0);
  });

  it('a --run that does not exist', async () => {
    await mistake(
      ['replay', '--run', '999'],
      'cannot replay run 999: there is no such run in sync_runs (wine-recon-sync status lists them); no run was recorded',
    );
  });

  it('a replay of a run without a payload says why: failed, dry run, pruned, or an identical listing archived by an earlier run', async () => {
    const json = async (args: string[]) => {
      const r = await runCli([...args, '--json'], fx.env);
      return JSON.parse(r.stdout) as { id: number; status: string };
    };
    fx.sim.setFault('html');
    const failed = await json(['run']);
    fx.sim.setFault(null);
    expect(failed.status).toBe('failed');
    const dry = await json(['run', '--dry-run']);
    const first = await json(['run']);
    fx.sim.mutate({ change: 2 });
    const second = await json(['run']);
    fx.sim.mutate({ change: 2 });
    const third = await json(['run']);
    const same = await json(['run']);
    expect([dry, first, second, third, same].map((r) => r.status)).toEqual(Array(5).fill('succeeded'));
    expect(await fx.db.rows('SELECT run_id::int FROM sync_payloads ORDER BY run_id')).toEqual([
      { run_id: second.id },
      { run_id: third.id },
    ]);
    // Only the failed run and the six runs were notified (SYNC_NOTIFY_ON=all); the mistakes below add nothing.
    expect(hook.posts).toHaveLength(6);

    await mistake(
      ['replay', '--run', String(failed.id)],
      `cannot replay run ${failed.id}: it failed, and only successful runs archive their listing; no run was recorded`,
    );
    await mistake(
      ['replay', '--run', String(dry.id), '--dry-run'],
      `cannot replay run ${dry.id}: it was a dry run, which archives nothing; no run was recorded`,
    );
    await mistake(
      ['replay', '--run', String(first.id)],
      `cannot replay run ${first.id}` +
        `: its payload was pruned: only the newest SYNC_ARCHIVE_KEEP payloads are kept` +
        `, and the oldest still archived is run ${second.id}'s` +
        `; no run was recorded`,
    );
    await mistake(
      ['replay', '--run', String(same.id)],
      `cannot replay run ${same.id}` +
        `: it archived no payload of its own, because its listing was identical to the newest archived one` +
        ` (run ${third.id}'s: replay --run ${third.id})` +
        ` or SYNC_ARCHIVE_KEEP was 0 then; no run was recorded`,
    );

    const replay = await runCli(['replay', '--run', String(third.id), '--json'], fx.env);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ trigger: 'replay', status: 'succeeded' });
  });
});
