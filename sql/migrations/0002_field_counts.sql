-- Field presence per run, for the upstream schema-drift guard (a renamed field must never blank a
-- column silently) and for BI: which fields the upstream sent, and how often.
ALTER TABLE sync_runs ADD COLUMN field_counts jsonb;

COMMENT ON COLUMN sync_runs.field_counts IS 'Which fields the listing''s records carried: {"records": objects inspected, "fields": {known field: {"present": records with the key, "non_null": records with a value (not null, not "")}}, "unknown": {unknown field: records with it}}. Null for runs that did not read a listing.';
