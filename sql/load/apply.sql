-- Set-based load of one run, all inside the run's transaction. $1 is the run id, except in
-- classify_changes. now() is the transaction's start: every row a run touches carries the same
-- timestamp. The staging COPY statement is rendered from STAGING_COLUMNS (src/load/staging.ts),
-- the one definition of the column order that both COPY writers follow.
--
-- The record's fields come from the field catalogue (src/fields.ts), rendered when the statements
-- load (src/db/field-sql.ts). `id` is the key, spelled out; the data columns are the other fields:
--   {{data_columns}}              wpi, inventory_bulk_wine, ..., first_sale, extra_fields
--   {{s.data_columns}}            the same, qualified: s.wpi, s.inventory_bulk_wine, ...
--   {{t.compared_columns}}        t.wpi, ..., t.first_sale, t.extra_fields::text (jsonb equality is
--                                 numeric: its text keeps each number's digits as sent)
--   {{data_nulls}}                NULL, NULL, ... (one per data column)
--   {{c.data_assignments}}        wpi = c.wpi, inventory_bulk_wine = c.inventory_bulk_wine, ...
--   {{data_columns_ddl}}          wpi text NOT NULL, inventory_bulk_wine numeric, ..., extra_fields jsonb
--   {{data_columns_ddl_nullable}} the same without NOT NULL

-- name: create_staging
CREATE TEMP TABLE staging_records (
  position                 bigint  NOT NULL,
  id                       bigint  NOT NULL,
  {{data_columns_ddl}},
  raw_offset               bigint  NOT NULL,
  raw_length               integer NOT NULL,
  hash_hi                  integer,
  hash_lo                  integer,
  -- The record's shape (src/unchanged/shapes.ts), stored with its fingerprint; null: none.
  shape                    integer
) ON COMMIT DROP;

-- name: analyze_staging
ANALYZE staging_records;

-- name: remove_duplicates
-- The same id twice in one listing: the last one wins; the earlier ones are returned for sync_rejects.
DELETE FROM staging_records s
USING (SELECT id, max(position) AS keep FROM staging_records GROUP BY id HAVING count(*) > 1) d
WHERE s.id = d.id AND s.position <> d.keep
RETURNING s.position, s.id::text AS record_id, s.raw_offset, s.raw_length;

-- name: remove_positions
-- Earlier copies of an id whose last copy the unchanged-record shortcut settled: returned for sync_rejects.
DELETE FROM staging_records
WHERE position = ANY ($1::bigint[])
RETURNING position, id::text AS record_id, raw_offset, raw_length;

-- name: is_empty
SELECT NOT EXISTS (SELECT 1 FROM bulk_wine_reconciliation) AS empty;

-- name: insert_all
-- Initial load into an empty table: every staged record is new, nothing to compare.
INSERT INTO bulk_wine_reconciliation (id, {{data_columns}}, first_seen_at, changed_at, run_id)
SELECT id, {{data_columns}}, now(), now(), $1
FROM staging_records;

-- name: create_changes
CREATE TEMP TABLE staging_changes (
  id                       bigint NOT NULL,
  -- Nullable: a deletion carries no values.
  {{data_columns_ddl_nullable}},
  hash                     bigint,
  shape                    integer,
  action                   text   NOT NULL
) ON COMMIT DROP;

-- name: classify_changes
-- A row whose record differs only in late columns (src/fields.ts LATE_COLUMNS) that the row could
-- not store, as it was written before their migration ($2: per late column, the last run before it),
-- is a 'backfill': filled in place, not versioned (backfill_late).
-- The staged records against their rows, and the live ids the listing did not have ($1, from the
-- unchanged-record shortcut, which knows every live id) as deletions. Staged are the records not
-- skipped as unchanged: all of them when no fingerprint vouches for a row. An unchanged row is
-- never locked or rewritten; its fingerprint is stored by this same statement, with the xmin of
-- the row version it was compared with: one snapshot, so an edit committed while the run goes on
-- gives the row another xmin and the fingerprint is ignored next time.
WITH compared AS MATERIALIZED (
  SELECT s.id, {{s.data_columns}},
         CASE WHEN s.hash_hi IS NULL THEN NULL ELSE (s.hash_hi::bigint << 32) | (s.hash_lo::bigint & 4294967295) END AS hash,
         s.shape,
         t.xmin AS row_xmin,
         CASE WHEN t.id IS NULL THEN 'insert'
              WHEN t.deleted_at IS NOT NULL THEN 'restore'
              WHEN ({{t.compared_columns}})
                   IS DISTINCT FROM
                   ({{s.compared_columns}})
              THEN CASE WHEN ({{t.early_compared_columns}}) IS NOT DISTINCT FROM ({{s.early_compared_columns}})
                   AND {{late_backfillable}}
                   THEN 'backfill' ELSE 'update' END END AS action
  FROM staging_records s
  LEFT JOIN bulk_wine_reconciliation t ON t.id = s.id
),
vouched AS (
  INSERT INTO bulk_wine_reconciliation_source_hash (id, hash, row_xmin, shape)
  SELECT id, hash, row_xmin, shape FROM compared WHERE action IS NULL
  ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, row_xmin = EXCLUDED.row_xmin, shape = EXCLUDED.shape
  WHERE (bulk_wine_reconciliation_source_hash.hash, bulk_wine_reconciliation_source_hash.row_xmin::text, bulk_wine_reconciliation_source_hash.shape)
        IS DISTINCT FROM (EXCLUDED.hash, EXCLUDED.row_xmin::text, EXCLUDED.shape)
)
INSERT INTO staging_changes (id, {{data_columns}}, hash, shape, action)
SELECT id, {{data_columns}}, hash, shape, action
FROM compared WHERE action IS NOT NULL
UNION ALL
SELECT t.id, {{data_nulls}}, NULL, NULL, 'delete'
FROM bulk_wine_reconciliation t
WHERE t.id = ANY ($1::bigint[]) AND t.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM staging_records s WHERE s.id = t.id);

