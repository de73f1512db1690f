-- Advisory locks (src/db/lock.ts), keyed by the schema name ($1): one run at a time per database
-- and schema; migrations one at a time. Both are transaction level, so that they hold through a
-- transaction pooler (PgBouncer), where a session-level lock would stay behind on a server
-- connection that the pooler hands to the next client.

-- name: try_run_lock
-- Held by a transaction of its own, open for the whole run (RunLock): a killed process's
-- transaction is rolled back when its connection closes, and the lock goes with it.
SELECT pg_try_advisory_xact_lock(hashtextextended('wine-recon-sync:run:' || $1, 0)) AS locked;

-- name: lock_alive
-- The lock's transaction still answers: checked before the run commits.
SELECT 1;

-- name: migrate_lock
-- Released when the migrating transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('wine-recon-sync:migrate:' || $1, 0));

-- name: cancel_backend
-- Stops the statement another connection is executing (a run's, on abort). The pid is the one
-- pg_backend_pid() gave inside that connection's transaction (src/db/pool.ts begin).
SELECT pg_cancel_backend($1);
