/**
 * Everything around a run for those who watch it: the metrics, the chat notification and, for the
 * batch commands, the Pushgateway push. None of it changes a run's outcome or exit code: each
 * failure here is logged and dropped.
 */
import { hostname } from 'node:os';
import { Pushgateway } from 'prom-client';
import type { Context } from './context.js';
import { LockHeldError, describeError } from './errors.js';
import { agentFor } from './extract/http/http-agents.js';
import { latestFinishedBefore, runHistory, type Trigger } from './load/audit.js';
import { SyncMetrics } from './metrics.js';
import { deliver, notificationBody, notifyEvent, redactedUrl, type RunNotice, type Where } from './notify.js';
import type { SyncOutcome } from './sync.js';

export const PUSH_JOB = 'wine_recon_sync';
const PUSH_TIMEOUT_MS = 10_000;

export class RunReporter {
  readonly metrics: SyncMetrics;
  private readonly where: Where;

  constructor(
    private readonly ctx: Context,
    options: { processMetrics: boolean; trigger: Trigger },
  ) {
    this.metrics = new SyncMetrics(options);
    const { config, secrets } = ctx;
    if (config.notify) {
      // A webhook URL is a credential: its path and query are what authorizes the POST.
      const url = new URL(config.notify.url);
      secrets.add(config.notify.url);
      secrets.add(url.pathname + url.search);
      secrets.add(decodeURIComponent(url.password));
    }
    if (config.pushgatewayUrl) secrets.add(decodeURIComponent(new URL(config.pushgatewayUrl).password));
    this.where = { host: hostname(), database: databaseName(config.databaseUrl), schema: config.schema };
  }

  /** Seeds the metrics from sync_runs (last success, totals, last counts). */
  async start(): Promise<void> {
    try {
      this.metrics.seed(await runHistory(this.ctx.pool));
    } catch (error) {
      this.ctx.log.warn({ err: error }, 'cannot read the run history for the metrics; they start from zero');
    }
  }

  runStarted(): void {
    this.metrics.runStarted();
  }

  /** After runSync: the outcome, or the error it threw (no run row then). */
  async finished(result: { outcome: SyncOutcome } | { error: unknown }): Promise<void> {
    const run = 'outcome' in result ? result.outcome.run : undefined;
    this.metrics.runFinished(run);
    const notify = this.ctx.config.notify;
    if (!notify) return;
    try {
      let notice: RunNotice | undefined;
      if (run) {
        // Upstream fields seen for the first time are on the outcome of the run that saw them: sent once.
        const newFields = 'outcome' in result ? result.outcome.newFields : [];
        const event = notifyEvent(run, await latestFinishedBefore(this.ctx.pool, run.id), notify.on, newFields);
        if (event) notice = { event, run, where: this.where, newFields };
      } else if (!('outcome' in result) && !(result.error instanceof LockHeldError)) {
        notice = { event: 'failed', run: undefined, error: `the sync could not run: ${describeError(result.error)}`, where: this.where };
      }
      if (notice) await this.notify(notify.url, notice);
    } catch (error) {
      this.ctx.log.warn({ err: error }, 'notification skipped');
    }
  }

  private async notify(url: string, notice: RunNotice): Promise<void> {
    // The body is scrubbed too: an error text must not carry a password or token to a chat channel.
    const body = this.ctx.secrets.scrub(JSON.stringify(notificationBody(notice)));
    const result = await deliver(url, body, { agent: agentFor(this.ctx.config.proxy, url) });
    const fields = { notifyUrl: redactedUrl(url), event: notice.event, runId: notice.run?.id, attempts: result.attempts };
    if (result.delivered) this.ctx.log.info(fields, 'notification sent');
    else this.ctx.log.warn({ ...fields, problem: result.problem }, 'notification could not be delivered');
  }

  /** `run`/`replay`: the per-run metrics to the Pushgateway, job wine_recon_sync (PUT: the group is replaced). */
  async push(): Promise<void> {
    const url = this.ctx.config.pushgatewayUrl;
    if (!url) return;
    const shown = withoutCredentials(url);
    try {
      const agents = agentFor(this.ctx.config.proxy, url);
      const agent = new URL(url).protocol === 'https:' ? agents?.https : agents?.http;
      await new Pushgateway(url, { timeout: PUSH_TIMEOUT_MS, ...(agent ? { agent } : {}) }, this.metrics.registry).push({ jobName: PUSH_JOB });
      this.ctx.log.info({ pushgateway: shown, job: PUSH_JOB }, 'metrics pushed');
    } catch (error) {
      this.ctx.log.warn({ pushgateway: shown, err: error }, 'cannot push the metrics to the Pushgateway; the run is unaffected');
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
  if (!databaseUrl) return 'the database';
  try {
    const u = new URL(databaseUrl);
    return `${u.host || 'localhost'}${u.pathname}`;
  } catch {
    return 'the database';
  }
}

