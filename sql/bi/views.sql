-- The views made for BI drivers, in SYNC_BI_SCHEMA. Rendered by src/db/bi-views.ts, which
-- substitutes: {{bi}} and {{data}} (quoted schema identifiers), {{bi_name}} and {{data_name}} (the
-- schemas' names inside a string literal), {{scale}} (S = SYNC_BI_SCALE, 0..MAX_BI_SCALE), {{bi_type}}
-- (numeric(P,S), P = BI_PRECISION = 28, src/fields.ts), {{int_digits}} (P - S) and {{limit}}
-- (10^(P-S) as a numeric literal). Applied in the migrate transaction, under its lock.
--
-- Why: pgjdbc reports an unconstrained numeric as precision 0, psqlODBC describes it as
-- DECIMAL(28,6), and Npgsql (Power BI) throws OverflowException on a value beyond System.Decimal.
-- Here every decimal is declared numeric(P,S): the value rounded to S places (numeric round() is
-- half away from zero), or NULL when even the rounded value has more than P-S integer digits, so
-- the cast can never fail and one outlier never breaks a dashboard.
--
-- The record's fields come from the field catalogue (src/fields.ts), every field in catalogue
-- order, rendered first by src/db/field-sql.ts (named here without braces: this comment is
-- rendered too):
--   bi_rounded_columns   id, wpi, round(inventory_bulk_wine, S) AS inventory_bulk_wine, ..., first_sale
--   bi_typed_columns     id, wpi, CASE WHEN abs(inventory_bulk_wine) < limit THEN inventory_bulk_wine END::numeric(P,S)
--                        AS inventory_bulk_wine, ..., first_sale
--   bi_overflow_names    CASE WHEN abs(inventory_bulk_wine) >= limit THEN 'inventory_bulk_wine' END, ... per decimal
--                        (NULL::text without one)
--   bi_live_field_comments, bi_history_field_comments: COMMENT ON COLUMN for each field, from its meaning
--
-- Then the extra fields that have a column (sync_fields, filled with the
-- settings by src/db/bi-extra-fields.ts; empty when there is none), each after the catalogue's:
--   extra_values    , extra_fields -> 'inventoryInTransit' AS "inventory_in_transit", ...
--   extra_typed     , CASE WHEN jsonb_typeof("inventory_in_transit") = 'number' THEN ... END::numeric(P,S) AS ..., ...
--   extra_overflow  , CASE WHEN <a value> AND <its typed value> IS NULL THEN 'inventory_in_transit' END, ...
--   extra_live_comments, extra_history_comments: their COMMENT ON COLUMN

DROP VIEW IF EXISTS {{bi}}.reconciliation, {{bi}}.reconciliation_history, {{bi}}.sync_freshness, {{bi}}.data_dictionary,
  {{bi}}.run_profiles, {{bi}}.run_checks;

CREATE VIEW {{bi}}.reconciliation AS
SELECT {{bi_typed_columns}}{{extra_typed}},
       first_seen_at, changed_at, run_id, rejected_in_run,
       -- An array, not concat_ws: a function takes at most 100 arguments, and with the new
       -- fields' columns there may be more. array_to_string skips the NULLs.
       nullif(array_to_string(ARRAY[
         {{bi_overflow_names}}{{extra_overflow}}], ','), '') AS overflow_columns,
       extra_fields::text AS extra_fields
FROM (
  SELECT {{bi_rounded_columns}}{{extra_values}},
         first_seen_at, changed_at, run_id, rejected_in_run, extra_fields
  FROM {{data}}.bulk_wine_reconciliation
  WHERE deleted_at IS NULL
) rounded;

-- The versions of {{data}}.bulk_wine_reconciliation_history, read from its two tables rather than
-- the view, so that a migration adding a field can re-create that view without dropping this one
-- (and the grants on it).
CREATE VIEW {{bi}}.reconciliation_history AS
SELECT {{bi_typed_columns}}{{extra_typed}},
       valid_from, valid_to, run_id,
       -- An array, not concat_ws: a function takes at most 100 arguments, and with the new
       -- fields' columns there may be more. array_to_string skips the NULLs.
       nullif(array_to_string(ARRAY[
         {{bi_overflow_names}}{{extra_overflow}}], ','), '') AS overflow_columns,
       extra_fields::text AS extra_fields
FROM (
  SELECT {{bi_rounded_columns}}{{extra_values}},
         valid_from, valid_to, run_id, extra_fields
  FROM {{data}}.bulk_wine_reconciliation_closed_versions
  UNION ALL
  SELECT {{bi_rounded_columns}}{{extra_values}},
         changed_at, NULL::timestamptz, run_id, extra_fields
  FROM {{data}}.bulk_wine_reconciliation
  WHERE deleted_at IS NULL
) rounded;

-- One row, also before the first run (then all NULL), so a dashboard tile never goes blank.
-- The age is whole seconds, not an interval: pyodbc and several BI tools cannot read intervals.
CREATE VIEW {{bi}}.sync_freshness AS
SELECT s.id AS last_success_run_id,
       s.finished_at AS last_success_finished_at,
       floor(extract(epoch FROM now() - s.finished_at))::bigint AS last_success_age_seconds,
       l.id AS last_run_id,
       l.status AS last_run_status,
       l.started_at AS last_run_started_at,
       l.finished_at AS last_run_finished_at,
       l.error AS last_run_error,
       l.trigger AS last_run_trigger,
       l.attempt AS last_run_attempt,
       l.retry_of AS last_run_retry_of,
       l.retry_at AS last_run_retry_at
FROM (VALUES (1)) AS one (x)
-- The last successful load is defined once, by {{data}}.sync_last_load (dry runs excluded).
LEFT JOIN LATERAL (
  SELECT run_id AS id, finished_at FROM {{data}}.sync_last_load
) s ON true
LEFT JOIN LATERAL (
  SELECT id, status, started_at, finished_at, error, trigger, attempt, retry_of, retry_at FROM {{data}}.sync_runs ORDER BY started_at DESC, id DESC LIMIT 1
) l ON true;

-- Each run's profile (sync_run_profiles) with its numbers as the other views show theirs: a numeric
-- field's total, min and max rounded to S places as {{bi_type}} (NULL when too large, named in
-- overflow_columns); a date field's min and max as dates. A numeric field is one whose profile has a
-- total; the text of min_value and max_value is matched before any cast, so no stored text can make
-- the view fail.
CREATE VIEW {{bi}}.run_profiles AS
SELECT run_id, run_started_at, run_status, run_dry_run, field, row_count, null_count,
       CASE WHEN abs(total) < {{limit}} THEN total END::{{bi_type}} AS total,
       CASE WHEN abs(min_number) < {{limit}} THEN min_number END::{{bi_type}} AS min_value,
       CASE WHEN abs(max_number) < {{limit}} THEN max_number END::{{bi_type}} AS max_value,
       min_date, max_date,
       nullif(array_to_string(ARRAY[
         CASE WHEN abs(total) >= {{limit}} THEN 'total' END,
         CASE WHEN abs(min_number) >= {{limit}} THEN 'min_value' END,
         CASE WHEN abs(max_number) >= {{limit}} THEN 'max_value' END], ','), '') AS overflow_columns
