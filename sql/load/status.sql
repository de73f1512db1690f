-- What `status --run ID` shows: one run, every column.

-- name: run_by_id
SELECT * FROM sync_runs WHERE id = $1;
