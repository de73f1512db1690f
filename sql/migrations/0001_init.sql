-- wine-recon-sync schema, version 1. Runs with search_path set to SYNC_DB_SCHEMA.

CREATE TABLE sync_runs (
  id                    bigserial PRIMARY KEY,
  trigger               text        NOT NULL CHECK (trigger IN ('schedule', 'manual', 'replay', 'file', 'demo')),
  status                text        NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'aborted', 'abandoned')),
  dry_run               boolean     NOT NULL DEFAULT false,
  started_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at           timestamptz,
  reported_count        bigint,
  reported_record_count bigint,
  received              bigint,
  rejected              bigint,
  duplicates            bigint,
  inserted              bigint,
  updated               bigint,
  unchanged             bigint,
  deleted               bigint,
  restored              bigint,
  bytes                 bigint,
  error                 text,
  unknown_fields        text[],
  app_version           text        NOT NULL,
  source                text
);
CREATE INDEX sync_runs_status_started_idx ON sync_runs (status, started_at DESC);

COMMENT ON TABLE sync_runs IS 'One row per sync run (scheduled, manual, replay, file, demo): its outcome and counts. The freshness of the data lives here.';
COMMENT ON COLUMN sync_runs.id IS 'Run number; referenced by run_id in the data tables.';
COMMENT ON COLUMN sync_runs.trigger IS 'What started the run: schedule (daemon), manual (CLI run), replay (archived payload), file (run --from-file), demo.';
COMMENT ON COLUMN sync_runs.status IS 'running, succeeded, failed (nothing loaded; see error), aborted (stopped by a signal; nothing loaded), abandoned (the process died; nothing loaded).';
COMMENT ON COLUMN sync_runs.dry_run IS 'true when the run computed its counts and committed nothing to the data tables.';
COMMENT ON COLUMN sync_runs.started_at IS 'When the run started.';
COMMENT ON COLUMN sync_runs.finished_at IS 'When the run ended; null while running.';
COMMENT ON COLUMN sync_runs.reported_count IS 'The listing envelope''s "count" field as sent by the upstream.';
COMMENT ON COLUMN sync_runs.reported_record_count IS 'The listing envelope''s "recordCount" field as sent by the upstream.';
COMMENT ON COLUMN sync_runs.received IS 'Number of records in the listing array.';
COMMENT ON COLUMN sync_runs.rejected IS 'Records that failed validation (details in sync_rejects); duplicates not included.';
COMMENT ON COLUMN sync_runs.duplicates IS 'Records set aside because a later record in the same listing had the same id.';
COMMENT ON COLUMN sync_runs.inserted IS 'Records seen for the first time.';
COMMENT ON COLUMN sync_runs.updated IS 'Live records whose values changed.';
COMMENT ON COLUMN sync_runs.unchanged IS 'Live records whose values did not change (not rewritten).';
COMMENT ON COLUMN sync_runs.deleted IS 'Records soft-deleted because they were missing from the listing.';
COMMENT ON COLUMN sync_runs.restored IS 'Soft-deleted records that came back in the listing.';
COMMENT ON COLUMN sync_runs.bytes IS 'Size of the listing document in bytes, as received.';
COMMENT ON COLUMN sync_runs.error IS 'Why the run failed, aborted or was refused; null on success.';
COMMENT ON COLUMN sync_runs.unknown_fields IS 'Record fields present in the listing that this version does not load.';
COMMENT ON COLUMN sync_runs.app_version IS 'wine-recon-sync version that ran.';
COMMENT ON COLUMN sync_runs.source IS 'Where the listing came from: the API listing URL, the file path, or the replayed run.';

CREATE TABLE bulk_wine_reconciliation (
  id                        bigint      PRIMARY KEY,
  wpi                       text        NOT NULL,
  inventory_bulk_wine       numeric,
  inventory_finished_goods  numeric,
  inventory_sales           numeric,
  vintage_forecast          numeric,
  vintage_make              numeric,
  first_sale                date,
  first_seen_at             timestamptz NOT NULL,
  changed_at                timestamptz NOT NULL,
  deleted_at                timestamptz,
  run_id                    bigint      NOT NULL
);