FROM (
  SELECT p.run_id, r.started_at AS run_started_at, r.status AS run_status, r.dry_run AS run_dry_run,
         p.field, p.row_count, p.null_count,
         round(p.total, {{scale}}) AS total,
         CASE WHEN p.total IS NOT NULL AND p.min_value ~ '^-?[0-9]+(\.[0-9]+)?$' THEN round(p.min_value::numeric, {{scale}}) END AS min_number,
         CASE WHEN p.total IS NOT NULL AND p.max_value ~ '^-?[0-9]+(\.[0-9]+)?$' THEN round(p.max_value::numeric, {{scale}}) END AS max_number,
         CASE WHEN p.total IS NULL AND p.min_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN p.min_value::date END AS min_date,
         CASE WHEN p.total IS NULL AND p.max_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN p.max_value::date END AS max_date
  FROM {{data}}.sync_run_profiles p
  JOIN {{data}}.sync_runs r ON r.id = p.run_id
) rounded;

-- Every check of every run (sync_run_checks), with the run's start and outcome beside it.
CREATE VIEW {{bi}}.run_checks AS
SELECT c.run_id, r.started_at AS run_started_at, r.status AS run_status, r.dry_run AS run_dry_run,
       c.check_name, c.field, c.severity, c.passed, c.observed, c.expected, c.message
