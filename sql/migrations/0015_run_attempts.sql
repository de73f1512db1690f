-- Run-level retries and the daemon's triggers. A run the daemon tries again is a run of its own,
-- with its own row: `attempt` counts the tries of one slot's chain, and `retry_of` points every
-- retry at the chain's first recorded attempt. The daemon's runs now say what started them:
-- run-now (schedule --run-now), catch-up (a slot made up at start), retry, page (the status page's
-- Run now button). Rows written before keep their triggers and are first attempts.

ALTER TABLE sync_runs DROP CONSTRAINT sync_runs_trigger_check;
ALTER TABLE sync_runs ADD CONSTRAINT sync_runs_trigger_check
  CHECK (trigger IN ('schedule', 'manual', 'replay', 'file', 'demo', 'run-now', 'catch-up', 'retry', 'page'));

ALTER TABLE sync_runs
  ADD COLUMN attempt integer NOT NULL DEFAULT 1 CONSTRAINT sync_runs_attempt_check CHECK (attempt >= 1),
  ADD COLUMN retry_of bigint CONSTRAINT sync_runs_retry_of_fkey REFERENCES sync_runs (id),
  ADD COLUMN retry_at timestamptz,
  ADD CONSTRAINT sync_runs_retry_of_check CHECK (retry_of IS NULL OR (retry_of < id AND attempt > 1));

-- A chain's attempts, found from its first (status page, catch-up).
CREATE INDEX sync_runs_retry_of_idx ON sync_runs (retry_of) WHERE retry_of IS NOT NULL;

COMMENT ON COLUMN sync_runs.trigger IS 'What started the run: schedule (daemon), run-now (schedule --run-now), catch-up (the daemon making up a slot at start), retry (the daemon trying a failed run again), page (the status page''s Run now), manual (CLI run), replay (archived payload), file (run --from-file), demo.';
COMMENT ON COLUMN sync_runs.attempt IS 'Which try of one scheduled run this is: 1 for a first attempt, 2 for the first retry, and so on (SYNC_RUN_RETRY_DELAYS).';
COMMENT ON COLUMN sync_runs.retry_of IS 'For a retry: sync_runs.id of the first recorded attempt of its chain; null for a first attempt.';
COMMENT ON COLUMN sync_runs.retry_at IS 'For a failed run of the daemon: when it will be tried again (SYNC_RUN_RETRY_DELAYS); null when it will not (it succeeded, its failure needs a person, every retry is spent, or the next scheduled run comes first).';
COMMENT ON COLUMN sync_last_load.trigger IS 'What started that run: schedule, run-now, catch-up, retry, page, manual, replay, file or demo.';
