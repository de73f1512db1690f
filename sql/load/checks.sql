-- What the run checks (src/run/run-checks.ts) read of the runs before, and how they are stored.

-- name: recent_received
-- Records received by the last successful runs that committed, before run $1, newest first.
SELECT received::text FROM sync_runs
WHERE status = 'succeeded' AND NOT dry_run AND id < $1 AND received IS NOT NULL
ORDER BY id DESC LIMIT $2;

-- name: store_checks
INSERT INTO sync_run_checks (run_id, check_name, field, severity, passed, observed, expected, message)
SELECT $1, c.check_name, c.field, c.severity, c.passed, c.observed, c.expected, c.message
FROM json_to_recordset($2::json)
  AS c (check_name text, field text, severity text, passed boolean, observed text, expected text, message text);

-- name: set_accepted
UPDATE sync_runs SET accepted_checks = $2 WHERE id = $1;

-- name: runs_checks
-- The checks of runs $1, failed ones first (for status).
SELECT run_id::text, check_name, field, severity, passed, observed, expected, message
FROM sync_run_checks WHERE run_id = ANY ($1::bigint[])
ORDER BY run_id DESC, passed, severity, check_name;

-- name: runs_profiles
SELECT run_id::text, field, row_count::text, null_count::text, total::text, min_value, max_value
FROM sync_run_profiles WHERE run_id = ANY ($1::bigint[])
ORDER BY run_id DESC, field;
