-- What the BI views (sql/bi/views.sql) do to the live values, counted after a run's changes,
-- inside its transaction. $1 is S = SYNC_BI_SCALE; $2 the smallest magnitude whose rounding to S
-- places needs more than 28-S integer digits (10^(28-S) - 5*10^-(S+1), e.g. 999999999999999999.99999999995).
-- "rounded": the value loses fractional digits in the views but fits numeric(28,S); "overflow": it
-- is NULL there. scale() is exact here because the exact tables hold canonical decimals (no
-- trailing zeros), and it is about five times cheaper than comparing with round() on a million rows.

-- name: count_bi_rounding
SELECT count(*) FILTER (WHERE scale(inventory_bulk_wine) > $1 AND abs(inventory_bulk_wine) < $2)
     + count(*) FILTER (WHERE scale(inventory_finished_goods) > $1 AND abs(inventory_finished_goods) < $2)
     + count(*) FILTER (WHERE scale(inventory_sales) > $1 AND abs(inventory_sales) < $2)
     + count(*) FILTER (WHERE scale(vintage_forecast) > $1 AND abs(vintage_forecast) < $2)
     + count(*) FILTER (WHERE scale(vintage_make) > $1 AND abs(vintage_make) < $2) AS rounded,
       count(*) FILTER (WHERE abs(inventory_bulk_wine) >= $2)
     + count(*) FILTER (WHERE abs(inventory_finished_goods) >= $2)
     + count(*) FILTER (WHERE abs(inventory_sales) >= $2)
     + count(*) FILTER (WHERE abs(vintage_forecast) >= $2)
     + count(*) FILTER (WHERE abs(vintage_make) >= $2) AS overflow
FROM bulk_wine_reconciliation
WHERE deleted_at IS NULL;
