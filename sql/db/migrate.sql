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

-- name: applied
SELECT version FROM sync_migrations;

-- name: record
INSERT INTO sync_migrations (version, name) VALUES ($1, $2);
