-- The status page's reads (src/observe/page/queries.ts). Plain SELECTs only: the page takes no
-- lock a run could wait on, and works while a run holds the run lock. No session state either
-- (no SET, no temporary table, no named statement): the pool may be PgBouncer in transaction
-- mode. Every table is qualified with {{schema}} (SYNC_DB_SCHEMA), not found through search_path.

-- name: running
-- received and bytes: what the run last wrote of its progress (sql/load/audit.sql record_progress).
SELECT id, trigger, dry_run, started_at, source, received, bytes,
       (SELECT count(*) FROM {{schema}}.sync_rejects j WHERE j.run_id = r.id) AS rejects_so_far
FROM {{schema}}.sync_runs r
WHERE status = 'running'
ORDER BY id DESC
LIMIT 1;

-- name: last_load
SELECT run_id AS id, finished_at FROM {{schema}}.sync_last_load;

-- name: latest_finished
SELECT id, status, dry_run, finished_at, left(error, 300) AS error_start, attempt, retry_at
FROM {{schema}}.sync_runs
WHERE status <> 'running'
ORDER BY id DESC
LIMIT 1;

-- name: runs_older
-- One page of the history, newest first, from before run $1 (null: from the newest); filters $2
-- (status) and $3 (trigger) are optional. Paged by id, never by OFFSET: as fast at page 1,000.
SELECT id, trigger, status, dry_run, started_at, finished_at,
       extract(epoch FROM finished_at - started_at) * 1000 AS ms,
       received, inserted, updated, deleted, restored, rejected, skipped_unchanged,
       left(error, 160) AS error_start, attempt, retry_of, retry_at,
       (SELECT count(*) FROM {{schema}}.sync_run_checks c WHERE c.run_id = r.id AND NOT c.passed AND c.severity = 'warn') AS checks_warned,
       (SELECT count(*) FROM {{schema}}.sync_run_checks c WHERE c.run_id = r.id AND NOT c.passed AND c.severity = 'error') AS checks_refused
FROM {{schema}}.sync_runs r
WHERE ($1::bigint IS NULL OR id < $1)
  AND ($2::text IS NULL OR status = $2)
  AND ($3::text IS NULL OR trigger = $3)
ORDER BY id DESC
LIMIT $4;

-- name: runs_newer
-- The page before: the runs after run $1, oldest first (the caller turns them around).
SELECT id, trigger, status, dry_run, started_at, finished_at,
       extract(epoch FROM finished_at - started_at) * 1000 AS ms,
       received, inserted, updated, deleted, restored, rejected, skipped_unchanged,
       left(error, 160) AS error_start, attempt, retry_of, retry_at,
       (SELECT count(*) FROM {{schema}}.sync_run_checks c WHERE c.run_id = r.id AND NOT c.passed AND c.severity = 'warn') AS checks_warned,
       (SELECT count(*) FROM {{schema}}.sync_run_checks c WHERE c.run_id = r.id AND NOT c.passed AND c.severity = 'error') AS checks_refused
FROM {{schema}}.sync_runs r
WHERE id > $1
  AND ($2::text IS NULL OR status = $2)
  AND ($3::text IS NULL OR trigger = $3)
ORDER BY id
LIMIT $4;

-- name: runs_count
SELECT count(*) AS runs
FROM {{schema}}.sync_runs
WHERE ($1::text IS NULL OR status = $1)
  AND ($2::text IS NULL OR trigger = $2);

-- name: plot_runs
-- The last $1 finished runs, for the plots (the caller puts them oldest first).
SELECT id, status, dry_run, started_at,
       extract(epoch FROM finished_at - started_at) * 1000 AS ms,
       received, inserted, updated, deleted, restored, rejected,
       (SELECT count(*) FROM {{schema}}.sync_run_checks c WHERE c.run_id = r.id AND NOT c.passed AND c.severity = 'warn') AS checks_warned,
       (SELECT count(*) FROM {{schema}}.sync_run_checks c WHERE c.run_id = r.id AND NOT c.passed AND c.severity = 'error') AS checks_refused
FROM {{schema}}.sync_runs r
WHERE status <> 'running'
ORDER BY id DESC
LIMIT $1;

-- name: run_by_id
SELECT r.*, extract(epoch FROM r.finished_at - r.started_at) * 1000 AS ms
FROM {{schema}}.sync_runs r
WHERE r.id = $1;

