-- Freshness that means fresh data. A dry run rolls back what it computed, so it must never count
-- as the latest successful sync. Every "last successful load" (sync_runs_latest, the BI view
-- sync_freshness, the metrics' last-success timestamp, the alert queries, the schema-drift
-- baseline, healthcheck) reads it from ONE place: the view sync_last_load below.

CREATE VIEW sync_last_load AS
  SELECT id AS run_id, trigger, started_at, finished_at, now() - finished_at AS age
  FROM sync_runs
  WHERE status = 'succeeded' AND NOT dry_run
  -- Runs never overlap (one advisory lock per schema), so the newest id is the newest commit.
  ORDER BY id DESC
  LIMIT 1;

COMMENT ON VIEW sync_last_load IS 'The last successful sync that committed data (dry runs excluded): zero rows before the first one. The one definition of "last successful load" behind sync_runs_latest, the BI sync_freshness view, the wine_recon_sync_last_success_timestamp_seconds metric and healthcheck.';
COMMENT ON COLUMN sync_last_load.run_id IS 'sync_runs.id of that run.';
COMMENT ON COLUMN sync_last_load.trigger IS 'What started that run: schedule, manual, replay, file or demo.';
COMMENT ON COLUMN sync_last_load.started_at IS 'When that run started.';
COMMENT ON COLUMN sync_last_load.finished_at IS 'When that run committed: the data is as of this time.';
COMMENT ON COLUMN sync_last_load.age IS 'Time since that run finished, at query time.';

-- CREATE OR REPLACE keeps the view's columns, comments and grants (sql/bi_readonly_role.sql
-- grants it with exact=on). Dry runs still show under the other statuses: a failed dry run failed.
CREATE OR REPLACE VIEW sync_runs_latest AS
  SELECT * FROM (
    SELECT DISTINCT ON (status) status, id AS run_id, trigger, dry_run, started_at, finished_at,
           received, rejected, inserted, updated, deleted, error,
           now() - coalesce(finished_at, started_at) AS age
    FROM sync_runs
    WHERE status <> 'succeeded'
    ORDER BY status, started_at DESC
  ) other_statuses
  UNION ALL
  SELECT r.status, r.id, r.trigger, r.dry_run, r.started_at, r.finished_at,
         r.received, r.rejected, r.inserted, r.updated, r.deleted, r.error,
         l.age
  FROM sync_last_load l
  JOIN sync_runs r ON r.id = l.run_id;

COMMENT ON VIEW sync_runs_latest IS 'The most recent run of each status, for freshness dashboards and alerts. For succeeded it is the last run that committed data (sync_last_load: dry runs excluded), so the age of the succeeded row is the age of the data.';
COMMENT ON COLUMN sync_runs_latest.run_id IS 'sync_runs.id of the latest run with this status (for succeeded: the latest that committed data, never a dry run).';

-- sync_migrations is created by the migrator itself (src/db/migrate.ts), before any migration.
COMMENT ON TABLE sync_migrations IS 'Bookkeeping of wine-recon-sync: the schema migrations (sql/migrations/NNNN_name.sql) applied to this schema, each once. Not for reporting.';
COMMENT ON COLUMN sync_migrations.version IS 'Migration number (NNNN in the file name).';
COMMENT ON COLUMN sync_migrations.name IS 'Migration file name without .sql.';
COMMENT ON COLUMN sync_migrations.applied_at IS 'When the migration was applied.';
