/**
 * The Prometheus metrics of the job (names are contract), in a registry of their own so that
 * nothing else in the process can add to or clash with them. The daemon serves them; `run` and
 * `replay` push them. Labels are closed sets (status, trigger, kind): never an error text, a URL
 * or anything secret.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { RECORD_KINDS, type RunHistory, type RunRow, type RunStatus, type Trigger } from '../load/audit.js';
import type { RunCheck, RunProfileField } from '../load/run-quality.js';

const FINISHED: RunStatus[] = ['succeeded', 'failed', 'aborted'];
/** Runs last from seconds (a small listing) to hours (a very large one, or SYNC_RUN_TIMEOUT_MS at 2 h). */
const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400];

export class SyncMetrics {
  readonly registry = new Registry();
  private readonly lastSuccess: Gauge;
  private readonly lastRun: Gauge<'status'>;
  private readonly runs: Counter<'status' | 'trigger'>;
  private readonly duration: Histogram;
  private readonly records: Gauge<'kind'>;
  private readonly running: Gauge;
  private readonly retryPending: Gauge;
  private readonly nextAttempt: Gauge;
  private readonly lineageFailures: Counter;
  private readonly checkFailed: Gauge<'check' | 'field' | 'severity'>;
  private readonly fieldTotal: Gauge<'field'>;

  constructor(options: { processMetrics: boolean; trigger: Trigger }) {
    const registers = [this.registry];
    this.lastSuccess = new Gauge({
      name: 'wine_recon_sync_last_success_timestamp_seconds',
      help: 'Unix time the last successful load (a succeeded, non-dry run; view sync_last_load) finished; 0 if there never was one. Read at start and after each run.',
      registers,
    });
    this.lastRun = new Gauge({
      name: 'wine_recon_sync_last_run_timestamp_seconds',
      help: 'Unix time the last run of each status finished.',
      labelNames: ['status'],
      registers,
    });
    this.runs = new Counter({
      name: 'wine_recon_sync_runs_total',
      help: 'Finished runs by status and trigger (continued from sync_runs at start).',
      labelNames: ['status', 'trigger'],
      registers,
    });
    this.duration = new Histogram({
      name: 'wine_recon_sync_run_duration_seconds',
      help: 'Wall time of runs, from start to finish, whatever their status.',
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.records = new Gauge({
      name: 'wine_recon_sync_last_run_records',
      help: 'Record counts of the last finished run, by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.running = new Gauge({
      name: 'wine_recon_sync_running',
      help: '1 while a run is in progress, else 0.',
      registers,
    });
    // A failed attempt with a retry pending is not yet a failure anyone must act on: the alert
    // rules hold "the last run failed" while this is 1 (deploy/prometheus/alerts.yml).
    this.retryPending = new Gauge({
      name: 'wine_recon_sync_retry_pending',
      help: '1 while the daemon waits to retry a failed run (SYNC_RUN_RETRY_DELAYS), else 0: a failure with 0 here was given up on.',
      registers,
    });
    this.nextAttempt = new Gauge({
      name: 'wine_recon_sync_next_attempt_timestamp_seconds',
      help: 'Unix time the daemon will retry the last failed run; 0 when no retry is pending.',
      registers,
    });
    this.lineageFailures = new Counter({
      name: 'wine_recon_sync_openlineage_undelivered_total',
      help: 'OpenLineage run events that could not be delivered to SYNC_OPENLINEAGE_URL after their retries (the runs are unaffected).',
      registers,
    });
    // Labels from sync_run_checks: check names and fields come from the catalogue, the kept fields
    // and SYNC_CHECKS_FILE.
    this.checkFailed = new Gauge({
      name: 'wine_recon_sync_check_failed',
      help: 'Checks of the last finished run (sync_run_checks): 1 when the check failed, 0 when it passed. field is empty for volume; severity warn or error (an error refused the run).',
      labelNames: ['check', 'field', 'severity'],
      registers,
    });
    this.fieldTotal = new Gauge({
      name: 'wine_recon_sync_field_total_value',
      help: 'Each numeric field summed over the live rows as the last successful load left them (sync_run_profiles.total). A float: the exact digits are in sync_run_profiles and the BI view run_profiles.',
      labelNames: ['field'],
      registers,
    });
    // Series that exist from the start, so rate() and increase() see the first run.
    for (const status of FINISHED) this.runs.inc({ status, trigger: options.trigger }, 0);
    if (options.processMetrics) {
      collectDefaultMetrics({ register: this.registry });
      // Gauges named *_total break the exposition format's conventions (promtool check metrics says so);
      // each is the sum of its per-type series (nodejs_active_handles{type} ...), which stay.
      for (const name of [
        'nodejs_active_handles_total',
        'nodejs_active_requests_total',
        'nodejs_active_resources_total',
      ]) {
        this.registry.removeSingleMetric(name);
      }
    }
  }

  /** Starting values from the audit trail, so a restarted daemon (or a batch push) does not report zeros. */
  seed(history: RunHistory): void {
    this.setLastSuccess(history.lastSuccess);
    const lastByStatus = new Map<RunStatus, number>();
    for (const t of history.totals) {
      this.runs.inc({ status: t.status, trigger: t.trigger }, t.runs);
      if (t.lastFinished !== null)
        lastByStatus.set(t.status, Math.max(t.lastFinished, lastByStatus.get(t.status) ?? 0));
    }
    for (const [status, seconds] of lastByStatus) this.lastRun.set({ status }, seconds);
    if (history.latest) this.setRecords(history.latest);
  }

  /** An OpenLineage event given up on. */
  lineageUndelivered(): void {
    this.lineageFailures.inc();
  }

  runStarted(): void {
    this.running.set(1);
  }

  runFinished(run: RunRow | undefined): void {
    this.running.set(0);
    if (!run) return;
    const finished = Date.parse(run.finished_at ?? run.started_at) / 1000;
    this.runs.inc({ status: run.status, trigger: run.trigger });
    this.lastRun.set({ status: run.status }, finished);
    this.duration.observe(Math.max(0, finished - Date.parse(run.started_at) / 1000));
    this.setRecords(run);
  }

  /** The last finished run's checks: its series replace the run before's, so a check gone is a series gone. */
  setChecks(checks: readonly RunCheck[]): void {
    this.checkFailed.reset();
    for (const c of checks)
      this.checkFailed.set({ check: c.check, field: c.field ?? '', severity: c.severity }, c.passed ? 0 : 1);
  }

  /**
   * The numeric fields' totals of the last successful load. The one place a decimal becomes a JS
   * number: a Prometheus sample is a float64, so a total of more than 15-17 significant digits is
   * rounded here; the exact text stays in the database.
   */
  setFieldTotals(profile: readonly RunProfileField[]): void {
    this.fieldTotal.reset();
    for (const p of profile) if (p.total !== null) this.fieldTotal.set({ field: p.field }, Number.parseFloat(p.total));
  }

  /** The retry the daemon waits for, or null when none is pending. */
  setRetry(at: Date | null): void {
    this.retryPending.set(at === null ? 0 : 1);
    this.nextAttempt.set(at === null ? 0 : at.getTime() / 1000);
  }

  /** Unix seconds of the last successful load (sync_last_load, read by the reporter after each run); 0: never. */
  setLastSuccess(seconds: number | null): void {
    this.lastSuccess.set(seconds ?? 0);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  private setRecords(run: RunRow): void {
    for (const kind of RECORD_KINDS) this.records.set({ kind }, run[kind] ?? 0);
  }
}
