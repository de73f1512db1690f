-- What the BI views (sql/bi/views.sql) do to the live values, counted after a run's changes,
-- inside its transaction. $1 is S = SYNC_BI_SCALE. A value is "rounded" when rounding to S places
-- loses digits but it fits numeric(28,S); "overflow" when even the rounded value has more than
-- 28-S integer digits (NULL in the views). The same rules as the views, so the counts match them.

-- name: count_bi_rounding
SELECT count(*) FILTER (WHERE v <> round(v, $1) AND abs(round(v, $1)) < 10::numeric ^ (28 - $1)) AS rounded,
       count(*) FILTER (WHERE NOT abs(round(v, $1)) < 10::numeric ^ (28 - $1)) AS overflow
FROM bulk_wine_reconciliation b
CROSS JOIN LATERAL (VALUES (b.inventory_bulk_wine), (b.inventory_finished_goods), (b.inventory_sales),
                           (b.vintage_forecast), (b.vintage_make)) AS d (v)
WHERE b.deleted_at IS NULL AND v IS NOT NULL;
