-- OpenLineage run events (src/observe/lineage.ts) name a run by a UUID that stays the same from its
-- START to its COMPLETE, FAIL or ABORT, whichever process sends that: it is kept with the run.
-- Earlier rows get one too, so that every run can be named the same way.

ALTER TABLE sync_runs ADD COLUMN lineage_run_id uuid NOT NULL DEFAULT gen_random_uuid();

COMMENT ON COLUMN sync_runs.lineage_run_id IS 'The run''s runId in the OpenLineage events sent for it (SYNC_OPENLINEAGE_URL): a UUID fixed when the row is written, so the events of one run, and a catalogue''s record of it, can be found from here.';
