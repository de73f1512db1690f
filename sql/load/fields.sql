-- The upstream fields a run found that the field catalogue does not know (src/load/extra-fields.ts),
-- in the run's transaction. Names are the upstream's (untrusted): they travel only as parameters.

-- name: recorded
SELECT name, column_name, kinds, note FROM sync_fields;

-- name: reserved_words
-- Words a column must not be named plainly: PostgreSQL's reserved keywords.
SELECT word FROM pg_get_keywords() WHERE catcode IN ('R', 'T');

-- name: record
-- $1: the run; per field (the arrays in step): name, column (null: none), BI kind, kinds seen
-- (comma separated), records carrying it in this run, why it has no column.
INSERT INTO sync_fields AS f (name, column_name, bi_kind, kinds, first_run_id, last_run_id, records, note)
SELECT u.name, u.column_name, u.bi_kind, string_to_array(u.kinds, ','), $1, $1, u.records, u.note
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[]) AS u (name, column_name, bi_kind, kinds, records, note)
ON CONFLICT (name) DO UPDATE SET bi_kind = excluded.bi_kind, kinds = excluded.kinds, last_run_id = excluded.last_run_id, records = excluded.records;
