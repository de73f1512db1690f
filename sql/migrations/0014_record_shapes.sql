-- Record shapes (src/unchanged/shapes.ts). A re-sync skips a record whose bytes equal the
-- ones its row's fingerprint was made of; since this migration, before it reads the record at all:
-- its fields are then counted (sync_runs.field_counts) from the shape stored with the fingerprint,
-- which fields the record had, which were null, and which unknown members it carried.
-- A shape's number is a 31-bit digest of its description. A run never gives a number to a second
-- description: a row whose number has no description, or one whose description does not digest to
-- it (edited by hand, replaced by the next run that finds that shape), has no shape, and its record
-- is read as before.
-- UNLOGGED like the fingerprints: a crash empties both, and a row that keeps its fingerprint but
-- loses its shape is read as before.

ALTER TABLE bulk_wine_reconciliation_source_hash ADD COLUMN shape integer;

COMMENT ON COLUMN bulk_wine_reconciliation_source_hash.shape IS 'Shape (bulk_wine_reconciliation_source_shape) of the record the fingerprint was made of: its fields, counted when the record is skipped unread. Null: none.';

CREATE UNLOGGED TABLE bulk_wine_reconciliation_source_shape (
  shape       integer PRIMARY KEY,
  description text    NOT NULL
);

COMMENT ON TABLE bulk_wine_reconciliation_source_shape IS 'Internal to wine-recon-sync: the shapes of fingerprinted records (which fields they had), by number. Not for reporting.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_shape.shape IS 'A 31-bit digest of the description, never 0.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_shape.description IS 'JSON: [present, non_null, [[unknown member name, kind of its value], ...]]; present and non_null are bit masks over the field catalogue of the build that wrote it.';
