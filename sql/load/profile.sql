-- The run's profile (src/load/profile.ts): per field, live rows, nulls, exact sum, min and max,
-- inside the run's transaction, after its changes. Rendered per profiled field i by
-- src/load/profile.ts (renderAggregates):
--   {{values}}      its value v<i> once per row: a column, or a typed member of extra_fields
--                   whose name is a parameter (NULL when the member is absent or of another kind)
--   {{aggregates}}  count(*) FILTER (WHERE v<i> IS NULL) AS n<i>, sum(v<i>)::text AS s<i> (numeric
--                   fields), min and max as text AS lo<i>, hi<i> (numeric and date fields; dates YYYY-MM-DD)
-- OFFSET 0 keeps each subquery a subquery: pulled up, its expressions would be copied into every
-- aggregate that reads them, and a member of extra_fields extracted four times a row.

-- name: profiled_extras
-- Fields outside the catalogue that every value seen so far types as numeric or date (sync_fields.bi_kind).
SELECT name, bi_kind FROM sync_fields WHERE bi_kind IN ('number', 'date') ORDER BY name;

-- name: live_values
-- Every live row: the full aggregate.
SELECT count(*) AS c{{aggregates}}
FROM (SELECT {{values}} FROM bulk_wine_reconciliation t WHERE t.deleted_at IS NULL OFFSET 0) v;

-- name: replaced_values
-- What this run's changes took away from the live rows: the versions close_versions closed in this
-- transaction (valid_to = now(), the transaction's start) of the rows classified 'update' or
-- 'delete'. A restored row was not live before, so it took nothing away.
SELECT count(*) AS c{{aggregates}}
FROM (SELECT {{values}}
      FROM staging_changes c
      JOIN bulk_wine_reconciliation_closed_versions t ON t.id = c.id AND t.valid_to = now()
      WHERE c.action IN ('update', 'delete') OFFSET 0) v;

-- name: written_values
-- What this run's changes put in: the rows classified 'insert', 'update' or 'restore', as they are now.
SELECT count(*) AS c{{aggregates}}
FROM (SELECT {{values}}
      FROM staging_changes c
      JOIN bulk_wine_reconciliation t ON t.id = c.id
      WHERE c.action IN ('insert', 'update', 'restore') AND t.deleted_at IS NULL OFFSET 0) v;

-- name: base_profile
-- The profile a run starts from: the one stored by the last successful run that committed.
SELECT field, row_count::text, null_count::text, total::text, min_value, max_value
FROM sync_run_profiles WHERE run_id = $1;

-- name: store_profile
INSERT INTO sync_run_profiles (run_id, field, row_count, null_count, total, min_value, max_value)
SELECT $1, p.field, p.row_count, p.null_count, p.total, p.min_value, p.max_value
FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::numeric[], $6::text[], $7::text[])
  AS p (field, row_count, null_count, total, min_value, max_value);
