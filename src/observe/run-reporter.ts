/**
 * Everything around a run for those who watch it: metrics, chat notification, Pushgateway push.
 * Rule: none of it changes a run's outcome or exit code; each failure is logged and dropped.
 * A batch command waits for what is on its way at most SYNC_EXIT_FLUSH_TIMEOUT before it exits.
 */
import { hostname } from 'node:os';
import type { Config } from '../config.js';
import { urlWhere } from '../outbound/database-url.js';
import type { Pool } from '../db/pool.js';
import { LockHeldError, describeError, isUsageMistake } from '../errors.js';
import {
  lastLoad,
  latestFinishedBefore,
  runHistory,
  type LastLoad,
  type StartedRun,
  type Trigger,
} from '../load/audit.js';
import { runChecks, runProfiles } from '../load/run-quality.js';
import { LineageEmitter } from './lineage.js';
import type { SyncMetrics } from './metrics.js';
import {
  deliver,
  GIVEN_UP,
  notificationBody,
  notifyEvent,
  redactedUrl,
  type ChainNotice,
  type RunNotice,
  type Where,
} from './notify.js';
import type { Logger } from '../log.js';
import { urlSecrets, webhookSecrets, type SecretRegistry } from '../text/secret-registry.js';
import type { SyncOutcome } from '../run/sync.js';

export const PUSH_JOB = 'wine_recon_sync';

/** What a reporter needs of the command's context. */
export interface ReporterDeps {
  config: Config;
  secrets: SecretRegistry;
  pool: Pool;
  log: Logger;
}
const PUSH_TIMEOUT_MS = 10_000;

export interface ReporterOptions {
  /** The daemon: its metrics always exist (served on SYNC_METRICS_PORT) and include the process's own. */
  daemon: boolean;
  trigger: Trigger;
}

export class RunReporter {
  /** Set by start() for the daemon, and for `run`/`replay` with a Pushgateway; undefined: nobody would read them. */
  metrics: SyncMetrics | undefined;
  /** What the last read of sync_last_load found (null: no successful load yet; undefined: not read). */
  latestLoad: LastLoad | null | undefined;
  private readonly where: Where;
  /** The run in progress, as runStarted was told; undefined between runs. */
  current: StartedRun | undefined;
  /** OpenLineage run events, when SYNC_OPENLINEAGE_URL is set. */
  private readonly lineage: LineageEmitter | undefined;
  /** The webhook and the Pushgateway push while they are on their way, with where they go (no secret). */
  private readonly inFlight = new Set<{ destination: string; what: string; done: Promise<void> }>();
  /** Ends every delivery still on its way: a batch command's exit bound has passed (flush). */
  private readonly giveUp = new AbortController();

  constructor(
    private readonly ctx: ReporterDeps,
    private readonly options: ReporterOptions,
  ) {
    const { config, secrets } = ctx;
    if (config.notify) {
      // A webhook URL is a credential: its path and query are what authorizes the POST.
      for (const value of webhookSecrets(config.notify.url)) secrets.add(value);
    }
    for (const value of urlSecrets(config.pushgatewayUrl)) secrets.add(value);
    for (const value of urlSecrets(config.openLineage?.url)) secrets.add(value);
    this.where = { host: hostname(), database: databaseName(config.databaseUrl), schema: config.schema };
    this.lineage = config.openLineage
      ? new LineageEmitter({
          ...ctx,
          onUndelivered: () => this.metrics?.lineageUndelivered(),
          signal: this.giveUp.signal,
        })
      : undefined;
  }

  /** Creates the metrics, if anyone reads them, and seeds them from sync_runs (last success, totals, last counts). */
  async start(): Promise<void> {
    if (!this.options.daemon && !this.ctx.config.pushgatewayUrl) return;
    const { SyncMetrics } = await import('./metrics.js');
    const metrics = new SyncMetrics({ processMetrics: this.options.daemon, trigger: this.options.trigger });
    this.metrics = metrics;
    try {
      const history = await runHistory(this.ctx.pool);
      metrics.seed(history);
      this.latestLoad = history.lastLoad;
      await this.quality(history.latest?.id);
    } catch (error) {
      this.ctx.log.warn({ err: error }, 'cannot read the run history for the metrics; they start from zero');
    }
  }

  /**
   * A run's row was written `running` (runSync's onRunStarted): the one place where whoever
   * watches runs hears that one started, with its id, trigger, attempt and the chain it retries.
   */
  runStarted(run: StartedRun, abandoned: number[] = []): void {
    this.current = run;
    this.metrics?.runStarted();
    this.lineage?.runStarted(run, abandoned);
  }

