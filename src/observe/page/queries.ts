/**
 * The status page's reads: plain SELECTs on the pool (sql/page/page.sql), each table qualified
 * with the schema, so that they hold no session state and take no lock beyond a SELECT's.
 */
import type { Pool } from '../../db/pool.js';
import { quoteIdent, withIdentifiers } from '../../db/pool.js';
import { loadStatements } from '../../db/statements.js';
import type { StoredCheck } from '../../load/checks-store.js';

const NAMES = [
  'running',
  'last_load',
  'latest_finished',
  'runs_older',
  'runs_newer',
  'runs_count',
  'plot_runs',
  'run_by_id',
  'payload',
  'reject_reasons',
  'rejects_count',
  'rejects_page',
  'rejects_before',
  'reject_raw',
  'run_extra_fields',
  'fields',
  'catalogue_counts',
  'plot_totals',
  'bi_scale',
  'run_checks',
  'run_profile',
  'schema_ready',
] as const;
type Name = (typeof NAMES)[number];

export const STATUSES = ['running', 'succeeded', 'failed', 'aborted', 'abandoned'] as const;
export const TRIGGERS = [
  'schedule',
  'run-now',
  'catch-up',
  'retry',
  'page',
  'manual',
  'replay',
  'file',
  'demo',
] as const;

export interface RunningRun {
  id: string;
  trigger: string;
  dry_run: boolean;
  started_at: Date;
  source: string | null;
  /** Records and bytes so far, as the run last wrote them (every second or so); null before its first report. */
  received: string | null;
  bytes: string | null;
  rejects_so_far: string;
}

export interface RunLine {
  id: string;
  trigger: string;
  status: string;
  dry_run: boolean;
  started_at: Date;
  finished_at: Date | null;
  ms: string | null;
  received: string | null;
  inserted: string | null;
  updated: string | null;
  deleted: string | null;
  restored: string | null;
  rejected: string | null;
  skipped_unchanged: string | null;
  error_start: string | null;
  /**
   * The daemon's chain: 1 for a first attempt; a retry's first recorded attempt; when a failed run is to be tried
   * again.
   */
  attempt: number;
  retry_of: string | null;
  retry_at: Date | null;
  /** Its failed checks (sync_run_checks) of each severity: a warned run, a run a check refused. */
  checks_warned: string;
  checks_refused: string;
}

export interface LatestFinished {
  id: string;
  status: string;
  dry_run: boolean;
  finished_at: Date;
  error_start: string | null;
  attempt: number;
  retry_at: Date | null;
}

/** What a plot draws of a run: its line in the runs table, less what the plots do not show. */
export type PlotRun = Omit<
  RunLine,
  'trigger' | 'finished_at' | 'skipped_unchanged' | 'error_start' | 'attempt' | 'retry_of' | 'retry_at'
>;

/** A run's total of one numeric field: exact, and as the BI views round it (SYNC_BI_SCALE). */
export interface TotalPoint {
  run_id: string;
  field: string;
  total: string | null;
  bi_total: string | null;
  /** The run's failed checks on this field, comma-separated; null when none failed. */
  failed: string | null;
}

/** One row of sync_run_checks, as `status` reads it too. */
export type CheckLine = StoredCheck;

export interface ProfileLine {
  field: string;
  row_count: string;
  null_count: string;
  total: string | null;
  bi_total: string | null;
  min_value: string | null;
  max_value: string | null;
}

export interface RejectLine {
  position: string;
  record_id: string | null;
  errors: Array<{ path: string; message: string }>;
  raw_start: string;
  raw_length: number;
}

export interface FieldRow {
  name: string;
  column_name: string | null;
  bi_kind: string;
  kinds: string[];
  first_run_id: string;
  last_run_id: string;
  records: string;
  note: string | null;
  discovered_at: Date;
}

export interface RunFilter {
  status?: string | undefined;
  trigger?: string | undefined;
}

export class PageQueries {
  private readonly sql: Record<Name, string>;

  constructor(
    private readonly pool: Pool,
    private readonly schema: string,
  ) {
    const loaded = loadStatements('page/page.sql', NAMES);
    this.sql = Object.fromEntries(NAMES.map((n) => [n, withIdentifiers(loaded[n], { schema })])) as Record<
      Name,
      string
    >;
  }

