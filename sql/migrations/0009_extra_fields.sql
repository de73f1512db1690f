-- New upstream fields are kept, not dropped. Every top-level member of a record that the field
-- catalogue (src/fields.ts) does not know goes into extra_fields, name and value as sent; jsonb
-- numbers are numerics, so every digit survives. sync_fields records each such field a run found,
-- and the BI views show the ones it could name as typed columns (src/db/bi-views.ts).

ALTER TABLE bulk_wine_reconciliation ADD COLUMN extra_fields jsonb;
ALTER TABLE bulk_wine_reconciliation_closed_versions ADD COLUMN extra_fields jsonb;

COMMENT ON COLUMN bulk_wine_reconciliation.extra_fields IS 'Every top-level field of the record that this version does not load into a column of its own, with its value exactly as sent (numbers keep every digit); null when the record has none, or with SYNC_EXTRA_FIELDS=drop. A change here is a change of the row. The fields are listed in sync_fields.';
COMMENT ON COLUMN bulk_wine_reconciliation_closed_versions.extra_fields IS 'The fields of this version that have no column of their own (as bulk_wine_reconciliation.extra_fields).';

-- CREATE OR REPLACE VIEW may only add columns at the end: comments and grants stay.
CREATE OR REPLACE VIEW bulk_wine_reconciliation_history AS
  SELECT id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales, vintage_forecast, vintage_make,
         first_sale, valid_from, valid_to, run_id, extra_fields
  FROM bulk_wine_reconciliation_closed_versions
  UNION ALL
  SELECT id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales, vintage_forecast, vintage_make,
         first_sale, changed_at, NULL::timestamptz, run_id, extra_fields
  FROM bulk_wine_reconciliation
  WHERE deleted_at IS NULL;
COMMENT ON COLUMN bulk_wine_reconciliation_history.extra_fields IS 'The fields of this version that have no column of their own, exactly as sent (see bulk_wine_reconciliation.extra_fields).';

CREATE OR REPLACE VIEW bulk_wine_reconciliation_current AS
  SELECT id, wpi, inventory_bulk_wine, inventory_finished_goods, inventory_sales,
         vintage_forecast, vintage_make, first_sale, first_seen_at, changed_at, run_id, extra_fields
  FROM bulk_wine_reconciliation
  WHERE deleted_at IS NULL;
COMMENT ON COLUMN bulk_wine_reconciliation_current.extra_fields IS 'Fields of the record that have no column of their own, exactly as sent (see bulk_wine_reconciliation.extra_fields).';

CREATE TABLE sync_fields (
  name           text        PRIMARY KEY,
  column_name    text,
  bi_kind        text        NOT NULL,
  kinds          text[]      NOT NULL,
  first_run_id   bigint      NOT NULL,
  last_run_id    bigint      NOT NULL,
  records        bigint      NOT NULL,
  note           text,
  discovered_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE sync_fields IS 'Upstream fields found at run time that the field catalogue of this version does not know: kept in extra_fields, and shown as typed columns of the BI views when they can be named. One row per field name, kept when the field disappears again.';
COMMENT ON COLUMN sync_fields.name IS 'The field''s name exactly as the upstream sends it (the key in extra_fields).';
COMMENT ON COLUMN sync_fields.column_name IS 'Its column in the BI views reconciliation and reconciliation_history; null when it has none (see note).';
COMMENT ON COLUMN sync_fields.bi_kind IS 'How the BI views show it, from the kinds of values seen: number (numeric(P,S), rounded like the other decimals), date (every string a YYYY-MM-DD date), text (strings), boolean, or json (text holding the JSON, for objects, arrays or a mix of kinds).';
COMMENT ON COLUMN sync_fields.kinds IS 'Kinds of JSON values seen in it so far, over every run: number, date, string, boolean, json (object or array). Nulls are not counted.';
COMMENT ON COLUMN sync_fields.first_run_id IS 'sync_runs.id of the run that first saw it.';
COMMENT ON COLUMN sync_fields.last_run_id IS 'sync_runs.id of the last run that saw it.';
COMMENT ON COLUMN sync_fields.records IS 'Records carrying it in the last run that saw it.';
COMMENT ON COLUMN sync_fields.note IS 'Why it has no column of its own (name not usable, or the column cap reached); null when it has one.';
COMMENT ON COLUMN sync_fields.discovered_at IS 'When it was first seen.';

-- A date for the BI views from a string that looks like one, or NULL: '2023-02-30' and year 0
-- match the pattern yet fail the cast, and PostgreSQL 15 has no pg_input_is_valid. The pattern
-- first, so that 'today' or 'epoch' never become dates.
CREATE FUNCTION sync_extra_date(value text) RETURNS date
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
BEGIN
  IF value !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN
    RETURN NULL;
  END IF;
  -- YYYY-MM-DD is read as year-month-day whatever DateStyle says.
  RETURN value::date;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION sync_extra_date(text) IS 'Internal to wine-recon-sync: the date a YYYY-MM-DD string names, or NULL when it names none (for the BI views'' date columns of new upstream fields).';
