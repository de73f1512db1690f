/**
 * Chat notifications (SYNC_NOTIFY_URL): a JSON POST whose `text` Slack, Mattermost and Microsoft
 * Teams incoming webhooks show as is, plus the run's fields for other receivers. Sent on a failed
 * or aborted run, on the first success after one ("recovered", decided from sync_runs so that it
 * survives restarts) and, with SYNC_NOTIFY_ON=all, on every run. Delivery is best effort: three
 * attempts of 10 s at most, then a log line; the run's outcome never depends on it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Agents } from 'got';
import { RECORD_KINDS, type RunRow, type RunStatus } from '../load/audit.js';
import { chatText } from '../text/safe-text.js';
import { listNewFields, type NewField } from '../transform/schema-drift.js';

export type { NewField };

export type NotifyEvent = 'failed' | 'retrying' | 'aborted' | 'recovered' | 'succeeded' | 'new_fields' | 'checks';

/** A check that failed but let the run commit (a warning, or an error accepted with --accept-check). */
export interface WarnedCheck {
  check_name: string;
  severity: 'warn' | 'error';
  observed: string | null;
  expected: string | null;
  message: string;
}

/** The daemon's chain around a run: which attempt it was, and what comes next. */
export interface ChainNotice {
  attempt: number;
  /** Attempts the chain may have (the first and one per SYNC_RUN_RETRY_DELAYS). */
  attempts: number;
  /** When the daemon tries again; null: it does not. */
  retryAt: Date | null;
  /** The chain's first attempt's error, when this is a later attempt. */
  firstError: string | null;
  /** Why no retry follows a failure. */
  ended?: 'needs-a-person' | 'retries-spent' | 'next-slot';
}

const ATTEMPTS = 3;
const TIMEOUT_MS = 10_000;
const RETRY_DELAYS_MS = [1_000, 3_000];
const FAILED: ReadonlySet<RunStatus> = new Set(['failed', 'aborted', 'abandoned']);

/**
 * What to send for `run`, given the run before it; undefined: nothing. Upstream fields seen for the
 * first time are announced once, by the run that first sees them, whatever SYNC_NOTIFY_ON says:
 * they usually mean the upstream changed its shape.
 */
export function notifyEvent(
  run: RunRow,
  previous: RunRow | undefined,
  notify: { on: 'failure' | 'all'; retries: boolean; checks?: boolean },
  newFields: readonly NewField[] = [],
  chain?: ChainNotice,
  warned: readonly WarnedCheck[] = [],
): NotifyEvent | undefined {
  const { on } = notify;
  // A failed attempt that the daemon will try again is told when it gives up, not three times per incident.
  if (run.status === 'failed' && chain?.retryAt != null) return notify.retries ? 'retrying' : undefined;
  if (run.status === 'failed' || run.status === 'aborted') return run.status;
  if (run.status !== 'succeeded') return undefined;
  // Recovered: after a failure that was told (a failed attempt followed by a retry was not, unless
  // SYNC_NOTIFY_ON=retry).
  if (previous !== undefined && FAILED.has(previous.status) && (previous.retry_at === null || notify.retries))
    return 'recovered';
  if (on === 'all') return 'succeeded';
  // One notification per run, naming every check that failed (SYNC_NOTIFY_ON=check, on by default).
  if (notify.checks === true && warned.length > 0) return 'checks';
  return newFields.length > 0 ? 'new_fields' : undefined;
}

/** Where the run happened, without credentials: machine, database (host:port/name) and schema. */
export interface Where {
  host: string;
  database: string;
  schema: string;
}

export interface RunNotice {
  event: NotifyEvent;
  run: RunRow | undefined;
  /** For a run that could not start (no sync_runs row): why. */
  error?: string;
  where: Where;
  /** Upstream fields seen for the first time in this run. */
  newFields?: readonly NewField[];
  /** The daemon's attempt and retry plan around this run. */
  chain?: ChainNotice;
  /** Checks that failed but let the run commit. */
  checks?: readonly WarnedCheck[];
}

