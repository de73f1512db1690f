-- A first load: into a table with no row at all (apply.sql is_empty, read in the run's
-- transaction under its advisory lock, before the COPY starts), the rows are COPYed straight into
-- bulk_wine_reconciliation while the listing is parsed: no staging table, no INSERT ... SELECT
-- (src/load/first-load.ts). Copies of an id the run had already written go to staging_records
-- instead (created by apply.sql create_staging, holding only them) and are settled here, set-based
-- on the few ids involved. {{record_columns}} is every field in catalogue order and then
-- extra_fields, as both COPY writers write them (src/db/field-sql.ts).

-- name: marks
-- What every row of the run carries, read once: its timestamp (the transaction's now(), in a form
-- that reads back as the same instant whatever DateStyle or TimeZone) and its transaction id (the
-- xmin of every row it inserts, which its fingerprints vouch for).
SELECT pg_current_xact_id()::xid::text AS xmin,
       to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS now;

-- name: copy_rows
COPY bulk_wine_reconciliation ({{record_columns}}, first_seen_at, changed_at, run_id) FROM STDIN

-- name: settle_copies
-- The last copy of each id wins, among those set aside and the one already in the table (its id
-- and listing position in $1 and $2). The losers set aside are removed and returned for
-- sync_rejects; what stays in staging_records is the winner of each id, unless the table's copy won.
DELETE FROM staging_records s
USING (
  SELECT id, max(position) AS keep
  FROM (SELECT id, position FROM staging_records
        UNION ALL
        SELECT * FROM unnest($1::bigint[], $2::bigint[])) c
  GROUP BY id
) d
WHERE s.id = d.id AND s.position <> d.keep
RETURNING s.position, s.id::text AS record_id, s.raw_offset, s.raw_length;

-- name: write_winners
-- The winners: over the row of the table's copy (written by this run, so its first_seen_at,
-- changed_at and run_id stay those of the run), or new (ids beyond the bitmap, all set aside).
INSERT INTO bulk_wine_reconciliation (id, {{data_columns}}, first_seen_at, changed_at, run_id)
SELECT id, {{data_columns}}, now(), now(), $1
FROM staging_records
ON CONFLICT (id) DO UPDATE SET {{EXCLUDED.data_assignments}}
RETURNING id::text AS id;