FROM {{data}}.sync_run_checks c
JOIN {{data}}.sync_runs r ON r.id = c.run_id;

-- psqlODBC returns empty REMARKS for every table and column (SQLTables/SQLColumns hard-code them),
-- so Excel and Power BI over ODBC never see the comments: this view serves them as plain rows.
CREATE VIEW {{bi}}.data_dictionary AS
SELECT c.relname::text AS view_name, a.attname::text AS column_name, a.attnum::integer AS position,
       format_type(a.atttypid, a.atttypmod) AS data_type,
       coalesce(col_description(c.oid, a.attnum), obj_description(c.oid, 'pg_class')) AS description
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL (
  SELECT NULL::name AS attname, 0::int2 AS attnum, NULL::oid AS atttypid, NULL::integer AS atttypmod
  UNION ALL
  SELECT attname, attnum, atttypid, atttypmod FROM pg_attribute WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped
) a
WHERE n.nspname = '{{bi_name}}' AND c.relkind = 'v';

COMMENT ON SCHEMA {{bi}} IS 'Views of the wine reconciliation data made for BI tools and their drivers (Power BI, Excel, Tableau, Metabase, Superset, DBeaver): decimals typed {{bi_type}}, rounded to {{scale}} decimal places. The exact values, every digit, are in schema {{data_name}}. Re-created by wine-recon-sync when its settings change: do not build objects on these views.';

COMMENT ON VIEW {{bi}}.reconciliation IS 'Bulk wine reconciliation records currently in the upstream listing, one row per record id: {{data_name}}.bulk_wine_reconciliation_current with the quantities rounded half away from zero to {{scale}} decimal places as {{bi_type}}, which every BI driver reads. A quantity too large for {{bi_type}} (more than {{int_digits}} integer digits) is NULL here and named in overflow_columns. Units are not given by the upstream API.';
{{bi_live_field_comments}}{{extra_live_comments}}
COMMENT ON COLUMN {{bi}}.reconciliation.first_seen_at IS 'When a sync first loaded this record. Same as in {{data_name}}.bulk_wine_reconciliation.';
COMMENT ON COLUMN {{bi}}.reconciliation.changed_at IS 'When a sync last changed this record. Same as in {{data_name}}.bulk_wine_reconciliation.';
COMMENT ON COLUMN {{bi}}.reconciliation.rejected_in_run IS 'sync_runs.id of the latest run that rejected this record (its reasons are in {{data_name}}.sync_rejects): the values shown are the last valid version, kept as they were. NULL when the last record was valid. Same as in {{data_name}}.bulk_wine_reconciliation.';
COMMENT ON COLUMN {{bi}}.reconciliation.run_id IS 'sync_runs.id of the run that last changed this record. Same as in {{data_name}}.bulk_wine_reconciliation.';
COMMENT ON COLUMN {{bi}}.reconciliation.overflow_columns IS 'Only in the BI views: comma-separated names of the columns left NULL here because their value does not fit the column''s type (a quantity too large for {{bi_type}}, or a new field''s value of another kind); NULL when every value fits. Their exact values are in {{data_name}}.bulk_wine_reconciliation.';
COMMENT ON COLUMN {{bi}}.reconciliation.extra_fields IS 'Every field of the record that the field catalogue of this version does not know, as JSON text exactly as sent (numbers keep every digit); null when none. The ones that can be named are also columns of this view; all are listed in {{data_name}}.sync_fields. Same as {{data_name}}.bulk_wine_reconciliation.extra_fields.';

