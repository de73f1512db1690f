-- Where each run's time went, for its status page (src/observe/page/), and the indexes that keep
-- the page's filtered history fast at any age: it pages by id, never by OFFSET, so a filter on
-- status or trigger walks an index in id order instead of every row of sync_runs.

ALTER TABLE sync_runs ADD COLUMN phases jsonb;

COMMENT ON COLUMN sync_runs.phases IS 'Wall time of each phase of the run, in the order they started: a list of {"phase": name, "ms": milliseconds} (download, or read file, or restore archive; read live rows, parse and stage, duplicates, classify, apply, BI count, new fields, archive, commit; the ones the run reached). The download overlaps the parse, so they need not add up to the run''s duration. Null for runs before this column, and for runs that failed before any phase.';

CREATE INDEX sync_runs_status_id_idx ON sync_runs (status, id);
CREATE INDEX sync_runs_trigger_id_idx ON sync_runs (trigger, id);
