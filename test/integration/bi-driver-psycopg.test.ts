/**
 * psycopg2 (Debian's python3-psycopg2), the driver of Superset and of Python notebooks: Decimal
 * values with every digit from the exact table, and rounded from the BI views.
 * One python process for the whole file.
 */
import { beforeAll, expect, it } from 'vitest';
import { BI, BI_CLOSED_V1, BI_DECIMALS, DECIMALS, EXACT, SCALE, syncHardValues } from '../drivers/hard-values.js';
import { type DriverOutput, decimalsById, readViews } from '../drivers/read-views.js';
import { describeWithDriver, findPython } from '../support/drivers.js';
import { useSyncFixture } from '../support/fixture.js';

const probe = findPython('psycopg2');

describeWithDriver(
  'psycopg2 reads the exact table and the BI views',
  'missing' in probe ? probe.missing : undefined,
  () => {
    const fx = useSyncFixture('bipsycopg');
    let out: DriverOutput;
    beforeAll(async () => {
      await syncHardValues(fx.db);
      out = await readViews((probe as { python: string }).python, 'psycopg2', fx.db);
    }, 240_000);

    it('the exact table: Decimal values with every digit', () => {
      expect(decimalsById(out.exact!, false, DECIMALS)).toEqual(EXACT);
    });

    it('the BI views: Decimal values rounded to S places, NULL where they cannot fit', () => {
      expect(decimalsById(out.views.reconciliation)).toEqual(BI);
      const history = decimalsById(out.views.reconciliation_history, true);
      expect(Object.keys(history)).toHaveLength(6);
      expect(Object.values(history).map((r) => r.vintage_make)).toContain(BI_CLOSED_V1.vintage_make);
    });

    it('the description carries precision 28 and scale S for every BI decimal', () => {
      const decimals = out.views.reconciliation.columns.filter((c) =>
        (BI_DECIMALS as readonly string[]).includes(c.name),
      );
      expect(decimals.map((c) => [c.name, c.precision, c.scale])).toEqual(BI_DECIMALS.map((c) => [c, 28, SCALE]));
    });
  },
);