export function notificationBody(notice: RunNotice): Record<string, unknown> {
  const { event, run, where } = notice;
  const error = run?.error ?? notice.error ?? null;
  const counts = run ? Object.fromEntries(RECORD_KINDS.map((k) => [k, run[k]])) : null;
  const headline = {
    failed: 'FAILED',
    retrying: 'FAILED, will be retried',
    aborted: 'ABORTED',
    recovered: 'succeeded again (recovered after a failure)',
    succeeded: 'succeeded',
    new_fields: 'succeeded; the upstream listing has new fields',
    checks: 'succeeded with failed checks',
  }[event];
  const lines = [
    `wine-recon-sync${run ? ` run ${run.id}` : ''} ${headline}${run?.dry_run ? ' (dry run)' : ''}` +
      `${run ? ` [${run.trigger}]` : ''} on ${where.database}, schema ${where.schema} (host ${where.host})`,
  ];
  if (counts) lines.push(RECORD_KINDS.map((k) => `${k} ${counts[k] ?? '-'}`).join(', '));
  if (error) lines.push(`error: ${error}`);
  const chain = notice.chain;
  if (chain && (event === 'failed' || event === 'retrying')) {
    lines.push(chainLine(chain));
    if (chain.firstError !== null && chain.firstError !== error)
      lines.push(`first attempt's error: ${chain.firstError}`);
  }
  if (notice.newFields && notice.newFields.length > 0) lines.push(...listNewFields(notice.newFields));
  for (const c of notice.checks ?? [])
    lines.push(
      `check ${c.check_name} (${c.severity}): observed ${c.observed ?? '-'}, ` +
        `expected ${c.expected ?? '-'}: ${c.message}`,
    );
  if (run) lines.push(`started ${run.started_at}, finished ${run.finished_at ?? '-'}`);
  return {
    // Upstream text reaches it (errors, field names): it is shown as text, never as markup.
    text: chatText(lines.join('\n')),
    event,
    run_id: run?.id ?? null,
    status: run?.status ?? 'failed',
    trigger: run?.trigger ?? null,
    dry_run: run?.dry_run ?? false,
    counts,
    error,
    unknown_fields: run?.unknown_fields ?? [],
    new_fields: notice.newFields ?? [],
    checks: notice.checks ?? [],
    started_at: run?.started_at ?? null,
    finished_at: run?.finished_at ?? null,
    attempt: chain?.attempt ?? run?.attempt ?? 1,
    attempts: chain?.attempts ?? null,
    retry_of: run?.retry_of ?? null,
    retry_at: chain?.retryAt?.toISOString() ?? null,
    first_error: chain?.firstError ?? null,
    ...where,
  };
}

/** Why a failure is not retried, in words (notifications, health). */
export const NOT_RETRIED = {
  'needs-a-person': 'not retried: this failure needs a person',
  'retries-spent': 'every retry spent',
  'next-slot': 'not retried: the next scheduled run comes first',
} as const;

/** `attempt 2 of 4; retrying at …` or `attempt 4 of 4, every retry spent`. */
export function chainLine(chain: ChainNotice): string {
  const which = `attempt ${chain.attempt} of ${chain.attempts}`;
  if (chain.retryAt !== null) return `${which}; retrying at ${chain.retryAt.toISOString()}`;
  return chain.ended ? `${which}, ${NOT_RETRIED[chain.ended]}` : which;
}

export interface Delivery {
  delivered: boolean;
  attempts: number;
  /** The last failure (status or transport error code), for the log. */
  problem?: string;
}

/** The problem of a delivery that `signal` ended: the command stopped waiting for it (SYNC_EXIT_FLUSH_TIMEOUT). */
export const GIVEN_UP = 'given up at exit';

/**
 * POSTs `body` (already serialized) with up to three attempts; never throws. The one outbound
 * transport for reports (webhooks, OpenLineage events): proxy agent, retries and time bound alike.
 * `signal` ends it at once, the request in flight and the wait between attempts alike.
 */
export async function deliver(
  url: string,
  body: string,
  options: { retryDelaysMs?: number[]; agent?: Agents; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Delivery> {
  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS;
  const { signal } = options;
  let problem = '';
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    if (signal?.aborted) return { delivered: false, attempts: attempt - 1, problem: GIVEN_UP };
    try {
      const status = await postJson(url, body, options.agent, options.headers, signal);
      if (status >= 200 && status < 300) return { delivered: true, attempts: attempt };
      problem = `HTTP ${status}`;
      // A 4xx other than 408/429 is the receiver refusing this message: the same POST would be refused again.
      if (status >= 400 && status < 500 && status !== 408 && status !== 429)
        return { delivered: false, attempts: attempt, problem };
    } catch (error) {
      if (signal?.aborted) return { delivered: false, attempts: attempt, problem: GIVEN_UP };
      problem = (error as { code?: string }).code ?? 'request failed';
    }
    if (attempt < ATTEMPTS)
      await sleep(delays[attempt - 1] ?? 1000, undefined, signal ? { signal } : {}).catch(() => undefined);
  }
  return { delivered: false, attempts: ATTEMPTS, problem };
}

/** The one HTTP call (so that an outbound proxy agent can be handed in here). Errors carry a code, never the URL. */
async function postJson(
  url: string,
  body: string,
  agent: Agents | undefined,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<number> {
  // got is loaded when a notification is sent, not at start-up: a `run --from-file` or a replay
  // without SYNC_NOTIFY_URL needs no HTTP client at all.
  const { default: got } = await import('got');
  const response = await got.post(url, {
    body,
    agent,
    headers: { ...headers, 'content-type': 'application/json' },
    throwHttpErrors: false,
    retry: { limit: 0 },
    timeout: { request: TIMEOUT_MS },
    followRedirect: false,
    ...(signal ? { signal } : {}),
  });
  return response.statusCode;
}

/** The URL as it may be logged: scheme and host only (a webhook's path and query are its secret). */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/…`;
  } catch {
    return '(invalid URL)';
  }
}