COMMENT ON VIEW {{bi}}.reconciliation_history IS 'Every version of every record (type 2 history): {{data_name}}.bulk_wine_reconciliation_history with the quantities rounded half away from zero to {{scale}} decimal places as {{bi_type}}. A version is valid from valid_from until valid_to (null for the current version). A quantity too large for {{bi_type}} is NULL here and named in overflow_columns.';
{{bi_history_field_comments}}{{extra_history_comments}}
COMMENT ON COLUMN {{bi}}.reconciliation_history.valid_from IS 'When this version was first loaded. Same as in {{data_name}}.bulk_wine_reconciliation_history.';
COMMENT ON COLUMN {{bi}}.reconciliation_history.valid_to IS 'When this version was replaced or the record deleted; null for the current version. Same as in {{data_name}}.bulk_wine_reconciliation_history.';
COMMENT ON COLUMN {{bi}}.reconciliation_history.run_id IS 'sync_runs.id of the run that opened this version. Same as in {{data_name}}.bulk_wine_reconciliation_history.';
COMMENT ON COLUMN {{bi}}.reconciliation_history.overflow_columns IS 'Only in the BI views: comma-separated names of the columns left NULL here because their value does not fit the column''s type (a quantity too large for {{bi_type}}, or a new field''s value of another kind); NULL when every value fits. Their exact values are in {{data_name}}.bulk_wine_reconciliation_history.';
COMMENT ON COLUMN {{bi}}.reconciliation_history.extra_fields IS 'The fields of this version that the field catalogue does not know, as JSON text exactly as sent; null when none. Same as {{data_name}}.bulk_wine_reconciliation_history.extra_fields.';

COMMENT ON VIEW {{bi}}.sync_freshness IS 'How fresh the data is, for dashboard tiles and alerts: always one row with the last successful sync (dry runs excluded) and its age, and the last sync of any outcome with its status and error. Built from {{data_name}}.sync_runs.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_success_run_id IS 'sync_runs.id of the last successful sync that committed data (not a dry run; as {{data_name}}.sync_last_load); null before the first one.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_success_finished_at IS 'When that sync finished: the data is as of this time.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_success_age_seconds IS 'Seconds since that sync finished, at query time (a whole number, so every driver reads it; sync_runs_latest.age is the interval).';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_id IS 'sync_runs.id of the most recently started sync, whatever its outcome.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_status IS 'Status of that sync: running, succeeded, failed, aborted or abandoned.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_started_at IS 'When that sync started.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_finished_at IS 'When that sync ended; null while it runs.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_error IS 'Why that sync failed, aborted or was refused; null when it succeeded.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_trigger IS 'What started that sync: schedule, run-now, catch-up, retry, page, manual, replay, file or demo.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_attempt IS 'Which try of its scheduled run that sync was: 1 for a first attempt, more for the daemon''s retries.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_retry_of IS 'For a retry: sync_runs.id of the first attempt it retries; null for a first attempt.';
COMMENT ON COLUMN {{bi}}.sync_freshness.last_run_retry_at IS 'For a failed sync: when the daemon will try it again; null when it will not. Data is not fresh until a sync succeeds.';

