-- The relations the job owns, as the connected database describes them (src/db/relations.ts):
-- the one description behind `schema --json`, `dbt-sources` and the lineage schema facets.
-- $1: schema names; $2: relation names (each schema's list, flattened: a relation is read when its
-- schema and name are both listed); pg_catalog, so a view's columns come in its own order.

-- name: relations
SELECT n.nspname AS schema, c.relname AS name,
       CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'view' ELSE 'table' END AS kind,
       obj_description(c.oid, 'pg_class') AS description
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = ANY($1) AND c.relname = ANY($2) AND c.relkind IN ('r', 'p', 'v', 'm')
ORDER BY n.nspname, c.relname;

-- name: columns
-- quote_ident says whether dbt must quote the name (a keyword, or not plain lower case).
SELECT n.nspname AS schema, c.relname AS relation, a.attname AS name, a.attnum::int AS position,
       format_type(a.atttypid, a.atttypmod) AS type, t.typname AS base_type,
       et.typname AS element_type, NOT a.attnotnull AS nullable,
       col_description(c.oid, a.attnum) AS description,
       quote_ident(a.attname) <> a.attname AS needs_quoting
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
WHERE n.nspname = ANY($1) AND c.relname = ANY($2) AND c.relkind IN ('r', 'p', 'v', 'm')
ORDER BY n.nspname, c.relname, a.attnum;

-- name: constraints
-- Keys (p, u, f) with their columns in key order, and the CHECKs on one column (a list of
-- allowed values is read from their text by the caller).
SELECT n.nspname AS schema, c.relname AS relation, k.conname AS name, k.contype AS kind,
       array(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(attnum, i)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum ORDER BY u.i) AS columns,
       fn.nspname AS ref_schema, fc.relname AS ref_relation,
       array(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(attnum, i)
             JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum ORDER BY u.i) AS ref_columns,
       pg_get_constraintdef(k.oid) AS definition
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_class fc ON fc.oid = k.confrelid
LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace
WHERE n.nspname = ANY($1) AND c.relname = ANY($2) AND k.contype IN ('p', 'u', 'f', 'c')
ORDER BY n.nspname, c.relname, k.contype, k.conname;

-- name: database
SELECT current_database() AS name,
       (SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1) AS data_description,
       (SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $2) AS bi_description;
