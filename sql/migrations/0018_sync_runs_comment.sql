-- The table's own comment still named the triggers of the first release; BI tools, the data
-- dictionary, schema --json and the docs generated from it show it, so it names them all now.

COMMENT ON TABLE sync_runs IS 'One row per sync run, whatever started it (the daemon''s schedule, run-now, catch-up, retry, the status page, a manual run, a replay, a file, the demo: see trigger): its outcome and counts. The freshness of the data lives here.';
