/**
 * The fingerprints are read in id order at the start of every re-sync, by the primary key: rows
 * scattered over the heap (each run's writes, a deploy that rewrites all of them) make that read
 * visit a page per row. A re-sync that finds them out of order (pg_stats, as autovacuum's ANALYZE
 * left it) rewrites them in order; one that finds them in order leaves them.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { recordText } from '../../src/simulator/dataset.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, syncEnv } from '../support/harness.js';
import { listing } from '../support/listing.js';

const fx = useSyncFixture('order');
const N = 20_000;

async function run(path: string): Promise<{ rewritten: boolean; skipped: number }> {
  const r = await runCli(['run', '--from-file', path, '--json'], syncEnv(fx.db));
  expect(r.code, r.stderr).toBe(0);
  return {
    rewritten: r.stderr.includes('fingerprints rewritten in id order'),
    skipped: JSON.parse(r.stdout).skipped_unchanged,
  };
}

/** Rows of the fingerprint table that lie before a row of a smaller id. */
async function outOfOrder(): Promise<number> {
  const [row] = await fx.db.rows<{ n: number }>(
    `SELECT count(*)::int AS n
    FROM (SELECT id, lag(id) OVER (ORDER BY ctid) AS before FROM bulk_wine_reconciliation_source_hash) x
    WHERE before > id`,
  );
  return row!.n;
}

it('a re-sync rewrites the fingerprints in id order when they lie out of it, and leaves them when they do not', async () => {
  const path = join(fx.dir, 'listing.json');
  await writeFile(path, listing(Array.from({ length: N }, (_, i) => recordText(9, i + 1, 1))));
  expect((await run(path)).rewritten).toBe(false);
  await fx.db.rows('ANALYZE bulk_wine_reconciliation_source_hash');
  expect(await run(path)).toEqual({ rewritten: false, skipped: N });
  expect(await outOfOrder()).toBe(0);

  // Every other row's new version goes to the heap's end, as scattered writes leave them.
  await fx.db.rows('UPDATE bulk_wine_reconciliation_source_hash SET hash = hash WHERE id % 2 = 0');
  await fx.db.rows('ANALYZE bulk_wine_reconciliation_source_hash');
  expect(await outOfOrder()).toBeGreaterThan(0);
  expect(await run(path)).toEqual({ rewritten: true, skipped: N });
  expect(await outOfOrder()).toBe(0);
  // The rows still vouch for theirs, and the table was counted again: the next run leaves it.
  expect(await run(path)).toEqual({ rewritten: false, skipped: N });
});
