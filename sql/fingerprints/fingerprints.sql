-- The unchanged-record shortcut's stored fingerprints (src/unchanged/store.ts), inside the run's
-- transaction; the live rows are read on a connection of their own while the listing downloads,
-- in one REPEATABLE READ snapshot. A fingerprint vouches for a row only while the row's xmin is
-- the one stored with it (sql/migrations/0008_row_trust.sql). The compared rows' fingerprints are stored by the statement
-- that compares them (sql/load/apply.sql classify_changes), so that the row version stored is the
-- one compared, whatever commits meanwhile.

-- name: read_plan
-- The read is one merge join of the two primary keys, in order, with nothing to sort. Left to the
-- planner, a table just filled by a first load (not analyzed yet: autovacuum comes later) looks
-- tiny, and the plan is a parallel nested loop with an external sort: 1.2 s against 0.75 s for
-- 1M rows on stock PostgreSQL 15. And compiling the query (stock jit = on, its cost passes
-- jit_above_cost at about a million rows) takes longer than it saves.
SELECT set_config('jit', 'off', true),
       set_config('enable_nestloop', 'off', true),
       set_config('enable_hashjoin', 'off', true),
       set_config('enable_sort', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true);

-- name: state
SELECT trust_key, run_id::text FROM bulk_wine_reconciliation_source_hash_state;

-- name: read_shapes
-- The record shapes the fingerprints were stored with (src/unchanged/shapes.ts), in the read's snapshot.
SELECT shape, description FROM bulk_wine_reconciliation_source_shape;

-- name: save_shapes
-- The shapes a run found that were not stored yet ($1 numbers, $2 descriptions). A number the run
-- gives out is one no valid stored description holds: a stored one under it was not what its
-- number digests (edited by hand), and is replaced.
INSERT INTO bulk_wine_reconciliation_source_shape (shape, description)
SELECT * FROM unnest($1::integer[], $2::text[])
ON CONFLICT (shape) DO UPDATE SET description = EXCLUDED.description;

-- name: prune_shapes
-- Shapes no fingerprint refers to any more; run when they grow many (src/unchanged/shapes.ts).
DELETE FROM bulk_wine_reconciliation_source_shape p
WHERE NOT EXISTS (SELECT 1 FROM bulk_wine_reconciliation_source_hash h WHERE h.shape = p.shape);

-- name: copy_live_out
-- Every live id, in id order, with its fingerprint when the row is still the version it vouches
-- for. trust: 0 no fingerprint stored, 1 the row is the stored version, 2 the row was written since.
COPY (
  SELECT t.id,
         CASE WHEN s.row_xmin = t.xmin THEN s.hash END AS hash,
         (CASE WHEN s.id IS NULL THEN 0 WHEN s.row_xmin = t.xmin THEN 1 ELSE 2 END)::smallint AS trust,
         CASE WHEN s.row_xmin = t.xmin THEN s.shape END AS shape
  FROM bulk_wine_reconciliation t
  LEFT JOIN bulk_wine_reconciliation_source_hash s ON s.id = t.id
  WHERE t.deleted_at IS NULL
  ORDER BY t.id
) TO STDOUT WITH (FORMAT binary)

-- name: count_stored
SELECT count(*)::bigint AS stored FROM bulk_wine_reconciliation_source_hash;

-- name: save_written
-- Rows this run inserted, updated, restored or backfilled are its own versions: the run uses no savepoint, so
-- their xmin is its transaction id, and its row locks keep them so until it commits.
INSERT INTO bulk_wine_reconciliation_source_hash (id, hash, row_xmin, shape)
SELECT id, hash, pg_current_xact_id()::xid, shape
FROM staging_changes
WHERE action IN ('insert', 'update', 'restore', 'backfill')
ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, row_xmin = EXCLUDED.row_xmin, shape = EXCLUDED.shape;

-- name: clear
-- Before an initial load (an empty table): any stored fingerprint belongs to no row.
TRUNCATE bulk_wine_reconciliation_source_hash;

-- name: save_initial
INSERT INTO bulk_wine_reconciliation_source_hash (id, hash, row_xmin, shape)
SELECT id, CASE WHEN hash_hi IS NULL THEN NULL ELSE (hash_hi::bigint << 32) | (hash_lo::bigint & 4294967295) END, pg_current_xact_id()::xid, shape
FROM staging_records;

-- name: copy_initial
-- A first load's fingerprints, straight from the file the run set them aside in
-- (src/unchanged/initial-fingerprints.ts); row_xmin is the run's transaction id, which every row
-- it inserts carries (no savepoint).
COPY bulk_wine_reconciliation_source_hash (id, hash, row_xmin, shape) FROM STDIN (FORMAT binary)

-- name: save_settled
-- A first load's duplicate ids: staging_records holds the copy that won each (sql/load/first_load.sql
-- settle_copies), written over the row of an earlier copy or new; its fingerprint replaces the
-- earlier copy's. An updated row keeps the run's transaction id as xmin.
INSERT INTO bulk_wine_reconciliation_source_hash (id, hash, row_xmin, shape)
SELECT id, CASE WHEN hash_hi IS NULL THEN NULL ELSE (hash_hi::bigint << 32) | (hash_lo::bigint & 4294967295) END, pg_current_xact_id()::xid, shape
FROM staging_records
ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, row_xmin = EXCLUDED.row_xmin, shape = EXCLUDED.shape;

-- name: fingerprint_order
-- How far the table's rows lie from id order, as ANALYZE (autovacuum's) last saw it: 1 in order.
-- Each run's writes put new row versions where there is room, and a deploy rewrites every row: the
-- live-row read (copy_live_out, by the primary key) then visits a heap page per row, 0.73 s
-- against 0.48 s for 1M rows on stock PostgreSQL 15.
SELECT correlation FROM pg_stats
WHERE schemaname = current_schema() AND tablename = 'bulk_wine_reconciliation_source_hash' AND attname = 'id';

-- name: cluster_fingerprints
-- The rows rewritten in id order (0.6 s for 1M), and counted again so that the next run sees it.
-- Only sync runs use the table: its exclusive lock, held to commit, waits for nobody.
CLUSTER bulk_wine_reconciliation_source_hash USING bulk_wine_reconciliation_source_hash_pkey;
ANALYZE bulk_wine_reconciliation_source_hash;

-- name: drop_deleted
DELETE FROM bulk_wine_reconciliation_source_hash s
USING staging_changes c
WHERE c.action = 'delete' AND s.id = c.id;

-- name: drop_orphans
-- Fingerprints of rows that are no longer live (deleted or soft-deleted outside a sync run).
DELETE FROM bulk_wine_reconciliation_source_hash s
WHERE NOT EXISTS (SELECT 1 FROM bulk_wine_reconciliation t WHERE t.id = s.id AND t.deleted_at IS NULL);

-- name: save_state
INSERT INTO bulk_wine_reconciliation_source_hash_state (trust_key, run_id) VALUES ($1, $2)
ON CONFLICT (singleton) DO UPDATE SET trust_key = EXCLUDED.trust_key, run_id = EXCLUDED.run_id;
