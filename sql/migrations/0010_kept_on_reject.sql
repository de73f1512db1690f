-- A bad record never hides a good one. A record whose id can be read but which fails validation
-- leaves its live row as the last valid version: not soft-deleted, not updated, not counted toward
-- the mass-delete guard. The row says so (rejected_in_run), and the run counts such rows apart.
-- The next valid record of the id updates the row as usual and clears the mark.

ALTER TABLE bulk_wine_reconciliation ADD COLUMN rejected_in_run bigint;
COMMENT ON COLUMN bulk_wine_reconciliation.rejected_in_run IS 'sync_runs.id of the latest run whose record for this id was rejected (see sync_rejects of that run): the row still holds the last valid version, unchanged. NULL when the last record of this id was valid.';

-- Few rows carry the mark: runs find them (to clear the mark) through this index, not by a scan.
CREATE INDEX bulk_wine_reconciliation_rejected_in_run ON bulk_wine_reconciliation (id) WHERE rejected_in_run IS NOT NULL;

ALTER TABLE sync_runs ADD COLUMN kept_on_reject bigint;
COMMENT ON COLUMN sync_runs.kept_on_reject IS 'Live rows kept as their last valid version because this run rejected their record (its id could be read); marked with rejected_in_run. Not counted as updated, unchanged or deleted, nor by the mass-delete guard. NULL for runs before this column existed.';

ALTER TABLE sync_runs ADD COLUMN backfilled bigint;
COMMENT ON COLUMN sync_runs.backfilled IS 'Rows filled in place with a value that the release that wrote them could not store (extra_fields, for rows written before it existed): no new version, changed_at and run_id kept; not counted in updated or unchanged. NULL for runs before this column existed.';

-- CREATE OR REPLACE VIEW may only add columns at the end: comments and grants stay.
CREATE OR REPLACE VIEW bulk_wine_reconciliation_current AS
  SELECT id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales,
         vintage_forecast, vintage_make, first_sale, first_seen_at, changed_at, run_id, extra_fields, rejected_in_run
  FROM bulk_wine_reconciliation
  WHERE deleted_at IS NULL;
COMMENT ON COLUMN bulk_wine_reconciliation_current.rejected_in_run IS 'sync_runs.id of the latest run that rejected this record: the values shown are the last valid version, kept. NULL when the last record was valid.';
