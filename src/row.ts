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
