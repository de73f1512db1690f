-- The migration runner (src/db/migrate.ts), in one transaction under the migrate lock.
-- {{schema}} is SYNC_DB_SCHEMA, substituted as a quoted identifier.

-- name: schema_exists
-- Checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the database.
SELECT 1 FROM pg_namespace WHERE nspname = $1;

-- name: create_schema
CREATE SCHEMA {{schema}};

-- name: use_schema
SET LOCAL search_path TO {{schema}};

-- name: create_migrations_table
-- Its COMMENTs are in migration 0007.
CREATE TABLE IF NOT EXISTS sync_migrations (
  version    integer     PRIMARY KEY,
  name       text        NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: lacks_app_version
-- app_version: which release applied each migration, so that an older release started against a
-- newer schema can name the release it needs (SchemaTooNewError). Added by the runner, not by a
-- numbered migration: a release records it for every migration it applies, the first ones included.
SELECT NOT EXISTS (
  SELECT 1 FROM pg_attribute WHERE attrelid = 'sync_migrations'::regclass AND attname = 'app_version' AND NOT attisdropped
) AS lacks;

-- name: add_app_version
ALTER TABLE sync_migrations ADD COLUMN app_version text;
COMMENT ON COLUMN sync_migrations.app_version IS 'Version of wine-recon-sync that applied the migration (package.json); null for migrations applied before this column existed.';

-- name: applied
SELECT version, name, app_version FROM sync_migrations ORDER BY version;

-- name: record
INSERT INTO sync_migrations (version, name, app_version) VALUES ($1, $2, $3);