-- name: payload
SELECT run_id, sha256, bytes, algorithm, stored_bytes FROM {{schema}}.sync_payloads WHERE run_id = $1;

-- name: reject_reasons
-- As the run's summary counts them (src/run/pipeline.ts countReason): by field and message, the
-- message cut before its first quote, where the record's own value begins.
SELECT e->>'path' AS path,
       CASE WHEN strpos(e->>'message', '"') > 0 THEN btrim(left(e->>'message', strpos(e->>'message', '"') - 1)) ELSE e->>'message' END AS message,
       count(*) AS records
FROM {{schema}}.sync_rejects j, jsonb_array_elements(j.errors) e
WHERE j.run_id = $1
GROUP BY 1, 2
ORDER BY records DESC, path, message
LIMIT $2;

-- name: rejects_count
SELECT count(*) AS rejects FROM {{schema}}.sync_rejects WHERE run_id = $1;

-- name: rejects_page
-- From position $2 on (exclusive; -1: from the first), $3 of them, the raw text cut to $4 characters.
SELECT position, record_id, errors, left(raw, $4) AS raw_start, length(raw) AS raw_length
FROM {{schema}}.sync_rejects
WHERE run_id = $1 AND position > $2
ORDER BY position
LIMIT $3;

-- name: rejects_before
-- The page before position $2: its first position, to link back to.
SELECT min(position) AS first
FROM (SELECT position FROM {{schema}}.sync_rejects WHERE run_id = $1 AND position < $2 ORDER BY position DESC LIMIT $3) p;

-- name: reject_raw
SELECT raw FROM {{schema}}.sync_rejects WHERE run_id = $1 AND position = $2;

-- name: run_extra_fields
-- The fields this run was the first to find.
SELECT name, column_name, bi_kind, records, note FROM {{schema}}.sync_fields WHERE first_run_id = $1 ORDER BY name;

-- name: fields
SELECT f.name, f.column_name, f.bi_kind, f.kinds, f.first_run_id, f.last_run_id, f.records, f.note, f.discovered_at
FROM {{schema}}.sync_fields f
ORDER BY f.name;

-- name: catalogue_counts
-- The catalogue's fields as the last successful load counted them.
SELECT r.id, r.field_counts
FROM {{schema}}.sync_last_load l JOIN {{schema}}.sync_runs r ON r.id = l.run_id;

-- name: plot_totals
-- The totals of the numeric fields (those with a total in these runs) for the runs $1, exact, and
-- as the BI views show them: rounded half away from zero to the scale they were installed with
-- (sync_bi_views), trailing zeros dropped by the caller. `failed`: the run's failed check on this
-- field, if any.
SELECT p.run_id::text AS run_id, p.field, p.total::text AS total,
       round(p.total, (SELECT scale FROM {{schema}}.sync_bi_views))::text AS bi_total,
       (SELECT string_agg(c.check_name, ', ' ORDER BY c.check_name) FROM {{schema}}.sync_run_checks c
        WHERE c.run_id = p.run_id AND c.field = p.field AND NOT c.passed) AS failed
FROM {{schema}}.sync_run_profiles p
WHERE p.run_id = ANY ($1::bigint[])
  AND p.field IN (SELECT field FROM {{schema}}.sync_run_profiles WHERE run_id = ANY ($1::bigint[]) AND total IS NOT NULL)
ORDER BY p.field, p.run_id;

-- name: bi_scale
SELECT scale FROM {{schema}}.sync_bi_views;

-- name: run_checks
-- Failed first, errors before warnings, then by name.
SELECT check_name, field, severity, passed, observed, expected, message
FROM {{schema}}.sync_run_checks
WHERE run_id = $1
ORDER BY passed, severity = 'error' DESC, check_name;

-- name: run_profile
-- The run's profile as stored, exact; bi_total as the BI view run_profiles shows it.
SELECT field, row_count, null_count, total::text AS total,
       round(total, (SELECT scale FROM {{schema}}.sync_bi_views))::text AS bi_total, min_value, max_value
FROM {{schema}}.sync_run_profiles
WHERE run_id = $1
ORDER BY field;

-- name: schema_ready
-- `serve` only reads: it checks that the schema was migrated instead of migrating it.
SELECT to_regclass($1) IS NOT NULL AS ready;
