-- What an OpenLineage event says about a run (src/load/lineage-runs.ts): its runId, outcome,
-- counts, where it read from, and for a retry the runId of its chain's first attempt.

-- name: runs
-- $1: run ids.
SELECT r.id, r.lineage_run_id, r.trigger, r.status, r.dry_run, r.started_at, r.finished_at, r.error, r.source,
       r.inserted, r.updated, r.deleted, r.restored, r.received,
       f.lineage_run_id AS first_attempt_run_id
FROM sync_runs r
LEFT JOIN sync_runs f ON f.id = r.retry_of
WHERE r.id = ANY($1::bigint[])
ORDER BY r.id;
