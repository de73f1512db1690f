-- Every run's exact profile of what it committed (or, for a dry run or a refused run, would have
-- committed), and every check made on it against the runs before and SYNC_CHECKS_FILE.

CREATE TABLE sync_run_profiles (
  run_id     bigint NOT NULL REFERENCES sync_runs (id) ON DELETE CASCADE,
  field      text   NOT NULL,
  row_count  bigint NOT NULL,
  null_count bigint NOT NULL,
  total      numeric,
  min_value  text,
  max_value  text,
  PRIMARY KEY (run_id, field)
);

CREATE TABLE sync_run_checks (
  run_id     bigint  NOT NULL REFERENCES sync_runs (id) ON DELETE CASCADE,
  check_name text    NOT NULL,
  field      text,
  severity   text    NOT NULL CHECK (severity IN ('warn', 'error')),
  passed     boolean NOT NULL,
  observed   text,
  expected   text,
  message    text    NOT NULL,
  PRIMARY KEY (run_id, check_name)
);

ALTER TABLE sync_runs ADD COLUMN accepted_checks text[];

COMMENT ON TABLE sync_run_profiles IS 'One row per run and field: the live rows after the run, exactly as an aggregate over bulk_wine_reconciliation would give them (for a dry or refused run: what it would have committed).';
COMMENT ON COLUMN sync_run_profiles.field IS 'A catalogue field, or a field outside the catalogue that the job keeps and types as numeric or date.';
COMMENT ON COLUMN sync_run_profiles.row_count IS 'Live rows (deleted_at is null) after the run.';
COMMENT ON COLUMN sync_run_profiles.null_count IS 'Live rows in which the field is null.';
COMMENT ON COLUMN sync_run_profiles.total IS 'The exact sum of the field over live rows, for numeric fields; null for other fields.';
COMMENT ON COLUMN sync_run_profiles.min_value IS 'The smallest value over live rows, as stored (numeric and date fields).';
COMMENT ON COLUMN sync_run_profiles.max_value IS 'The largest value over live rows, as stored (numeric and date fields).';
COMMENT ON TABLE sync_run_checks IS 'One row per check of each run (built-in and SYNC_CHECKS_FILE): whether it passed, with the value observed and the value expected.';
COMMENT ON COLUMN sync_run_checks.check_name IS 'The check: volume, total:FIELD, nulls:FIELD, or a rule of SYNC_CHECKS_FILE (min:FIELD, max:FIELD, not_null:FIELD).';
COMMENT ON COLUMN sync_run_checks.severity IS 'warn: a failure commits the run and notifies; error: a failure refuses the run before commit (CHECK_FAILED).';
COMMENT ON COLUMN sync_runs.accepted_checks IS 'The checks a person let through for this run (run --accept-check NAME); null when none.';
COMMENT ON COLUMN sync_run_profiles.run_id IS 'sync_runs.id of the run profiled.';
COMMENT ON COLUMN sync_run_checks.run_id IS 'sync_runs.id of the run checked.';
COMMENT ON COLUMN sync_run_checks.field IS 'The field the check is about; null for volume.';
COMMENT ON COLUMN sync_run_checks.passed IS 'True when the check passed.';
COMMENT ON COLUMN sync_run_checks.observed IS 'The value this run gave, as exact text.';
COMMENT ON COLUMN sync_run_checks.expected IS 'What the check expected, as text (a bound, or the value from the runs before and the change allowed).';
COMMENT ON COLUMN sync_run_checks.message IS 'One sentence naming the check, the field, the observed and the expected values.';
