-- A read-only login role for BI tools (Power BI, Excel, Tableau, Metabase, Superset, DBeaver, psql).
-- By default it reads only the BI schema (SYNC_BI_SCHEMA: views with decimals every driver can
-- read), so a tool's navigator shows just what analysts need. Run it after the first `migrate`
-- (the BI schema must exist):
--
--   psql "$DATABASE_URL" -v schema=public -v role=wine_bi -v password='choose-one' -f sql/bi_readonly_role.sql
--
-- psql variables: schema (SYNC_DB_SCHEMA), role, password; optional bi_schema (default
-- <schema>_bi, as SYNC_BI_SCHEMA) and exact=on, which also grants the exact tables and views in
-- <schema> (every digit; no payload bodies, no migration bookkeeping). Without exact=on those
-- grants are revoked, so a re-run states the whole access. Nothing is ever writable.
--
-- Safe to run again (e.g. after an upgrade adds views): it only creates what is missing and re-grants.
\set ON_ERROR_STOP on
\if :{?bi_schema}
\else
  \set bi_schema :schema _bi
\endif
\if :{?exact}
\else
  \set exact off
\endif

SELECT format('CREATE ROLE %I LOGIN', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role')
\gexec

ALTER ROLE :"role" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';
-- Long BI queries must not hold back the sync: cap them.
ALTER ROLE :"role" SET statement_timeout = '5min';
ALTER ROLE :"role" SET default_transaction_read_only = on;

GRANT CONNECT ON DATABASE :"DBNAME" TO :"role";
-- The views read the exact tables with their owner's rights: this role needs no grant on them.
-- wine-recon-sync re-creates these views when SYNC_BI_SCALE changes and keeps their grants.
GRANT USAGE ON SCHEMA :"bi_schema" TO :"role";
GRANT SELECT ON ALL TABLES IN SCHEMA :"bi_schema" TO :"role";

\if :exact
GRANT USAGE ON SCHEMA :"schema" TO :"role";
GRANT SELECT ON
  :"schema".bulk_wine_reconciliation,
  :"schema".bulk_wine_reconciliation_current,
  :"schema".bulk_wine_reconciliation_history,
  :"schema".bulk_wine_reconciliation_closed_versions,
  :"schema".sync_runs,
  :"schema".sync_runs_latest,
  :"schema".sync_last_load,
  :"schema".sync_rejects,
  :"schema".sync_fields,
  :"schema".sync_run_profiles,
  :"schema".sync_run_checks
TO :"role";
\else
REVOKE SELECT ON ALL TABLES IN SCHEMA :"schema" FROM :"role";
REVOKE USAGE ON SCHEMA :"schema" FROM :"role";
\endif
