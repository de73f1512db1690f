/** The runs as OpenLineage events describe them (src/observe/lineage.ts), read from sync_runs. */
import type { Pool } from '../db/pool.js';
import { loadStatements } from '../db/statements.js';
import type { RunStatus, Trigger } from './audit.js';

const SQL = loadStatements('load/lineage.sql', ['runs']);

export interface LineageRun {
  id: number;
  /** sync_runs.lineage_run_id: the runId of every event of this run. */
  runId: string;
  trigger: Trigger;
  status: RunStatus;
  dryRun: boolean;
  startedAt: string;
  finishedAt: string | null;
  /** As stored: already scrubbed of secrets. */
  error: string | null;
  /** Where the run read from: the listing URL, a file, or `replay of run N (...)`. */
  source: string | null;
  /** Rows of the data table the run wrote (inserted, updated, deleted, restored); null before it finished. */
  rowsWritten: number | null;
  /** For a retry: the runId of its chain's first attempt. */
  firstAttemptRunId: string | null;
}

export async function lineageRuns(pool: Pool, ids: readonly number[]): Promise<LineageRun[]> {
  const { rows } = await pool.query<Record<string, unknown>>(SQL.runs, [ids]);
  const count = (v: unknown) => (v === null ? 0 : Number(v));
  return rows.map((r) => ({
    id: Number(r.id),
    runId: r.lineage_run_id as string,
    trigger: r.trigger as Trigger,
    status: r.status as RunStatus,
    dryRun: r.dry_run as boolean,
    startedAt: (r.started_at as Date).toISOString(),
    finishedAt: r.finished_at === null ? null : (r.finished_at as Date).toISOString(),
    error: r.error as string | null,
    source: r.source as string | null,
    rowsWritten:
      r.finished_at === null ? null : count(r.inserted) + count(r.updated) + count(r.deleted) + count(r.restored),
    firstAttemptRunId: r.first_attempt_run_id as string | null,
  }));
}
