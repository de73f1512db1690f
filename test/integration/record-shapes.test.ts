/**
 * The shapes stored with the fingerprints (src/fingerprints/shapes.ts, migration 0014): a re-sync
 * counts the records it skips unread by them, so a shape must be right or not used at all. A
 * description edited behind the program's back is ignored (its records are read), and shapes no
 * fingerprint refers to are pruned once they are many.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { recordText } from '../../src/simulator/dataset.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli, syncEnv } from '../support/harness.js';
import { listing } from '../support/listing.js';

const fx = useSyncFixture('shapes');
const N = 6000;

/** Records of several shapes: some with an unknown member, some with a null field. */
function records(): string[] {
  return Array.from({ length: N }, (_, i) => {
    const text = recordText(5, i + 1, 1);
    if (i % 3 === 1) return text.replace(/}$/, ',"lot_code":"L7"}');
    if (i % 3 === 2) return text.replace(/"vintage_make":[^,}]+/, '"vintage_make":null');
    return text;
  });
}

async function run(path: string): Promise<{ skipped: number; unread: number; fieldCounts: unknown }> {
  const r = await runCli(['run', '--from-file', path, '--json'], syncEnv(fx.db));
  expect(r.code, r.stderr).toBe(0);
  const staged = r.stderr
    .split('\n')
    .filter((line) => line.includes('listing parsed and staged'))
    .map((line) => JSON.parse(line) as { unchangedSkipped: number; unread: number })[0]!;
  return { skipped: staged.unchangedSkipped, unread: staged.unread, fieldCounts: JSON.parse(r.stdout).field_counts };
}

it('counts skipped records by their shape, ignores a tampered shape, and prunes shapes nothing refers to', async () => {
  const path = join(fx.dir, 'listing.json');
  await writeFile(path, listing(records()));
  const first = await run(path);
  const stored = await fx.db.rows<{ n: number }>(
    'SELECT count(*)::int AS n FROM bulk_wine_reconciliation_source_shape',
  );
  expect(stored[0]!.n).toBeGreaterThanOrEqual(3);

  const again = await run(path);
  expect(again.skipped).toBe(N);
  expect(again.unread).toBeGreaterThan(0.9 * N);
  expect(again.fieldCounts).toEqual(first.fieldCounts);

  // An edited description no longer digests to its number: its records are read, and counted alike.
  await fx.db.rows(`UPDATE bulk_wine_reconciliation_source_shape SET description = replace(description, '[', '[ ')`);
  const tampered = await run(path);
  expect(tampered).toEqual({ skipped: N, unread: 0, fieldCounts: first.fieldCounts });

  // Thousands of shapes nothing refers to (the edited ones too) are dropped by the next run; the
  // rows it compared stored their shapes again.
  await fx.db.rows(
    `INSERT INTO bulk_wine_reconciliation_source_shape SELECT g, '[0,0,[]]' FROM generate_series(100, 2200) g
    ON CONFLICT DO NOTHING`,
  );
  await fx.db.rows('UPDATE bulk_wine_reconciliation_source_hash SET hash = NULL');
  const compared = await run(path);
  expect(compared).toMatchObject({ skipped: 0, unread: 0, fieldCounts: first.fieldCounts });
  const left = await fx.db.rows<{ n: number; unreferenced: number }>(
    `SELECT count(*)::int AS n,
            count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM bulk_wine_reconciliation_source_hash h
                                               WHERE h.shape = p.shape))::int AS unreferenced
     FROM bulk_wine_reconciliation_source_shape p`,
  );
  expect(left).toEqual([{ n: stored[0]!.n, unreferenced: 0 }]);
  const last = await run(path);
  expect(last.unread).toBeGreaterThan(0.9 * N);
});
