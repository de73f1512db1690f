-- What the BI views (sql/bi/views.sql) do to the live values, counted after a run's changes,
-- inside its transaction. $1 is S = SYNC_BI_SCALE; $2 the smallest magnitude whose rounding to S
-- places needs more than P-S integer digits (P = BI_PRECISION, 28, src/fields.ts: 10^(P-S) - 5*10^-(S+1),
-- e.g. 999999999999999999.99999999995 for S = 10).
-- "rounded": the value loses fractional digits in the views but fits numeric(P,S); "overflow": it
-- is NULL there. scale() is exact here because the exact tables hold canonical decimals (no
-- trailing zeros), and it is about five times cheaper than comparing with round() on a million rows.
-- Summed over the decimal fields of the catalogue (src/fields.ts, rendered by src/db/field-sql.ts):
--   {{decimals_rounded_count}}  count(*) FILTER (WHERE scale(c) > $1 AND abs(c) < $2) + ... per decimal c
--   {{decimals_overflow_count}} count(*) FILTER (WHERE abs(c) >= $2) + ... per decimal c
-- A first load counts the same in Node from the digits it writes (src/transform/bi-effect.ts);
-- test/integration/bi-effect.test.ts holds the two to one answer: change them together.

-- name: count_bi_rounding
SELECT {{decimals_rounded_count}} AS rounded,
       {{decimals_overflow_count}} AS overflow
FROM bulk_wine_reconciliation
WHERE deleted_at IS NULL;

-- name: count_bi_rounding_changes
-- The same count, from the rows this run changed only: the last successful run's count ($3 rounded,
-- $4 overflow), less what the values the run replaced or deleted contributed, plus what its new live
-- values contribute. Exact only when that count still described the live rows when this run began
-- (src/load/bi-rounding.ts decides). Runs after the changes are applied, inside the run's transaction:
--   old values: the versions close_versions closed in this transaction (valid_to = now(), the
--     transaction's start), of the rows classified 'update' or 'delete': live rows before the run.
--     A restored row was not live, so it contributed nothing before.
--   new values: the rows classified 'insert', 'update' or 'restore', as the table holds them now.
-- Both sides reach their rows through staging_changes by primary key (closed versions: (id, valid_from)).
-- Each side also says how many rows it found, so that the caller can check them against the run's
-- change counts and count in full should a version be missing (a statement changed, say).
WITH replaced AS (
  SELECT count(*) AS found,
         {{decimals_rounded_count}} AS rounded,
         {{decimals_overflow_count}} AS overflow
  FROM (SELECT v.* FROM staging_changes c
        JOIN bulk_wine_reconciliation_closed_versions v ON v.id = c.id AND v.valid_to = now()
        WHERE c.action IN ('update', 'delete')) AS old_values
),
written AS (
  SELECT count(*) AS found,
         {{decimals_rounded_count}} AS rounded,
         {{decimals_overflow_count}} AS overflow
  FROM (SELECT t.* FROM staging_changes c
        JOIN bulk_wine_reconciliation t ON t.id = c.id
        WHERE c.action IN ('insert', 'update', 'restore') AND t.deleted_at IS NULL) AS new_values
)
SELECT $3::bigint - replaced.rounded + written.rounded AS rounded,
       $4::bigint - replaced.overflow + written.overflow AS overflow,
       replaced.found AS replaced, written.found AS written
FROM replaced, written;

-- name: count_bi_rounding_settled
-- The same count over the rows of the ids staging_records holds: on a first load, the duplicate ids
-- whose winning copy was set aside (sql/load/first_load.sql settle_copies). The run counted the rows
-- it COPYed as it wrote them (src/transform/bi-effect.ts); read before and after write_winners, this
-- says what settling those ids changed, so the run's count is of the final rows without reading the
-- others. The id comes from staging_records (few rows), each row of the table by its primary key.
SELECT {{decimals_rounded_count}} AS rounded,
       {{decimals_overflow_count}} AS overflow
FROM (SELECT t.* FROM bulk_wine_reconciliation t
      WHERE t.id IN (SELECT s.id FROM staging_records s) AND t.deleted_at IS NULL) AS settled;
