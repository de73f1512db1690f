-- The login role wine-recon-sync runs as, with what it needs and no more: it owns its two schemas,
-- SYNC_DB_SCHEMA and SYNC_BI_SCHEMA (created here for it), so that it can create, alter and
-- re-create its tables, functions and views there. It cannot create other schemas, roles or
-- databases, and it is no superuser. Run it as a superuser, or as the admin user of a managed
-- service (RDS, Cloud SQL, Azure, Supabase's postgres role), before the job's first start:
--
--   psql "$ADMIN_URL" -v role=wine_sync -v password='choose-one' -v schema=wine -f sql/sync_role.sql
--
-- psql variables: role, schema (SYNC_DB_SCHEMA); optional password (leave it out for a role that
-- logs in by certificate or IAM), bi_schema (default <schema>_bi, as SYNC_BI_SCHEMA), and
-- create_on_database=on: instead of creating the schemas now, allow the role to create schemas in
-- the database (GRANT CREATE ON DATABASE), and the job creates its two at its first start.
--
-- Safe to run again: it only creates what is missing.
\set ON_ERROR_STOP on
\if :{?bi_schema}
\else
  \set bi_schema :schema _bi
\endif
\if :{?create_on_database}
\else
  \set create_on_database off
\endif

SELECT format('CREATE ROLE %I LOGIN', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role')
\gexec

ALTER ROLE :"role" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
\if :{?password}
ALTER ROLE :"role" WITH PASSWORD :'password';
\endif

-- TEMPORARY: each run stages the listing in temporary tables (PUBLIC has it unless a site revoked it).
GRANT CONNECT, TEMPORARY ON DATABASE :"DBNAME" TO :"role";

\if :create_on_database
GRANT CREATE ON DATABASE :"DBNAME" TO :"role";
\else
-- Giving a schema to a role takes membership in it, which an admin user that is no superuser
-- (PostgreSQL 16 and later, managed services) does not get by creating the role.
SELECT format('GRANT %I TO %I', :'role', current_user)
WHERE NOT pg_has_role(current_user, :'role', 'MEMBER')
\gexec
CREATE SCHEMA IF NOT EXISTS :"schema" AUTHORIZATION :"role";
ALTER SCHEMA :"schema" OWNER TO :"role";
CREATE SCHEMA IF NOT EXISTS :"bi_schema" AUTHORIZATION :"role";
ALTER SCHEMA :"bi_schema" OWNER TO :"role";
\endif