  private async rows<T>(name: Name, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(this.sql[name], params)).rows as T[];
  }

  /** Whether sync_runs exists in the schema. */
  async schemaReady(): Promise<boolean> {
    return (await this.rows<{ ready: boolean }>('schema_ready', [`${quoteIdent(this.schema)}.sync_runs`]))[0]!.ready;
  }

  async running(): Promise<RunningRun | undefined> {
    return (await this.rows<RunningRun>('running'))[0];
  }

  async lastLoad(): Promise<{ id: string; finished_at: Date } | undefined> {
    return (await this.rows<{ id: string; finished_at: Date }>('last_load'))[0];
  }

  async latestFinished(): Promise<LatestFinished | undefined> {
    return (await this.rows<LatestFinished>('latest_finished'))[0];
  }

  /** A page of the history: `before` an id (older), or `after` one (newer); newest first either way. */
  async runs(
    filter: RunFilter,
    page: { before?: string | undefined; after?: string | undefined },
    limit: number,
  ): Promise<RunLine[]> {
    const f = [filter.status ?? null, filter.trigger ?? null];
    if (page.after !== undefined) return (await this.rows<RunLine>('runs_newer', [page.after, ...f, limit])).reverse();
    return this.rows<RunLine>('runs_older', [page.before ?? null, ...f, limit]);
  }

  async runsCount(filter: RunFilter): Promise<number> {
    return Number(
      (await this.rows<{ runs: string }>('runs_count', [filter.status ?? null, filter.trigger ?? null]))[0]!.runs,
    );
  }

  /** The last `n` finished runs, oldest first. */
  async plotRuns(n: number): Promise<PlotRun[]> {
    return (await this.rows<PlotRun>('plot_runs', [n])).reverse();
  }

  async run(id: string): Promise<Record<string, unknown> | undefined> {
    return (await this.rows<Record<string, unknown>>('run_by_id', [id]))[0];
  }

  async payload(
    id: string,
  ): Promise<{ sha256: string; bytes: string; algorithm: string; stored_bytes: string | null } | undefined> {
    return (
      await this.rows<{ sha256: string; bytes: string; algorithm: string; stored_bytes: string | null }>('payload', [
        id,
      ])
    )[0];
  }

  async rejectReasons(id: string, limit: number): Promise<Array<{ path: string; message: string; records: string }>> {
    return this.rows('reject_reasons', [id, limit]);
  }

  async rejectsCount(id: string): Promise<number> {
    return Number((await this.rows<{ rejects: string }>('rejects_count', [id]))[0]!.rejects);
  }

  async rejects(id: string, after: string, limit: number, rawChars: number): Promise<RejectLine[]> {
    return this.rows<RejectLine>('rejects_page', [id, after, limit, rawChars]);
  }

  /** The first position of the page before `position`, or undefined when it is the first page. */
  async rejectsPageBefore(id: string, position: string, limit: number): Promise<string | undefined> {
    const first = (await this.rows<{ first: string | null }>('rejects_before', [id, position, limit]))[0]?.first;
    return first ?? undefined;
  }

  async rejectRaw(id: string, position: string): Promise<string | undefined> {
    return (await this.rows<{ raw: string }>('reject_raw', [id, position]))[0]?.raw;
  }

  async runExtraFields(
    id: string,
  ): Promise<
    Array<{ name: string; column_name: string | null; bi_kind: string; records: string; note: string | null }>
  > {
    return this.rows('run_extra_fields', [id]);
  }

  /** The numeric fields' totals of these runs (sync_run_profiles), by field, then run. */
  async plotTotals(runIds: readonly string[]): Promise<TotalPoint[]> {
    if (runIds.length === 0) return [];
    return this.rows<TotalPoint>('plot_totals', [runIds]);
  }

  /** SYNC_BI_SCALE as the BI views were installed with it; undefined before they were. */
  async biScale(): Promise<number | undefined> {
    return (await this.rows<{ scale: number }>('bi_scale'))[0]?.scale;
  }

  /** The run's checks, failed first. */
  async runChecks(id: string): Promise<CheckLine[]> {
    return this.rows<CheckLine>('run_checks', [id]);
  }

  async runProfile(id: string): Promise<ProfileLine[]> {
    return this.rows<ProfileLine>('run_profile', [id]);
  }

  async fields(): Promise<FieldRow[]> {
    return this.rows<FieldRow>('fields');
  }

  async catalogueCounts(): Promise<
    | {
        id: string;
        field_counts: { records: number; fields: Record<string, { present: number; non_null: number }> } | null;
      }
    | undefined
  > {
    return (
      await this.rows<{
        id: string;
        field_counts: { records: number; fields: Record<string, { present: number; non_null: number }> } | null;
      }>('catalogue_counts')
    )[0];
  }
}
