-- The unchanged-record shortcut trusts each row for itself (src/unchanged/).
--
-- Until now one flag for the whole table (the state row), dropped by a statement trigger, said
-- whether the fingerprints could be trusted. Writes that fire no trigger (session_replication_role
-- = replica, pg_restore --disable-triggers, ALTER TABLE ... DISABLE TRIGGER) and an edit committed
-- while a run rebuilt the fingerprints both left rows wrong for good. Now each fingerprint carries
-- the row version it vouches for: the xmin of the row as the storing run saw or wrote it.
-- PostgreSQL gives every new row version a new xmin, whoever writes it and however; a fingerprint
-- whose xmin differs from its row's is ignored, and that record is compared again.

DROP TRIGGER IF EXISTS source_hash_invalidate ON bulk_wine_reconciliation;
DROP TRIGGER IF EXISTS source_hash_invalidate ON bulk_wine_reconciliation_closed_versions;
DROP TRIGGER IF EXISTS source_hash_invalidate ON bulk_wine_reconciliation_source_hash;
DROP FUNCTION IF EXISTS bulk_wine_reconciliation_source_hash_invalidate();

-- Fingerprints stored without a row version vouch for nothing: the next run compares every record.
TRUNCATE bulk_wine_reconciliation_source_hash;
ALTER TABLE bulk_wine_reconciliation_source_hash ADD COLUMN row_xmin xid NOT NULL;

COMMENT ON TABLE bulk_wine_reconciliation_source_hash IS 'Internal to wine-recon-sync: a 64-bit fingerprint of each live record''s bytes as last loaded, and the row version it was loaded into, so that the next run can skip records whose bytes and row are both unchanged. Not for reporting.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash.hash IS 'Fingerprint of the record exactly as received in the listing (first 64 bits of MurmurHash3 x86_128, seeded with the program''s trust key, so fingerprints made by another build never match); null when the record''s form is not fingerprinted, so it is always compared.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash.row_xmin IS 'xmin of the bulk_wine_reconciliation row this fingerprint vouches for, as the storing run wrote or compared it. Any later write to the row gives it another xmin, and the fingerprint is then ignored.';

-- The state row no longer grants trust: it says which build stored the fingerprints, and when,
-- so that a run can say why it compared everything.
ALTER TABLE bulk_wine_reconciliation_source_hash_state RENAME COLUMN rules_version TO trust_key;
DELETE FROM bulk_wine_reconciliation_source_hash_state;
COMMENT ON TABLE bulk_wine_reconciliation_source_hash_state IS 'Internal to wine-recon-sync: which build of the program stored the fingerprints, and in which run. Only explains the shortcut in the log: trust is proved row by row.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash_state.trust_key IS 'Digest of the program (built code, SQL, dependencies, fingerprint function) that stored the fingerprints.';
COMMENT ON COLUMN bulk_wine_reconciliation_source_hash_state.run_id IS 'sync_runs.id of the last run that stored fingerprints.';

ALTER TABLE sync_runs ADD COLUMN skipped_unchanged bigint;
COMMENT ON COLUMN sync_runs.skipped_unchanged IS 'Records the unchanged-record shortcut settled without a comparison (their bytes and their row were both as a run left them); part of unchanged. 0 when the shortcut was off.';
