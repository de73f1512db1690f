-- What a replay needs to know before any run row is written: does the run exist, and if it has
-- no archived payload, why not.

-- name: replay_candidate
-- The run, its payload (when archived) and the archived payloads around it: the oldest kept, and
-- the newest archived before it (a run whose listing equalled the newest archived one stores none).
SELECT r.id, r.status, r.dry_run,
       p.sha256,
       (SELECT min(run_id) FROM sync_payloads) AS oldest_kept,
       (SELECT max(run_id) FROM sync_payloads WHERE run_id < r.id) AS archived_before
FROM sync_runs r
LEFT JOIN sync_payloads p ON p.run_id = r.id
WHERE r.id = $1;
