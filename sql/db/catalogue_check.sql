-- The start-up check of the field catalogue against the migrated tables (src/db/catalogue-check.ts).

-- name: columns
-- Every column of the tables that hold the record's fields, with its declared type as PostgreSQL
-- writes it (a numeric with a precision would show as numeric(p,s): it could lose digits).
-- $1: the schema; $2: the table names.
SELECT c.relname AS table_name, a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = ANY ($2) AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped;
