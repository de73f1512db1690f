/**
 * OpenLineage run events (SYNC_OPENLINEAGE_URL): START, then COMPLETE, FAIL or ABORT, keyed by
 * sync_runs.lineage_run_id. Rule: delivery is never waited for by the run, and dry runs send none.
 */
import { hostname } from 'node:os';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import { describeDatabase, type DatabaseDescription } from '../db/relations.js';
import {
  OUTPUT_RELATIONS,
  endEventType,
  inputDataset,
  lineageEvent,
  postgresNamespace,
  type EventType,
  type LineageContext,
  type RunQuality,
} from '../describe/lineage-events.js';
import type { StartedRun } from '../load/audit.js';
import { lineageRuns, type LineageRun } from '../load/lineage-runs.js';
import { runChecks, runProfiles } from '../load/run-quality.js';
import { jsonText } from '../describe/json-text.js';
import type { Logger, SecretRegistry } from '../log.js';
import { APP_VERSION } from '../io/paths.js';
import { deliver, GIVEN_UP, redactedUrl } from './notify.js';

/** The `producer` of every event: the package and its version. */
export const PRODUCER = `https://www.npmjs.com/package/wine-recon-sync/v/${APP_VERSION}`;

export interface LineageDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  secrets: SecretRegistry;
  /** Counts an event that could not be delivered (the metrics, when someone reads them). */
  onUndelivered?: () => void;
  /** Test hook: the delays between delivery attempts. */
  retryDelaysMs?: number[];
  /** Gives up every event not yet delivered (a batch command about to exit). */
  signal?: AbortSignal;
}

export class LineageEmitter {
  /**
   * Every event goes out after the one before it, in the order handed over: START before its end, an abandoned run's
   * ABORT before the next START.
   */
  private chain: Promise<void> = Promise.resolve();
  /** The runs one of whose events could not be delivered: logged once per run. */
  private readonly failedRuns = new Set<number>();
  private readonly pending = new Set<Promise<void>>();
  /** Events handed over and not yet delivered or given up on. */
  private waiting = 0;

  constructor(private readonly deps: LineageDeps) {}

  /** How many events are still on their way (handed over, neither delivered nor given up on). */
  get undelivered(): number {
    return this.waiting;
  }

  /** The run's row was written: ABORT for the runs it marked abandoned, then its START. Returns at once. */
  runStarted(run: StartedRun, abandoned: readonly number[] = []): void {
    this.queue([
      ...abandoned.map((id) => ({ id, type: 'end' as const })),
      { id: Number(run.id), type: 'START' as const },
    ]);
  }

  /** The run's row is finished: its end event. Returns at once. */
  runFinished(runId: number): void {
    this.queue([{ id: runId, type: 'end' }]);
  }

  /** Every event handed over so far delivered or given up on (a command waits for this before it exits). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }

  private queue(wanted: Array<{ id: number; type: 'START' | 'end' }>): void {
    this.waiting += wanted.length;
    const work = (this.chain = this.chain.then(() => this.send(wanted)));
    const tracked = work.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /** Reads what the events say and delivers them, one after the other; never throws. */
  private async send(wanted: Array<{ id: number; type: 'START' | 'end' }>): Promise<void> {
    let left = wanted.length;
    try {
      await this.sendEach(wanted, () => {
        left--;
        this.waiting--;
      });
    } finally {
      this.waiting -= left;
    }
  }

  private async sendEach(wanted: Array<{ id: number; type: 'START' | 'end' }>, done: () => void): Promise<void> {
    const { config, pool, log, signal } = this.deps;
    if (signal?.aborted) {
      wanted.forEach(() => this.deps.onUndelivered?.());
      return;
    }
    let runs: LineageRun[];
    let description: DatabaseDescription;
    let checks: Awaited<ReturnType<typeof runChecks>>;
    let profiles: Awaited<ReturnType<typeof runProfiles>>;
    // The checks and profile of the runs ending here (their rows are written with the run's).
    const ending = wanted.filter((w) => w.type === 'end').map((w) => w.id);
    try {
      [runs, description, checks, profiles] = await Promise.all([
        lineageRuns(
          pool,
          wanted.map((w) => w.id),
        ),
        describeDatabase(pool, { data: config.schema, bi: config.bi.schema }),
        runChecks(pool, ending),
        runProfiles(pool, ending),
      ]);
    } catch (error) {
      log.warn(
        { err: error, runs: wanted.map((w) => w.id) },
        'OpenLineage events not sent: cannot read the runs; the runs are unaffected',
      );
      this.deps.onUndelivered?.();
      return;
    }
    for (const w of wanted) {
      const run = runs.find((r) => r.id === w.id);
      const type: EventType | undefined =
        run === undefined || run.dryRun ? undefined : w.type === 'START' ? 'START' : endEventType(run.status);
      if (run !== undefined && type !== undefined) {
        const eventTime = w.type === 'START' ? run.startedAt : (run.finishedAt ?? new Date().toISOString());
        const id = String(run.id);
        const quality: RunQuality | undefined =
          w.type === 'end'
            ? { checks: checks.filter((c) => c.runId === id), profile: profiles.filter((p) => p.runId === id) }
            : undefined;
        await this.post(run.id, lineageEvent(type, run, this.context(run, description), eventTime, quality), type);
      }
      done();
    }
  }

  private context(run: LineageRun, description: DatabaseDescription): LineageContext {
    const { config } = this.deps;
    const database = { namespace: postgresNamespace(config.databaseUrl ?? ''), name: description.database };
    const pick = (relations: DatabaseDescription['data'], names: readonly string[]) =>
      names.flatMap((n) => relations.filter((r) => r.name === n));
    return {
      producer: PRODUCER,
      job: { namespace: config.openLineage!.namespace, name: `${description.database}.${config.schema}` },
      database,
      input: inputDataset(run, database, config.schema, hostname()),
      outputs: [...pick(description.data, OUTPUT_RELATIONS.data), ...pick(description.bi, OUTPUT_RELATIONS.bi)],
    };
  }

  private async post(runId: number, event: Record<string, unknown>, type: EventType): Promise<void> {
    const { config, secrets, log } = this.deps;
    const url = config.openLineage!.url;
    const key = config.openLineage!.apiKey;
    const { agentFor } = await import('../extract/http/http-agents.js');
    // Scrubbed like a webhook's body: the error a FAIL carries is already, the rest has no secret, but one pass costs
    // nothing. jsonText: the data quality facets' sums, minima and maxima keep every digit.
    const body = secrets.scrub(jsonText(event));
    const result = await deliver(url, body, {
      agent: agentFor(config.proxy, url),
      headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
      ...(this.deps.retryDelaysMs ? { retryDelaysMs: this.deps.retryDelaysMs } : {}),
      ...(this.deps.signal ? { signal: this.deps.signal } : {}),
    });
    if (result.delivered) {
      log.debug({ runId, event: type }, 'OpenLineage event sent');
      return;
    }
    this.deps.onUndelivered?.();
    if (result.problem === GIVEN_UP || this.failedRuns.has(runId)) return;
    this.failedRuns.add(runId);
    log.warn(
      { runId, event: type, endpoint: redactedUrl(url), attempts: result.attempts, problem: result.problem },
      'OpenLineage event could not be delivered (later ones of this run are not logged); the run is unaffected',
    );
  }
}
