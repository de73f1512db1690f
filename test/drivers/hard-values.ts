/**
 * A listing with the values BI drivers choke on, synced through the real pipeline (the CLI's
 * `run --from-file`), and what every driver must read back. The expected values are written out
 * by hand (not computed by the code under test): the exact tables keep every digit, the BI views
 * hold the value rounded half away from zero to 10 places (SYNC_BI_SCALE's default), or NULL.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { DECIMALS } from '../../bench/realistic-records.js';
import { runCli, syncEnv, tempDir, type CliResult, type TestDb } from '../support/harness.js';

export const SCALE = 10;
export { DECIMALS };
/** The BI views' decimal columns: the catalogue's, then the column of the new upstream field inventoryInTransit. */
export const BI_DECIMALS = [...DECIMALS, 'inventory_in_transit'] as const;
export type Decimal = (typeof DECIMALS)[number];
type Values = Record<Decimal, string | null>;

const record = (id: number, wpi: string, fields: string, firstSale = 'null') =>
  `{"id": ${id}, "wpi": "${wpi}", ${fields}, "first_sale": ${firstSale}}`;

/** Raw JSON text: numbers stay exactly as written here, as an upstream would send them. */
const RECORDS_V1 = [
  record(
    1,
    'HARD-40-FRAC',
    '"inventory_bulk_wine": 0.1234567890123456789012345678901234567891, "inventory_finished_goods": 123456789012345678901234567890, ' +
      '"inventory_sales": 1e-30, "vintage_forecast": -0, "vintage_make": "12.5", "inventoryInTransit": 0.1234567890123456789012345678901234567891, "cellar_note": "north"',
    '"2021-03-04"',
  ),
  record(
    2,
    'HALF-AWAY',
    '"inventory_bulk_wine": 0.00000000005, "inventory_finished_goods": -0.00000000005, "inventory_sales": "2.00000000015", ' +
      '"vintage_forecast": -2.00000000025, "vintage_make": 9.99999999994999, "inventoryInTransit": 0.00000000005',
  ),
  record(
    3,
    'EDGES',
    '"inventory_bulk_wine": 999999999999999999.9999999999, "inventory_finished_goods": 999999999999999999.99999999995, ' +
      '"inventory_sales": -999999999999999999.99999999994, "vintage_forecast": "1.5E+3", "vintage_make": 1234567890123456789, "inventoryInTransit": 12345678901234567890123456789',
    '"2019-12-31T00:00:00.000000Z"',
  ),
  record(
    4,
    'NULLS',
    '"inventory_bulk_wine": null, "inventory_sales": "", "vintage_forecast": null, "vintage_make": 0.5',
  ),
  record(
    5,
    'BIG-NEG',
    '"inventory_bulk_wine": -12345678901234567.12345678905, "inventory_finished_goods": 1e-10, ' +
      '"inventory_sales": "1234567890123456789012345678901234567890.1234567890123456789012345678901234567890", ' +
      '"vintage_forecast": 0.12345678905, "vintage_make": 42, "inventoryInTransit": -2.00000000025',
  ),
];
/** The second listing changes record 2's vintage_make: history gets a closed version. */
const RECORDS_V2 = RECORDS_V1.map((r, i) =>
  i === 1 ? r.replace('"vintage_make": 9.99999999994999', '"vintage_make": -7.77777777775') : r,
);

/** The second listing's whole text, to sync it again. */
export const hardListingV2 = (): string => listing([...RECORDS_V2]);

const listing = (records: string[]) =>
  `{"message": "ok", "count": ${records.length}, "bulk_wine_reconciliation": [\n${records.join(',\n')}\n], ` +
  `"recordCount": ${records.length}}`;

