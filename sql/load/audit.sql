-- The run audit trail: sync_runs, sync_rejects, sync_payloads. Written outside the data
-- transaction, so a failed run still leaves its row and rejects.

-- name: mark_abandoned
-- Called while holding the run lock: any other 'running' row belongs to a process that died.
UPDATE sync_runs
SET status = 'abandoned', finished_at = clock_timestamp(),
    error = 'the process running this sync stopped without finishing it (killed or crashed); nothing was committed'
WHERE status = 'running'
RETURNING id;

-- name: start_run
INSERT INTO sync_runs (trigger, status, dry_run, app_version, source, attempt, retry_of)
VALUES ($1, 'running', $2, $3, $4, $5, $6)
RETURNING id, started_at;

-- name: set_retry_at
-- The daemon's plan for a failed run, once it has decided (null: no retry).
UPDATE sync_runs SET retry_at = $2 WHERE id = $1;

-- name: latest_daemon_run_since
-- Catch-up at start: the newest run the daemon started at or after the schedule's most recent slot.
-- succeeded_since: whether any of them succeeded (not only the newest).
SELECT r.*, EXISTS (
  SELECT 1 FROM sync_runs s
  WHERE s.trigger IN ('schedule', 'run-now', 'catch-up', 'retry', 'page') AND s.started_at >= $1 AND NOT s.dry_run AND s.status = 'succeeded'
) AS succeeded_since
FROM sync_runs r
WHERE r.trigger IN ('schedule', 'run-now', 'catch-up', 'retry', 'page') AND r.started_at >= $1 AND NOT r.dry_run
ORDER BY r.id DESC LIMIT 1;

-- name: finish_run
UPDATE sync_runs
SET status = $2, finished_at = clock_timestamp(), error = $3,
    reported_count = $4, reported_record_count = $5, received = $6, rejected = $7, duplicates = $8,
    inserted = $9, updated = $10, unchanged = $11, deleted = $12, restored = $13, bytes = $14, skipped_unchanged = $15,
    kept_on_reject = $16, backfilled = $17, unknown_fields = $18, field_counts = $19, bi_scale = $20, bi_rounded = $21, bi_overflow = $22,
    phases = $23
WHERE id = $1
RETURNING *;

-- name: record_progress
-- A running run's records and bytes so far, for whoever reads sync_runs meanwhile (the status page
-- of `serve`); finish_run writes the final counts.
UPDATE sync_runs SET received = $2, bytes = $3 WHERE id = $1 AND status = 'running';

-- name: insert_rejects
-- $2: the rejects as one JSON array of {position, record_id, errors, raw} (src/load/audit.ts
-- insertRejects): JSON.stringify writes it in one pass, where a text[] parameter's quoting cost
-- node-postgres 15 times the raw text's size in memory for records full of '"'.
INSERT INTO sync_rejects (run_id, position, record_id, errors, raw)
SELECT $1, r.position, r.record_id, r.errors, r.raw
FROM json_to_recordset($2::json) AS r (position bigint, record_id text, errors jsonb, raw text);

-- name: delete_rejects
-- A run's rejects so far, when the listing they came from turned out to be a failed download attempt.
DELETE FROM sync_rejects WHERE run_id = $1;

-- name: prune_rejects
-- After each run (src/run/sync.ts): only the rejects of the newest $1 runs stay, whatever their
-- status (a failed run's rejects say why it failed). Uses the primary key (run_id, position).
DELETE FROM sync_rejects
WHERE run_id < (SELECT min(id) FROM (SELECT id FROM sync_runs ORDER BY id DESC LIMIT $1) AS newest);

-- name: insert_payload
INSERT INTO sync_payloads (run_id, sha256, bytes, algorithm, stored_bytes) VALUES ($1, $2, $3, $4, $5);

-- name: copy_payload_chunks
COPY sync_payload_chunks (run_id, seq, data) FROM STDIN WITH (FORMAT binary)

-- name: prune_payloads
-- The chunks of pruned payloads go with them (ON DELETE CASCADE). A payload is committed just
-- before its run's transaction (src/run/run-archive.ts): one whose run then failed, or whose
-- process died in between, is removed here too: only payloads of successful runs and of this one
-- (still running) are kept.
DELETE FROM sync_payloads
WHERE run_id NOT IN (
  SELECT p.run_id FROM sync_payloads p JOIN sync_runs r ON r.id = p.run_id
  WHERE r.status IN ('succeeded', 'running')
  ORDER BY p.run_id DESC LIMIT $1
);

-- name: drop_payload
DELETE FROM sync_payloads WHERE run_id = $1;

-- name: payload_info
SELECT run_id, sha256, bytes, algorithm FROM sync_payloads WHERE run_id = $1;

-- name: latest_payload
-- Of a successful run: a payload left by a run that failed after committing it is not one.
SELECT p.run_id, p.sha256, p.bytes, p.algorithm
FROM sync_payloads p JOIN sync_runs r ON r.id = p.run_id
WHERE r.status = 'succeeded'
ORDER BY p.run_id DESC LIMIT 1;

-- name: copy_payload_out
-- COPY takes no bind parameters: the run id placeholder is replaced by a validated integer.
COPY (SELECT data FROM sync_payload_chunks WHERE run_id = $1 ORDER BY seq) TO STDOUT WITH (FORMAT binary)

-- name: schema_baseline
-- What the schema-drift guard compares a listing with: the last successful run that committed.
-- Its BI counts are the next run's starting point (carried, or updated from the changed rows: see
-- src/load/bi-rounding.ts) while the table is as it left it: live_after rows, each the version a
-- run's fingerprint vouches for.
SELECT r.id, r.field_counts, r.unknown_fields, r.bi_scale, r.bi_rounded, r.bi_overflow,
       (r.received - r.rejected - r.duplicates)::bigint AS live_after
FROM sync_last_load l JOIN sync_runs r ON r.id = l.run_id;

-- name: recent_runs
SELECT * FROM sync_runs ORDER BY id DESC LIMIT $1;

-- name: run_totals
-- Starting values of the metrics: a restarted daemon continues from the audit trail, not from 0.
SELECT status, trigger, count(*)::int AS runs, extract(epoch FROM max(finished_at))::float8 AS last_finished
FROM sync_runs WHERE status <> 'running' GROUP BY status, trigger;

-- name: last_success
-- The metrics, the daemon's health and sync_freshness share this definition: sync_last_load.
SELECT run_id AS id, finished_at FROM sync_last_load;

-- name: latest_finished
SELECT * FROM sync_runs WHERE status <> 'running' AND id < $1 ORDER BY id DESC LIMIT 1;
