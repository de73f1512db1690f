-- What the BI views (sql/bi/views.sql) do to the live values, counted after a run's changes,
-- inside its transaction. $1 is S = SYNC_BI_SCALE; $2 the smallest magnitude whose rounding to S
-- places needs more than P-S integer digits (P = BI_PRECISION, 28, src/bi-types.ts: 10^(P-S) - 5*10^-(S+1),
-- e.g. 999999999999999999.99999999995 for S = 10).
-- "rounded": the value loses fractional digits in the views but fits numeric(P,S); "overflow": it
-- is NULL there. scale() is exact here because the exact tables hold canonical decimals (no
-- trailing zeros), and it is about five times cheaper than comparing with round() on a million rows.
-- Summed over the decimal fields of the catalogue (src/fields.ts, rendered by src/db/field-sql.ts):
--   {{decimals_rounded_count}}  count(*) FILTER (WHERE scale(c) > $1 AND abs(c) < $2) + ... per decimal c
--   {{decimals_overflow_count}} count(*) FILTER (WHERE abs(c) >= $2) + ... per decimal c

-- name: count_bi_rounding
SELECT {{decimals_rounded_count}} AS rounded,
       {{decimals_overflow_count}} AS overflow
FROM bulk_wine_reconciliation
WHERE deleted_at IS NULL;