COMMENT ON TABLE bulk_wine_reconciliation IS 'Bulk wine reconciliation records from the wine-production application, one row per upstream record id, including soft-deleted ones (deleted_at set). Units are not given by the upstream API. Use bulk_wine_reconciliation_current for live rows.';
COMMENT ON COLUMN bulk_wine_reconciliation.id IS 'Upstream record identifier.';
COMMENT ON COLUMN bulk_wine_reconciliation.wpi IS 'Wine identifier code (upstream "wpi"), trimmed.';
COMMENT ON COLUMN bulk_wine_reconciliation.inventory_bulk_wine IS 'Bulk wine inventory quantity; exact decimal as sent; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation.inventory_finished_goods IS 'Finished goods inventory quantity; exact decimal as sent; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation.inventory_sales IS 'Sales inventory quantity; exact decimal as sent (many fractional digits possible); unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation.vintage_forecast IS 'Vintage forecast quantity; exact decimal as sent; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation.vintage_make IS 'Vintage make quantity; exact decimal as sent; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation.first_sale IS 'Date of first sale as written upstream (no time zone conversion); null when unknown.';
COMMENT ON COLUMN bulk_wine_reconciliation.first_seen_at IS 'When a sync first loaded this record.';
COMMENT ON COLUMN bulk_wine_reconciliation.changed_at IS 'When a sync last changed this row (values, deletion or restoration).';
COMMENT ON COLUMN bulk_wine_reconciliation.deleted_at IS 'When the record disappeared from the upstream listing (soft delete); null while it is listed.';
COMMENT ON COLUMN bulk_wine_reconciliation.run_id IS 'sync_runs.id of the run that last changed this row.';

-- Type 2 history without copying every current row twice: closed versions live in their own
-- table, the current version of a live record is its row in bulk_wine_reconciliation, and the
-- history view joins both. A first load writes each row once; a change writes the old version.
CREATE TABLE bulk_wine_reconciliation_closed_versions (
  id                        bigint      NOT NULL,
  wpi                       text        NOT NULL,
  inventory_bulk_wine       numeric,
  inventory_finished_goods  numeric,
  inventory_sales           numeric,
  vintage_forecast          numeric,
  vintage_make              numeric,
  first_sale                date,
  valid_from                timestamptz NOT NULL,
  valid_to                  timestamptz NOT NULL,
  run_id                    bigint      NOT NULL,
  PRIMARY KEY (id, valid_from)
);

COMMENT ON TABLE bulk_wine_reconciliation_closed_versions IS 'Versions of records that were replaced or deleted. Query bulk_wine_reconciliation_history instead, which adds the current versions.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.id IS 'Upstream record identifier.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.wpi IS 'Wine identifier code in this version.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.inventory_bulk_wine IS 'Bulk wine inventory quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.inventory_finished_goods IS 'Finished goods inventory quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.inventory_sales IS 'Sales inventory quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.vintage_forecast IS 'Vintage forecast quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.vintage_make IS 'Vintage make quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.first_sale IS 'Date of first sale in this version.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.valid_from IS 'When this version was first loaded.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.valid_to IS 'When this version was replaced or the record deleted.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.run_id IS 'sync_runs.id of the run that opened this version.';

CREATE VIEW bulk_wine_reconciliation_history AS
  SELECT id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales, vintage_forecast, vintage_make,
         first_sale, valid_from, valid_to, run_id
  FROM bulk_wine_reconciliation_closed_versions
  UNION ALL
  SELECT id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales, vintage_forecast, vintage_make,
         first_sale, changed_at, NULL::timestamptz, run_id
  FROM bulk_wine_reconciliation
  WHERE deleted_at IS NULL;

COMMENT ON VIEW bulk_wine_reconciliation_history IS 'Every version of every record (type 2 history): a version is valid from valid_from until valid_to; valid_to is null for the current version. A deleted record has no current version. State at time T: valid_from <= T AND (valid_to IS NULL OR valid_to > T).';
COMMENT ON COLUMN bulk_wine_reconciliation_history.id IS 'Upstream record identifier.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.wpi IS 'Wine identifier code in this version.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.inventory_bulk_wine IS 'Bulk wine inventory quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.inventory_finished_goods IS 'Finished goods inventory quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.inventory_sales IS 'Sales inventory quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.vintage_forecast IS 'Vintage forecast quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.vintage_make IS 'Vintage make quantity in this version; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.first_sale IS 'Date of first sale in this version.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.valid_from IS 'When this version was first loaded.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.valid_to IS 'When this version was replaced or the record deleted; null for the current version.';
COMMENT ON COLUMN bulk_wine_reconciliation_history.run_id IS 'sync_runs.id of the run that opened this version.';

CREATE TABLE sync_rejects (
  run_id    bigint NOT NULL REFERENCES sync_runs (id) ON DELETE CASCADE,
  position  bigint NOT NULL,
  record_id text,
  errors    jsonb  NOT NULL,
  raw       text   NOT NULL,
  PRIMARY KEY (run_id, position)
);

