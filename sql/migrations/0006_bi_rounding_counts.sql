-- What the BI views did to the live values after each run (counted in the run's transaction), so
-- that a re-sync which changed nothing can carry the last count forward instead of reading every
-- live row again, and so that analysts can see the counts next to the run.

ALTER TABLE sync_runs
  ADD COLUMN bi_scale integer,
  ADD COLUMN bi_rounded bigint,
  ADD COLUMN bi_overflow bigint;

COMMENT ON COLUMN sync_runs.bi_scale IS 'SYNC_BI_SCALE when the run counted: fractional digits of the decimals in the BI views. Null when the run did not finish its load.';
COMMENT ON COLUMN sync_runs.bi_rounded IS 'After this run, live decimal values with more than bi_scale fractional digits: the BI views show them rounded (the exact tables keep every digit).';
COMMENT ON COLUMN sync_runs.bi_overflow IS 'After this run, live decimal values too large for numeric(28, bi_scale): NULL in the BI views, named in their overflow_columns.';
