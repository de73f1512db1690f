/**
 * One record as loaded: the shape the transform step produces and the load step stages.
 * Decimals are canonical decimal text, dates 'YYYY-MM-DD': never a JS number or Date.
 */
export const DATA_COLUMNS = [
  'wpi',
  'inventory_bulk_wine',
  'inventory_finished_goods',
  'inventory_sales',
  'vintage_forecast',
  'vintage_make',
  'first_sale',
] as const;

export interface Row {
  id: string;
  wpi: string;
  inventory_bulk_wine: string | null;
  inventory_finished_goods: string | null;
  inventory_sales: string | null;
  vintage_forecast: string | null;
  vintage_make: string | null;
  first_sale: string | null;
}

/** The fields a record may carry, in schema order. */
export const KNOWN_FIELDS = ['id', ...DATA_COLUMNS] as const;
export type KnownField = (typeof KNOWN_FIELDS)[number];

/** The stored form (JSON), as in sync_runs.field_counts. */
export interface FieldCounts {
  /** Records inspected: every array element that is a JSON object. */
  records: number;
  /** Per known field: records that have the key, and records whose value is neither null nor "". */
  fields: Record<KnownField, { present: number; non_null: number }>;
  /** Per unknown field name: records that have it. */
  unknown: Record<string, number>;
  /** True when more than MAX_UNKNOWN_FIELDS distinct unknown names appeared (the others are not listed). */
  unknown_truncated?: boolean;
}