COMMENT ON TABLE sync_rejects IS 'Records a run set aside: invalid ones with every reason, and earlier copies of duplicate ids.';
COMMENT ON COLUMN sync_rejects.run_id IS 'sync_runs.id of the run.';
COMMENT ON COLUMN sync_rejects.position IS 'Index of the record in the listing array (0-based).';
COMMENT ON COLUMN sync_rejects.record_id IS 'The record''s id as text, when readable.';
COMMENT ON COLUMN sync_rejects.errors IS 'List of {path, message}: the field and why it was rejected.';
COMMENT ON COLUMN sync_rejects.raw IS 'The record exactly as received (cut at 65536 characters).';

CREATE TABLE sync_payloads (
  run_id  bigint PRIMARY KEY REFERENCES sync_runs (id) ON DELETE CASCADE,
  sha256  text   NOT NULL,
  bytes   bigint NOT NULL,
  body    bytea  NOT NULL
);

COMMENT ON TABLE sync_payloads IS 'Archived listing documents (the newest SYNC_ARCHIVE_KEEP), for replay and audit.';
COMMENT ON COLUMN sync_payloads.run_id IS 'sync_runs.id of the run that received the listing.';
COMMENT ON COLUMN sync_payloads.sha256 IS 'SHA-256 of the listing exactly as received, hex.';
COMMENT ON COLUMN sync_payloads.bytes IS 'Size of the listing in bytes, uncompressed.';
COMMENT ON COLUMN sync_payloads.body IS 'gzip of the listing exactly as received.';

CREATE VIEW bulk_wine_reconciliation_current AS
  SELECT id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales,
         vintage_forecast, vintage_make, first_sale, first_seen_at, changed_at, run_id
  FROM bulk_wine_reconciliation
  WHERE deleted_at IS NULL;

COMMENT ON VIEW bulk_wine_reconciliation_current IS 'Records currently in the upstream listing (not soft-deleted). Start here for reporting.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.id IS 'Upstream record identifier.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.wpi IS 'Wine identifier code (upstream "wpi").';
COMMENT ON COLUMN bulk_wine_reconciliation_current.inventory_bulk_wine IS 'Bulk wine inventory quantity; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.inventory_finished_goods IS 'Finished goods inventory quantity; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.inventory_sales IS 'Sales inventory quantity; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.vintage_forecast IS 'Vintage forecast quantity; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.vintage_make IS 'Vintage make quantity; unit not specified upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.first_sale IS 'Date of first sale as written upstream.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.first_seen_at IS 'When a sync first loaded this record.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.changed_at IS 'When a sync last changed this row.';
COMMENT ON COLUMN bulk_wine_reconciliation_current.run_id IS 'sync_runs.id of the run that last changed this row.';

CREATE VIEW sync_runs_latest AS
  SELECT DISTINCT ON (status) status, id AS run_id, trigger, dry_run, started_at, finished_at,
         received, rejected, inserted, updated, deleted, error,
         now() - coalesce(finished_at, started_at) AS age
  FROM sync_runs
  ORDER BY status, started_at DESC;

COMMENT ON VIEW sync_runs_latest IS 'The most recent run of each status: for freshness dashboards and alerts (e.g. age of the latest succeeded run).';
COMMENT ON COLUMN sync_runs_latest.status IS 'Run status.';
COMMENT ON COLUMN sync_runs_latest.run_id IS 'sync_runs.id of the latest run with this status.';
COMMENT ON COLUMN sync_runs_latest.trigger IS 'What started that run.';
COMMENT ON COLUMN sync_runs_latest.dry_run IS 'Whether that run was a dry run.';
COMMENT ON COLUMN sync_runs_latest.started_at IS 'When that run started.';
COMMENT ON COLUMN sync_runs_latest.finished_at IS 'When that run ended.';
COMMENT ON COLUMN sync_runs_latest.received IS 'Records received by that run.';
COMMENT ON COLUMN sync_runs_latest.rejected IS 'Records rejected by that run.';
COMMENT ON COLUMN sync_runs_latest.inserted IS 'Records inserted by that run.';
COMMENT ON COLUMN sync_runs_latest.updated IS 'Records updated by that run.';
COMMENT ON COLUMN sync_runs_latest.deleted IS 'Records soft-deleted by that run.';
COMMENT ON COLUMN sync_runs_latest.error IS 'Why that run failed, if it did.';
COMMENT ON COLUMN sync_runs_latest.age IS 'Time since that run ended (or started, if still running).';