  /**
   * The last successful load as sync_last_load defines it (dry runs excluded): for the metric and
   * the daemon's health. Undefined when the database cannot answer (the caller keeps what it had).
   */
  async lastLoad(): Promise<LastLoad | null | undefined> {
    try {
      const load = (await lastLoad(this.ctx.pool)) ?? null;
      this.metrics?.setLastSuccess(load ? Date.parse(load.finishedAt) / 1000 : null);
      this.latestLoad = load;
      return load;
    } catch (error) {
      this.ctx.log.warn({ err: error }, 'cannot read the last successful load from sync_last_load');
      return undefined;
    }
  }

  /**
   * The metrics of the run checks: the checks of the last finished run (`runId`), and the totals
   * of the last successful load, read from the rows those runs wrote (sync_run_checks, sync_run_profiles).
   */
  private async quality(runId: number | string | undefined): Promise<void> {
    const metrics = this.metrics;
    if (!metrics) return;
    try {
      const loadId = this.latestLoad?.id;
      const [checks, profile] = await Promise.all([
        runId === undefined ? [] : runChecks(this.ctx.pool, [runId]),
        loadId === undefined ? [] : runProfiles(this.ctx.pool, [loadId]),
      ]);
      metrics.setChecks(checks);
      metrics.setFieldTotals(profile);
    } catch (error) {
      this.ctx.log.warn({ err: error }, 'cannot read the run checks and profile for the metrics');
    }
  }

  /**
   * After runSync: the outcome, or the error it threw (no run row then). `chain`: the daemon's
   * attempt and its retry plan; a failure with a retry planned is told only with SYNC_NOTIFY_ON=retry.
   */
  async finished(result: { outcome: SyncOutcome } | { error: unknown }, chain?: ChainNotice): Promise<void> {
    const run = 'outcome' in result ? result.outcome.run : undefined;
    this.current = undefined;
    if (run) this.lineage?.runFinished(run.id);
    this.metrics?.runFinished(run);
    this.metrics?.setRetry(chain?.retryAt ?? null);
    // Read for the metric and the daemon's health (the daemon always has metrics): without metrics, nobody reads it.
    if (run && this.metrics) {
      await this.lastLoad();
      await this.quality(run.id);
    }
    // A usage mistake (a missing --from-file, a --run that does not exist) recorded no run: nobody is
    // paged for a typo. In the daemon there are no typos: a configuration that fails there (a TLS
    // certificate or a rotated password file gone wrong) stops every scheduled run, and is told.
    if (!run && !this.options.daemon && isUsageMistake((result as { error: unknown }).error)) return;
    const notify = this.ctx.config.notify;
    if (!notify) return;
    try {
      let notice: RunNotice | undefined;
      if (run) {
        // Upstream fields seen for the first time are on the outcome of the run that saw them: sent once.
        const newFields = 'outcome' in result ? result.outcome.newFields : [];
        const checks = 'outcome' in result ? result.outcome.warnedChecks : [];
        const previous = await latestFinishedBefore(this.ctx.pool, run.id);
        const event = notifyEvent(run, previous, notify, newFields, chain, checks);
        if (event) notice = { event, run, where: this.where, newFields, chain, checks };
      } else if (
        !('outcome' in result) &&
        !(result.error instanceof LockHeldError) &&
        (chain?.retryAt == null || notify.retries)
      ) {
        const event = chain?.retryAt == null ? 'failed' : 'retrying';
        notice = {
          event,
          run: undefined,
          error: `the sync could not run: ${describeError(result.error)}`,
          where: this.where,
          chain,
        };
      }
      if (notice === undefined) return;
      const sending = this.track(
        `webhook ${redactedUrl(notify.url)}`,
        'the notification',
        this.notify(notify.url, notice).catch((error: unknown) =>
          this.ctx.log.warn({ err: error }, 'notification skipped'),
        ),
      );
      // The daemon's next step waits for it, as it always has; a batch command's exit waits in flush().
      if (this.options.daemon) await sending;
    } catch (error) {
      this.ctx.log.warn({ err: error }, 'notification skipped');
    }
  }

  /** `work` as in flight until it ends, under the name the exit's log line gives it. */
  private track(destination: string, what: string, work: Promise<void>): Promise<void> {
    const entry = { destination, what, done: work };
    this.inFlight.add(entry);
    return work.finally(() => this.inFlight.delete(entry));
  }

