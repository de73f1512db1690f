-- Statements of a run's own transaction (src/run/run.ts); the data statements are in sql/load/.

-- name: set_lock_timeout
-- SYNC_LOCK_TIMEOUT_MS, for this transaction only.
SELECT set_config('lock_timeout', $1, true);
