-- Fingerprints of each live record's source bytes, so that a re-sync skips records whose bytes
-- did not change since the last successful load: no transform, no comparison, no write.
-- Invariant kept by every run: while the state row exists, this table has exactly one row per
-- live (not soft-deleted) id of bulk_wine_reconciliation, and a row's values are the transform of
-- the bytes whose fingerprint is stored. Anything else that writes the tables drops the state
-- row (trigger below), and the next run compares every record again and rebuilds the table.
-- Both tables are UNLOGGED: a derived cache need not cost WAL. Crash recovery (or a standby's
-- promotion) empties both together, and without the state row the next run trusts nothing.

CREATE UNLOGGED TABLE bulk_wine_reconciliation_source_hash (
  id   bigint PRIMARY KEY,
  hash bigint
);

COMMENT ON TABLE bulk_wine_reconciliation_source_hash IS 'Internal to wine-recon-sync: a 64-bit fingerprint of each live record''s bytes as last loaded, to skip unchanged records on the next run. Not for reporting.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash.id IS 'Upstream record identifier (a live row of bulk_wine_reconciliation).';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash.hash IS 'Fingerprint (first 64 bits of MurmurHash3 x86_128) of the record exactly as received in the listing; null when the record''s form is not fingerprinted, so it is always compared.';

CREATE UNLOGGED TABLE bulk_wine_reconciliation_source_hash_state (
  singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  rules_version text    NOT NULL,
  run_id        bigint  NOT NULL
);

COMMENT ON TABLE bulk_wine_reconciliation_source_hash_state IS 'Internal to wine-recon-sync: present while bulk_wine_reconciliation_source_hash may be trusted. Deleting this row makes the next run compare every record.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash_state.singleton IS 'Always true: the table holds at most one row.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash_state.rules_version IS 'Version of the program and its transform rules that computed the fingerprints; another version does not trust them.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash_state.run_id IS 'sync_runs.id of the run that last rebuilt the fingerprints from every record.';

-- A write by anything but a sync run (which marks its transaction with SET LOCAL
-- wine_recon_sync.run_id) may change rows behind the fingerprints' back: forget them.
CREATE FUNCTION bulk_wine_reconciliation_source_hash_invalidate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(current_setting('wine_recon_sync.run_id', true), '') = '' THEN
    EXECUTE format('DELETE FROM %I.bulk_wine_reconciliation_source_hash_state', TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END
$$;

COMMENT ON FUNCTION bulk_wine_reconciliation_source_hash_invalidate() IS 'Drops the fingerprint state when the data tables are written outside a sync run.';

CREATE TRIGGER source_hash_invalidate AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON bulk_wine_reconciliation
  FOR EACH STATEMENT EXECUTE FUNCTION bulk_wine_reconciliation_source_hash_invalidate();
CREATE TRIGGER source_hash_invalidate AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON bulk_wine_reconciliation_closed_versions
  FOR EACH STATEMENT EXECUTE FUNCTION bulk_wine_reconciliation_source_hash_invalidate();
CREATE TRIGGER source_hash_invalidate AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON bulk_wine_reconciliation_source_hash
  FOR EACH STATEMENT EXECUTE FUNCTION bulk_wine_reconciliation_source_hash_invalidate();
