-- A read-only login role for BI tools (Metabase, Superset, Power BI, psql): it can read the data
-- tables, the views and the run audit, and nothing else (no payload bodies, no writes).
--
--   psql "$DATABASE_URL" -v schema=public -v role=wine_bi -v password='choose-one' -f sql/bi_readonly_role.sql
--
-- Safe to run again (e.g. after an upgrade adds views): it only creates what is missing and re-grants.
\set ON_ERROR_STOP on

SELECT format('CREATE ROLE %I LOGIN', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role')
\gexec

ALTER ROLE :"role" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';
-- Long BI queries must not hold back the sync: cap them.
ALTER ROLE :"role" SET statement_timeout = '5min';
ALTER ROLE :"role" SET default_transaction_read_only = on;

GRANT CONNECT ON DATABASE :"DBNAME" TO :"role";
GRANT USAGE ON SCHEMA :"schema" TO :"role";
GRANT SELECT ON
  :"schema".bulk_wine_reconciliation,
  :"schema".bulk_wine_reconciliation_current,
  :"schema".bulk_wine_reconciliation_history,
  :"schema".bulk_wine_reconciliation_closed_versions,
  :"schema".sync_runs,
  :"schema".sync_runs_latest,
  :"schema".sync_rejects
TO :"role";
