-- Who blocks the run's connections ($1: their backend pids), sampled from another connection while
-- the run waits. The blocker is named by pid, role, application, state and what it waits on, never
-- by its SQL text: that is another role's query, and the error is stored where BI users read it.

-- name: blocked_by
-- pg_blocking_pids() briefly takes the lock manager's locks, so it is only called for a backend
-- that pg_stat_activity already shows waiting on a Lock; otherwise this returns no row at once.
WITH waiting AS (
  SELECT pid FROM pg_stat_activity WHERE pid = ANY ($1::int[]) AND wait_event_type = 'Lock'
), wanted AS (
  SELECT l.pid, l.mode, l.locktype,
         CASE WHEN c.oid IS NULL THEN NULL ELSE format('%I.%I', n.nspname, c.relname) END AS relation
  FROM pg_locks l
  JOIN waiting w ON w.pid = l.pid
  LEFT JOIN pg_class c ON c.oid = l.relation
  LEFT JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE NOT l.granted
  LIMIT 1
)
SELECT wanted.relation, wanted.mode, wanted.locktype,
       b.pid, b.usename, b.application_name, b.state, b.wait_event_type, b.wait_event,
       floor(extract(epoch FROM clock_timestamp() - coalesce(b.xact_start, b.query_start, b.backend_start)))::int AS seconds
FROM wanted
LEFT JOIN LATERAL unnest(pg_blocking_pids(wanted.pid)) AS blocker (pid) ON true
LEFT JOIN pg_stat_activity b ON b.pid = blocker.pid
ORDER BY b.pid;
