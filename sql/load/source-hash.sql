-- The unchanged-record shortcut (src/load/source-hash.ts), inside the run's transaction.

-- name: mark_run
-- Tells the invalidation trigger that this transaction is a sync run (until it ends).
SELECT set_config('wine_recon_sync.run_id', $1, true);

-- name: state
SELECT rules_version FROM bulk_wine_reconciliation_source_hash_state;

-- name: copy_hashes_out
COPY (SELECT id, hash FROM bulk_wine_reconciliation_source_hash ORDER BY id) TO STDOUT WITH (FORMAT binary)

-- name: classify_staged_and_missing
-- The staged records are those whose bytes changed (or were never fingerprinted); the rest of
-- the listing is unchanged. Live rows whose id the listing did not have at all ($1) are deleted.
CREATE TEMP TABLE staging_changes ON COMMIT DROP AS
SELECT s.id, s.wpi, s.inventory_bulk_wine, s.inventory_finished_goods, s.inventory_sales,
       s.vintage_forecast, s.vintage_make, s.first_sale,
       CASE WHEN t.id IS NULL THEN 'insert' WHEN t.deleted_at IS NOT NULL THEN 'restore' ELSE 'update' END AS action
FROM staging_records s
LEFT JOIN bulk_wine_reconciliation t ON t.id = s.id
WHERE t.id IS NULL
   OR t.deleted_at IS NOT NULL
   OR (t.wpi, t.inventory_bulk_wine, t.inventory_finished_goods, t.inventory_sales, t.vintage_forecast, t.vintage_make, t.first_sale)
      IS DISTINCT FROM
      (s.wpi, s.inventory_bulk_wine, s.inventory_finished_goods, s.inventory_sales, s.vintage_forecast, s.vintage_make, s.first_sale)
UNION ALL
SELECT t.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'delete'
FROM bulk_wine_reconciliation t
WHERE t.id = ANY ($1::bigint[]) AND t.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM staging_records s WHERE s.id = t.id);

-- name: remove_positions
-- Earlier copies of an id whose later copy was skipped as unchanged: returned for sync_rejects.
DELETE FROM staging_records
WHERE position = ANY ($1::bigint[])
RETURNING position, id::text AS record_id, raw_offset, raw_length;

-- name: upsert_hashes
-- Every staged record is live after the run: its fingerprint is the current one.
INSERT INTO bulk_wine_reconciliation_source_hash (id, hash)
SELECT id, CASE WHEN hash_hi IS NULL THEN NULL ELSE (hash_hi::bigint << 32) | (hash_lo::bigint & 4294967295) END
FROM staging_records
ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash
WHERE bulk_wine_reconciliation_source_hash.hash IS DISTINCT FROM EXCLUDED.hash;

-- name: insert_hashes
-- After clear_hashes: every staged record, no conflict possible.
INSERT INTO bulk_wine_reconciliation_source_hash (id, hash)
SELECT id, CASE WHEN hash_hi IS NULL THEN NULL ELSE (hash_hi::bigint << 32) | (hash_lo::bigint & 4294967295) END
FROM staging_records;

-- name: delete_hashes
DELETE FROM bulk_wine_reconciliation_source_hash WHERE id = ANY ($1::bigint[]);

-- name: clear_hashes
TRUNCATE bulk_wine_reconciliation_source_hash;

-- name: save_state
INSERT INTO bulk_wine_reconciliation_source_hash_state (rules_version, run_id) VALUES ($1, $2)
ON CONFLICT (singleton) DO UPDATE SET rules_version = EXCLUDED.rules_version, run_id = EXCLUDED.run_id;
