-- A finished run's checks and profile as the metrics and the OpenLineage events report them
-- (src/load/run-quality.ts): read by run id from the tables the run wrote, numbers as exact text.

-- name: checks
-- $1: run ids.
SELECT run_id::text AS run_id, check_name, field, severity, passed, observed, expected, message
FROM sync_run_checks
WHERE run_id = ANY ($1::bigint[])
ORDER BY run_id, passed, severity = 'error' DESC, check_name;

-- name: profiles
-- $1: run ids.
SELECT run_id::text AS run_id, field, row_count::text AS row_count, null_count::text AS null_count,
       total::text AS total, min_value, max_value
FROM sync_run_profiles
WHERE run_id = ANY ($1::bigint[])
ORDER BY run_id, field;