/** Live rows in the exact table after both syncs: every digit as sent (canonical form). */
export const EXACT: Record<string, Values> = {
  '1': {
    inventory_bulk_wine: '0.1234567890123456789012345678901234567891',
    inventory_finished_goods: '123456789012345678901234567890',
    inventory_sales: '0.000000000000000000000000000001',
    vintage_forecast: '0',
    vintage_make: '12.5',
  },
  '2': {
    inventory_bulk_wine: '0.00000000005',
    inventory_finished_goods: '-0.00000000005',
    inventory_sales: '2.00000000015',
    vintage_forecast: '-2.00000000025',
    vintage_make: '-7.77777777775',
  },
  '3': {
    inventory_bulk_wine: '999999999999999999.9999999999',
    inventory_finished_goods: '999999999999999999.99999999995',
    inventory_sales: '-999999999999999999.99999999994',
    vintage_forecast: '1500',
    vintage_make: '1234567890123456789',
  },
  '4': {
    inventory_bulk_wine: null,
    inventory_finished_goods: null,
    inventory_sales: null,
    vintage_forecast: null,
    vintage_make: '0.5',
  },
  '5': {
    inventory_bulk_wine: '-12345678901234567.12345678905',
    inventory_finished_goods: '0.0000000001',
    inventory_sales: '1234567890123456789012345678901234567890.123456789012345678901234567890123456789',
    vintage_forecast: '0.12345678905',
    vintage_make: '42',
  },
};

/**
 * The same rows in the BI view `reconciliation`: rounded half away from zero to 10 places, or NULL;
 * the new upstream field inventoryInTransit (kept in extra_fields) likewise, as its own column.
 */
export const BI: Record<string, Values & { inventory_in_transit: string | null; overflow_columns: string | null }> = {
  '1': {
    inventory_bulk_wine: '0.1234567890',
    inventory_finished_goods: null,
    inventory_sales: '0.0000000000',
    vintage_forecast: '0.0000000000',
    vintage_make: '12.5000000000',
    inventory_in_transit: '0.1234567890',
    overflow_columns: 'inventory_finished_goods',
  },
  '2': {
    inventory_bulk_wine: '0.0000000001',
    inventory_finished_goods: '-0.0000000001',
    inventory_sales: '2.0000000002',
    vintage_forecast: '-2.0000000003',
    vintage_make: '-7.7777777778',
    inventory_in_transit: '0.0000000001',
    overflow_columns: null,
  },
  '3': {
    inventory_bulk_wine: '999999999999999999.9999999999',
    inventory_finished_goods: null,
    inventory_sales: '-999999999999999999.9999999999',
    vintage_forecast: '1500.0000000000',
    vintage_make: null,
    inventory_in_transit: null,
    overflow_columns: 'inventory_finished_goods,vintage_make,inventory_in_transit',
  },
  '4': {
    inventory_bulk_wine: null,
    inventory_finished_goods: null,
    inventory_sales: null,
    vintage_forecast: null,
    vintage_make: '0.5000000000',
    inventory_in_transit: null,
    overflow_columns: null,
  },
  '5': {
    inventory_bulk_wine: '-12345678901234567.1234567891',
    inventory_finished_goods: '0.0000000001',
    inventory_sales: null,
    vintage_forecast: '0.1234567891',
    vintage_make: '42.0000000000',
    inventory_in_transit: '-2.0000000003',
    overflow_columns: 'inventory_sales',
  },
};

/** Record 2's first version, closed by the second sync, as the BI history view shows it. */
export const BI_CLOSED_V1 = { id: '2', vintage_make: '9.9999999999' } as const;

/** After the second sync, the BI views round 10 live values and leave 4 NULL (counted by hand above). */
export const ROUNDED_LIVE = 10;
export const OVERFLOW_LIVE = 4;

/**
 * Syncs both listings through the CLI into the test schema (BI views in `<schema>_bi`); returns the second run's
 * output.
 */
export async function syncHardValues(db: TestDb, extraEnv: Record<string, string> = {}): Promise<CliResult> {
  const dir = await tempDir();
  try {
    let last: CliResult | undefined;
    for (const [name, records] of [
      ['v1.json', RECORDS_V1],
      ['v2.json', RECORDS_V2],
    ] as const) {
      const file = join(dir, name);
      await writeFile(file, listing([...records]));
      last = await runCli(['run', '--from-file', file], syncEnv(db, undefined, extraEnv), 120_000);
      expect(last.code, last.stderr).toBe(0);
    }
    return last!;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Connection settings of the test database, for the drivers' own connection strings. */
export function connectionParts(url: string): {
  host: string;
  port: string;
  database: string;
  user: string;
  password: string;
} {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: u.port || '5432',
    database: decodeURIComponent(u.pathname.slice(1)),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
  };
}
