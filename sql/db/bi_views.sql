-- Installing the BI views (src/db/bi-views.ts; the views themselves are sql/bi/views.sql), inside
-- the migrate transaction. {{schema}} and {{view}} are substituted as quoted identifiers;
-- {{grantee}} too, or PUBLIC; {{privilege}} is a privilege name as pg_class.relacl lists it.

-- name: installed
SELECT bi_schema, definition_sha256 FROM sync_bi_views;

-- name: schema_exists
-- Checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the database.
SELECT 1 FROM pg_namespace WHERE nspname = $1;

-- name: create_schema
CREATE SCHEMA {{schema}};

-- name: views_present
-- $2: the names of the BI views.
SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind = 'v' AND c.relname = ANY($2);

-- name: current_grants
-- What others than the owner were granted on the BI views: dropping a view drops its grants.
SELECT c.relname AS view, a.privilege_type AS privilege, r.rolname AS grantee
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL aclexplode(c.relacl) a
LEFT JOIN pg_roles r ON r.oid = a.grantee
WHERE n.nspname = $1 AND c.relname = ANY($2) AND a.grantee <> c.relowner;

-- name: grant
GRANT {{privilege}} ON {{schema}}.{{view}} TO {{grantee}};

-- name: record_installed
INSERT INTO sync_bi_views (bi_schema, scale, definition_sha256) VALUES ($1, $2, $3)
ON CONFLICT (singleton) DO UPDATE SET bi_schema = excluded.bi_schema, scale = excluded.scale,
  definition_sha256 = excluded.definition_sha256, installed_at = now();

-- name: drop_views
-- The views of sql/bi/views.sql (BI_VIEWS in src/db/bi-views.ts).
DROP VIEW IF EXISTS {{schema}}.reconciliation, {{schema}}.reconciliation_history, {{schema}}.sync_freshness, {{schema}}.data_dictionary,
  {{schema}}.run_profiles, {{schema}}.run_checks;

-- name: savepoint
SAVEPOINT drop_old_bi_schema;

-- name: rollback_to_savepoint
ROLLBACK TO SAVEPOINT drop_old_bi_schema;

-- name: drop_schema
-- RESTRICT (the default): the schema goes only when nothing else lives in it.
DROP SCHEMA {{schema}};

-- name: extra_field_columns
-- The extra fields that have a column (src/db/bi-extra-fields.ts), in the
-- order they were given one. Their names are the upstream's: quoted here, by PostgreSQL. $1: the
-- field catalogue's names: a field a later release added to it has its column from the catalogue.
SELECT column_name, bi_kind, first_run_id::text AS first_run_id, quote_literal(name) AS key_literal,
       quote_literal(column_name) AS column_literal, to_json(name)::text AS name_json
FROM sync_fields
WHERE column_name IS NOT NULL AND name <> ALL ($1) AND column_name <> ALL ($1)
ORDER BY first_run_id, column_name;

-- name: quote_literals
-- $1 as string literals, in order: texts that hold upstream field names (column comments).
SELECT quote_literal(t) AS literal FROM unnest($1::text[]) WITH ORDINALITY AS u (t, n) ORDER BY n;