  private async notify(url: string, notice: RunNotice): Promise<void> {
    // The body is scrubbed too: an error text must not carry a password or token to a chat channel.
    const body = this.ctx.secrets.scrub(JSON.stringify(notificationBody(notice)));
    const { agentFor } = await import('../extract/http/http-agents.js');
    const result = await deliver(url, body, {
      agent: agentFor(this.ctx.config.proxy, url),
      signal: this.giveUp.signal,
    });
    // Given up at exit: flush() logs it, with whatever else was not delivered.
    if (result.problem === GIVEN_UP) return;
    const fields = {
      notifyUrl: redactedUrl(url),
      event: notice.event,
      runId: notice.run?.id,
      attempts: result.attempts,
    };
    if (result.delivered) this.ctx.log.info(fields, 'notification sent');
    else this.ctx.log.warn({ ...fields, problem: result.problem }, 'notification could not be delivered');
  }

  /** The lineage events handed over so far delivered or given up on: a command waits for this before it exits. */
  async settled(): Promise<void> {
    await this.lineage?.settled();
  }

  /**
   * A batch command, before it exits: waits for what is still on its way (the webhook, the
   * Pushgateway push, the lineage events), until `timeoutMs` (SYNC_EXIT_FLUSH_TIMEOUT) after
   * `since`, when the run ended. Then it gives them up, so that the process can exit, and logs once
   * what was not delivered and where.
   */
  async flush(timeoutMs: number, since: number): Promise<void> {
    const everything = () => Promise.all([...[...this.inFlight].map((o) => o.done), this.lineage?.settled()]);
    let timer: NodeJS.Timeout | undefined;
    const left = Math.max(0, since + timeoutMs - Date.now());
    const expired = new Promise<'expired'>((resolve) => (timer = setTimeout(() => resolve('expired'), left)));
    const ended = await Promise.race([everything().then(() => 'delivered' as const), expired]);
    clearTimeout(timer);
    if (ended === 'delivered') return;
    const undelivered = [...this.inFlight].map(({ destination, what }) => ({ destination, what }));
    const events = this.lineage?.undelivered ?? 0;
    if (events > 0)
      undelivered.push({
        destination: `OpenLineage ${redactedUrl(this.ctx.config.openLineage!.url)}`,
        what: events === 1 ? '1 event' : `${events} events`,
      });
    this.giveUp.abort();
    // Every request was aborted: they end at once. The bound is kept should one not.
    const settled = new Promise<void>((resolve) => setTimeout(resolve, 1_000).unref());
    await Promise.race([everything(), settled]);
    const list = undelivered.map((u) => `${u.destination} (${u.what})`).join(', ');
    this.ctx.log.warn(
      { undelivered, exitFlushTimeoutMs: timeoutMs },
      `not delivered within SYNC_EXIT_FLUSH_TIMEOUT (${timeoutMs / 1000} s), ` +
        `given up so that the process can exit: ${list}`,
    );
  }

  /** `run`/`replay`: the per-run metrics to the Pushgateway, job wine_recon_sync (PUT: the group is replaced). */
  async push(): Promise<void> {
    const url = this.ctx.config.pushgatewayUrl;
    if (!url || !this.metrics) return;
    await this.track(`Pushgateway ${withoutCredentials(url)}`, 'the metrics', this.pushTo(url));
  }

  private async pushTo(url: string): Promise<void> {
    const shown = withoutCredentials(url);
    try {
      const [{ Pushgateway }, { agentFor }] = await Promise.all([
        import('prom-client'),
        import('../extract/http/http-agents.js'),
      ]);
      const agents = agentFor(this.ctx.config.proxy, url);
      const agent = new URL(url).protocol === 'https:' ? agents?.https : agents?.http;
      const options = { timeout: PUSH_TIMEOUT_MS, signal: this.giveUp.signal, ...(agent ? { agent } : {}) };
      await new Pushgateway(url, options, this.metrics!.registry).push({ jobName: PUSH_JOB });
      this.ctx.log.info({ pushgateway: shown, job: PUSH_JOB }, 'metrics pushed');
    } catch (error) {
      if (this.giveUp.signal.aborted) return; // flush() logs it
      this.ctx.log.warn(
        { pushgateway: shown, err: error },
        'cannot push the metrics to the Pushgateway; the run is unaffected',
      );
    }
  }
}

function withoutCredentials(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  return u.toString();
}

/** host:port/database of DATABASE_URL, never its user or password. */
function databaseName(databaseUrl: string | undefined): string {
  return (databaseUrl && urlWhere(databaseUrl)) || 'the database';
}