COMMENT ON VIEW {{bi}}.run_profiles IS 'What every run committed (or, for a dry or refused run, would have committed), one row per run and field: {{data_name}}.sync_run_profiles with a numeric field''s total, min and max rounded half away from zero to {{scale}} decimal places as {{bi_type}}. The exact values, every digit, are in {{data_name}}.sync_run_profiles.';
COMMENT ON COLUMN {{bi}}.run_profiles.run_id IS 'sync_runs.id of the run profiled.';
COMMENT ON COLUMN {{bi}}.run_profiles.run_started_at IS 'When that run started.';
COMMENT ON COLUMN {{bi}}.run_profiles.run_status IS 'Status of that run: succeeded (committed), failed (a failed error-level check refused it: the profile is what it would have committed), ...';
COMMENT ON COLUMN {{bi}}.run_profiles.run_dry_run IS 'True for a dry run: the profile is what it would have committed.';
COMMENT ON COLUMN {{bi}}.run_profiles.field IS 'The field profiled (a catalogue field, or a kept new field typed numeric or date). Same as in {{data_name}}.sync_run_profiles.';
COMMENT ON COLUMN {{bi}}.run_profiles.row_count IS 'Live rows after the run. Same as in {{data_name}}.sync_run_profiles.';
COMMENT ON COLUMN {{bi}}.run_profiles.null_count IS 'Live rows in which the field is null. Same as in {{data_name}}.sync_run_profiles.';
COMMENT ON COLUMN {{bi}}.run_profiles.total IS 'The sum of a numeric field over the live rows, rounded half away from zero to {{scale}} decimal places, {{bi_type}}; NULL for other fields and when too large (overflow_columns). Exact in {{data_name}}.sync_run_profiles.total.';
COMMENT ON COLUMN {{bi}}.run_profiles.min_value IS 'The smallest value of a numeric field, rounded like total; NULL for other fields. Exact (as text) in {{data_name}}.sync_run_profiles.min_value.';
COMMENT ON COLUMN {{bi}}.run_profiles.max_value IS 'The largest value of a numeric field, rounded like total; NULL for other fields. Exact (as text) in {{data_name}}.sync_run_profiles.max_value.';
COMMENT ON COLUMN {{bi}}.run_profiles.min_date IS 'The earliest value of a date field; NULL for other fields.';
COMMENT ON COLUMN {{bi}}.run_profiles.max_date IS 'The latest value of a date field; NULL for other fields.';
COMMENT ON COLUMN {{bi}}.run_profiles.overflow_columns IS 'Only in the BI views: comma-separated names of the columns left NULL here because their value does not fit {{bi_type}}; NULL when every value fits.';

COMMENT ON VIEW {{bi}}.run_checks IS 'Every check of every run, one row per run and check: {{data_name}}.sync_run_checks with the run''s start and status. A failed warn check committed the run and notified; a failed error check refused it (status failed, CHECK_FAILED).';
COMMENT ON COLUMN {{bi}}.run_checks.run_id IS 'sync_runs.id of the run checked.';
COMMENT ON COLUMN {{bi}}.run_checks.run_started_at IS 'When that run started.';
COMMENT ON COLUMN {{bi}}.run_checks.run_status IS 'Status of that run: succeeded, failed (refused by an error-level check, among other causes), ...';
COMMENT ON COLUMN {{bi}}.run_checks.run_dry_run IS 'True for a dry run.';
COMMENT ON COLUMN {{bi}}.run_checks.check_name IS 'The check: volume, total:FIELD, nulls:FIELD, or a rule of SYNC_CHECKS_FILE (min:FIELD, max:FIELD, not_null:FIELD).';
COMMENT ON COLUMN {{bi}}.run_checks.field IS 'The field the check is about; null for volume.';
COMMENT ON COLUMN {{bi}}.run_checks.severity IS 'warn (a failure commits the run and notifies) or error (a failure refuses the run).';
COMMENT ON COLUMN {{bi}}.run_checks.passed IS 'True when the check passed.';
COMMENT ON COLUMN {{bi}}.run_checks.observed IS 'The value this run gave, as exact text (not rounded). Same as in {{data_name}}.sync_run_checks.';
COMMENT ON COLUMN {{bi}}.run_checks.expected IS 'What the check expected, as text (a bound, or the value from the runs before and the change allowed). Same as in {{data_name}}.sync_run_checks.';
COMMENT ON COLUMN {{bi}}.run_checks.message IS 'One sentence naming the check, the field, the observed and the expected values.';

COMMENT ON VIEW {{bi}}.data_dictionary IS 'What every view and column of this schema means (their COMMENTs), as rows: for tools whose driver does not show column descriptions (psqlODBC returns none, so Excel and Power BI over ODBC).';
COMMENT ON COLUMN {{bi}}.data_dictionary.view_name IS 'View in this schema.';
COMMENT ON COLUMN {{bi}}.data_dictionary.column_name IS 'Column of that view; null on the row describing the view itself.';
COMMENT ON COLUMN {{bi}}.data_dictionary.position IS 'Column position in the view, from 1; 0 on the row describing the view itself.';
COMMENT ON COLUMN {{bi}}.data_dictionary.data_type IS 'Declared SQL type of the column, e.g. {{bi_type}}; null on the view''s own row.';
COMMENT ON COLUMN {{bi}}.data_dictionary.description IS 'The COMMENT of the view or column: what it means and how it differs from the exact table.';
