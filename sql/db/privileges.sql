-- What the job's role may do, read after a statement of the migrate transaction was refused for a
-- missing privilege (src/db/privileges.ts), in a transaction of its own. $1: SYNC_DB_SCHEMA,
-- $2: SYNC_BI_SCHEMA (NULL: not installed by this command). An owner is NULL when the schema is missing.

-- name: standing
SELECT current_user AS role,
       current_database() AS database,
       has_database_privilege(current_database(), 'CREATE') AS may_create_schemas,
       (SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = $1) AS data_owner,
       (SELECT has_schema_privilege(oid, 'CREATE') FROM pg_namespace WHERE nspname = $1) AS data_create,
       (SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = $2) AS bi_owner,
       (SELECT has_schema_privilege(oid, 'CREATE') FROM pg_namespace WHERE nspname = $2) AS bi_create;
