-- Advisory locks (src/db/lock.ts), keyed by the schema name ($1): one run at a time per database
-- and schema; migrations one at a time.

-- name: try_run_lock
-- Session level, on the run's own connection: a killed process releases it with its connection.
SELECT pg_try_advisory_lock(hashtextextended('wine-recon-sync:run:' || $1, 0)) AS locked;

-- name: release_run_lock
SELECT pg_advisory_unlock(hashtextextended('wine-recon-sync:run:' || $1, 0));

-- name: migrate_lock
-- Transaction level: released when the migrating transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('wine-recon-sync:migrate:' || $1, 0));

-- name: cancel_backend
-- Stops the statement another connection is executing (a run's, on abort).
SELECT pg_cancel_backend($1);
