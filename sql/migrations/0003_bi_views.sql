-- What the BI views (SYNC_BI_SCHEMA) were last installed with: start-up compares it with the
-- settings and re-creates the views when they differ (src/db/bi-views.ts).

CREATE TABLE sync_bi_views (
  singleton          boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  bi_schema          text        NOT NULL,
  scale              integer     NOT NULL,
  definition_sha256  text        NOT NULL,
  installed_at       timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE sync_bi_views IS 'Bookkeeping: the settings the BI views were installed with (one row). Not for reporting.';
COMMENT ON COLUMN sync_bi_views.singleton IS 'Always true: the table has one row.';
COMMENT ON COLUMN sync_bi_views.bi_schema IS 'Schema holding the BI views (SYNC_BI_SCHEMA).';
COMMENT ON COLUMN sync_bi_views.scale IS 'Fractional digits of the decimals in the BI views (SYNC_BI_SCALE).';
COMMENT ON COLUMN sync_bi_views.definition_sha256 IS 'SHA-256 of the SQL that created the views: a new version with other definitions re-creates them.';
COMMENT ON COLUMN sync_bi_views.installed_at IS 'When the views were last (re-)created.';