-- name: insert_new
-- A new record's first version is its row (the history view shows it): written once.
INSERT INTO bulk_wine_reconciliation (id, {{data_columns}}, first_seen_at, changed_at, run_id)
SELECT id, {{data_columns}}, now(), now(), $1
FROM staging_changes WHERE action = 'insert';

-- name: close_versions
-- Changed and deleted rows: their current version (the row as it is) becomes a closed version.
-- Runs before the rows change. A restored row has none: its last version closed on deletion.
INSERT INTO bulk_wine_reconciliation_closed_versions (id, {{data_columns}}, valid_from, valid_to, run_id)
SELECT t.id, {{t.data_columns}}, t.changed_at, now(), t.run_id
FROM bulk_wine_reconciliation t JOIN staging_changes c ON c.id = t.id
WHERE c.action IN ('update', 'delete');

-- name: update_changed
-- Changed and restored rows take the new values, which opens their new current version.
UPDATE bulk_wine_reconciliation t
SET {{c.data_assignments}},
    changed_at = now(), deleted_at = NULL, run_id = $1
FROM staging_changes c
WHERE t.id = c.id AND c.action IN ('update', 'restore');

-- name: late_cutoffs
-- Per late column's migration ($1, in LATE_COLUMNS order), the last run that started before it was
-- applied (0 when none did, or the migration was applied before any run: nothing to backfill).
SELECT coalesce(array_agg(c.cutoff ORDER BY m.ord), '{}') AS cutoffs
FROM unnest($1::int[]) WITH ORDINALITY AS m (version, ord)
CROSS JOIN LATERAL (
  SELECT coalesce(max(r.id), 0) AS cutoff
  FROM sync_runs r
  WHERE r.started_at < (SELECT applied_at FROM sync_migrations WHERE version = m.version)
) c;

-- name: backfill_late
-- The late columns of rows written before they existed, filled in place: no closed version, and
-- changed_at and run_id stay (the upstream changed nothing). The live row is the current version,
-- so bulk_wine_reconciliation_history shows the value from now on.
UPDATE bulk_wine_reconciliation t
SET {{c.late_assignments}}
FROM staging_changes c
WHERE t.id = c.id AND c.action = 'backfill';

-- name: count_changes
SELECT count(*) FILTER (WHERE action = 'insert')::bigint AS inserted,
       count(*) FILTER (WHERE action = 'update')::bigint AS updated,
       count(*) FILTER (WHERE action = 'restore')::bigint AS restored,
       count(*) FILTER (WHERE action = 'delete')::bigint AS deleted,
       count(*) FILTER (WHERE action = 'backfill')::bigint AS backfilled
FROM staging_changes;

-- name: delete_missing
-- Live rows absent from this complete listing: soft delete.
UPDATE bulk_wine_reconciliation t
SET deleted_at = now(), changed_at = now(), run_id = $1
FROM staging_changes c
WHERE c.action = 'delete' AND t.id = c.id;

-- name: planner_off
-- Turns the planner's methods $1 off until planner_restore (or the transaction's end), and says
-- what they were. For a statement whose best plan the planner cannot see (src/load/apply.ts).
WITH was AS MATERIALIZED (SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name)
SELECT name, setting, set_config(name, 'off', true) FROM was;

-- name: planner_restore
SELECT set_config(name, setting, true) FROM unnest($1::text[], $2::text[]) AS s (name, setting);

-- name: any_kept
-- Rows kept as their last valid version by an earlier run (rejected_in_run): few, by their index
-- (read with sequential scans off: see src/load/apply.ts).
SELECT EXISTS (SELECT 1 FROM bulk_wine_reconciliation WHERE rejected_in_run IS NOT NULL) AS any;

-- name: clear_kept
-- Their id has a valid record again: the mark goes, and classify_changes then compares the record
-- as usual. Before classify_changes, so that a fingerprint it stores has the row's latest xmin.
UPDATE bulk_wine_reconciliation t
SET rejected_in_run = NULL
WHERE t.rejected_in_run IS NOT NULL
  AND EXISTS (SELECT 1 FROM staging_records s WHERE s.id = t.id);

-- name: mark_kept
-- Live rows whose id this run rejected, and had no valid record of ($2): kept as they are, marked.
-- Their fingerprints go, so the next run compares their next record whatever its bytes (the mark
-- must be cleared even when that record equals the version kept).
WITH marked AS (
  UPDATE bulk_wine_reconciliation
  SET rejected_in_run = $1
  WHERE id = ANY ($2::bigint[]) AND deleted_at IS NULL
  RETURNING id
), forgotten AS (
  DELETE FROM bulk_wine_reconciliation_source_hash h USING marked m WHERE h.id = m.id
)
SELECT count(*)::bigint AS kept FROM marked;
