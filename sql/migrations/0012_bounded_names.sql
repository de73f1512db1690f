-- What a listing may cost, whatever it sends: a field name outside the catalogue is
-- stored and shown with at most 128 bytes (src/transform/field-name.ts; a 3 kB name broke every
-- run: a btree row of sync_fields' primary key holds 2704 bytes at most), and sync_rejects keeps
-- the rejects of the newest SYNC_REJECTS_KEEP runs only (src/run/sync.ts prunes it after each run).
-- Only comments change: names already stored are at most 2704 bytes, and a long one is simply
-- recorded again under its shortened form.

COMMENT ON COLUMN sync_fields.name IS 'The field''s name as the upstream sends it (its key in extra_fields) when it has at most 128 bytes of UTF-8. A longer name is shown by its first bytes (cut on a character boundary), then … and the first 8 hex digits of the SHA-256 of the whole name, here and in sync_runs, logs and notifications; its values stay in extra_fields under the exact name. Such a field never has a column (see note).';
COMMENT ON COLUMN sync_runs.unknown_fields IS 'Record fields present in the listing that this version does not load: at most 1000 names, each as sync_fields.name shows it (a name of more than 128 bytes shortened).';
COMMENT ON COLUMN sync_runs.field_counts IS 'Which fields the listing''s records carried: {"records": objects inspected, "fields": {known field: {"present": records with the key, "non_null": records with a value (not null, not "")}}, "unknown": {unknown field (as sync_fields.name shows it): records with it}, "unknown_truncated": true when more than 1000 unknown names appeared (the others are not listed)}. Null for runs that did not read a listing.';
COMMENT ON TABLE sync_rejects IS 'Records a run set aside: invalid ones with every reason, and earlier copies of duplicate ids. Only the rejects of the newest SYNC_REJECTS_KEEP runs (default 30, any status) are kept: older ones are deleted after each run.';
