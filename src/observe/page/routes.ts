/**
 * The status page's HTTP side: which path answers what, behind the token when one is set.
 * Read-only but for POST /run-now (the daemon's, with SYNC_UI_TOKEN only). Serves the daemon
 * (beside /metrics and /healthz) and `serve` alike.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Pool } from '../../db/pool.js';
import type { Logger, SecretRegistry } from '../../log.js';
import { fieldsBody } from './fields-page.js';
import { judgeFreshness, type StaleRule } from './freshness.js';
import { query } from './html.js';
import { FAVICON, layout, STYLESHEET } from './layout.js';
import { overviewBody, PLOT_CHOICES, RUNS_PER_PAGE } from './overview.js';
import { PageQueries, STATUSES, TRIGGERS, type RunFilter } from './queries.js';
import { RAW_SHOWN, REJECTS_PER_PAGE, runBody } from './run-page.js';
import {
  CsrfTokens,
  hostAllowed,
  presentedToken,
  refuseHost,
  refuseTooMany,
  refuseUnauthorized,
  sameOrigin,
  sameSecret,
  securityHeaders,
  TokenAttempts,
} from './security.js';

/** What only the daemon knows: its schedule, the progress of its run, and how to start one. */
export interface DaemonView {
  nextRunAt(): string | null;
  progress(): { received: number; bytes: number } | undefined;
  /** Starts a run as the schedule would: false when one is going (or the daemon is stopping). */
  runNow(): boolean;
  /** Attempts a chain may have (SYNC_RUN_RETRY_DELAYS), for "attempt 1 of 4". */
  attempts: number;
}

export interface PageOptions {
  pool: Pool;
  schema: string;
  timezone: string;
  token: string | undefined;
  /** The address the server listens on (`serve --host`, SYNC_METRICS_HOST): a name the page answers to. */
  boundHost: string;
  /** SYNC_UI_ALLOWED_HOSTS: more names (`name` or `name:port`) the page answers to, behind a reverse proxy. */
  allowedHosts: readonly string[];
  staleRule: () => StaleRule;
  /**
   * SYNC_RUN_TIMEOUT_MS: a `running` row older than this (and a minute) was most likely left by a process that died.
   */
  runTimeoutMs?: number | undefined;
  daemon?: DaemonView | undefined;
  log: Logger;
  /** The process's secrets (passwords, tokens): removed from every page should one ever reach the database's text. */
  secrets?: SecretRegistry | undefined;
}

export type PageHandler = (req: IncomingMessage, res: ServerResponse) => void;

const ID = /^\d{1,18}$/;
const NOTICES: Record<string, string> = {
  started: 'A run was started. It shows below as in progress.',
  busy: 'A run is already going: no other was started.',
};

export function pageHandler(options: PageOptions): PageHandler {
  const queries = new PageQueries(options.pool, options.schema);
  // Run-now exists only in the daemon, and only behind a token: without one, anyone reaching the port could start runs.
  const csrf = options.daemon && options.token !== undefined ? new CsrfTokens(options.token) : undefined;

  const send = (
    res: ServerResponse,
    status: number,
    type: string,
    body: string,
    extra: Record<string, string> = {},
  ) => {
    res
      .writeHead(status, { ...securityHeaders(), 'content-type': type, ...extra })
      .end(options.secrets ? options.secrets.scrub(body) : body);
  };
  const page = (
    res: ServerResponse,
    title: string,
    body: Parameters<typeof layout>[0]['body'],
    refreshSeconds?: number,
  ) => send(res, 200, 'text/html; charset=utf-8', layout({ title, body, refreshSeconds }));
  const json = (res: ServerResponse, value: unknown) =>
    send(res, 200, 'application/json; charset=utf-8', JSON.stringify(value));
  const notFound = (res: ServerResponse, what: string) =>
    send(res, 404, 'text/plain; charset=utf-8', `not found: ${what}\n`);

  const overview = async (url: URL, res: ServerResponse, asJson: boolean) => {
    const p = url.searchParams;
    const filter: RunFilter = {
      status: (STATUSES as readonly string[]).includes(p.get('status') ?? '') ? p.get('status')! : undefined,
      trigger: (TRIGGERS as readonly string[]).includes(p.get('trigger') ?? '') ? p.get('trigger')! : undefined,
    };
    const plotN = (PLOT_CHOICES as readonly number[]).includes(Number(p.get('plot'))) ? Number(p.get('plot')) : 30;
    const before = ID.test(p.get('before') ?? '') ? p.get('before')! : undefined;
    const after = before === undefined && ID.test(p.get('after') ?? '') ? p.get('after')! : undefined;
    const [running, lastLoad, latest, runs, total, plotRuns] = await Promise.all([
      queries.running(),
      queries.lastLoad(),
      queries.latestFinished(),
      queries.runs(filter, { before, after }, RUNS_PER_PAGE + 1),
      queries.runsCount(filter),
      queries.plotRuns(plotN),
    ]);
    // One more than a page was asked for: whether there is a page beyond, without counting.
    let shown = runs;
    let hasOlder: boolean;
    let hasNewer: boolean;
    if (after !== undefined) {
      hasNewer = runs.length > RUNS_PER_PAGE;
      shown = hasNewer ? runs.slice(1) : runs;
      hasOlder = true;
    } else {
      hasOlder = runs.length > RUNS_PER_PAGE;
      shown = runs.slice(0, RUNS_PER_PAGE);
      hasNewer = before !== undefined;
    }
    const now = Date.now();
    const rule = options.staleRule();
    const freshness = judgeFreshness({
      now,
      lastLoadAt: lastLoad?.finished_at,
      latest,
      rule,
      attempts: options.daemon?.attempts,
    });
    const keep = { status: filter.status, trigger: filter.trigger, plot: plotN === 30 ? undefined : plotN };
    const data = {
      now,
      timezone: options.timezone,
      freshness,
      staleWhy: rule.why,
      lastLoad,
      nextRunAt: options.daemon?.nextRunAt(),
      running,
      progress: running ? options.daemon?.progress() : undefined,
      runTimeoutMs: options.runTimeoutMs,
      plotRuns,
      plotN,
      runs: shown,
      total,
      filter,
      older: hasOlder && shown.length > 0 ? `/${query({ ...keep, before: shown.at(-1)!.id })}#runs` : undefined,
      newer: hasNewer && shown.length > 0 ? `/${query({ ...keep, after: shown[0]!.id })}#runs` : undefined,
      runNow: csrf ? { csrf: csrf.token() } : undefined,
      notice: noticeOf(p.get('run-now')),
    };
    if (asJson) {
      json(res, {
        freshness,
        lastLoad,
        nextRunAt: data.nextRunAt ?? null,
        running: running ?? null,
        progress: data.progress ?? null,
        runs: shown,
        total,
        plotRuns,
      });
      return;
    }
    page(res, 'Status', overviewBody(data), running ? 5 : undefined);
  };

  const run = async (id: string, url: URL, res: ServerResponse, asJson: boolean) => {
    const row = await queries.run(id);
    if (row === undefined) return notFound(res, `there is no run ${id}`);
    const afterParam = url.searchParams.get('after') ?? '';
    const after = /^\d{1,18}$/.test(afterParam) ? afterParam : '-1';
    const [payload, reasons, rejectsTotal, rejects, previous, newFields] = await Promise.all([
      queries.payload(id),
      queries.rejectReasons(id, 10),
      queries.rejectsCount(id),
      queries.rejects(id, after, REJECTS_PER_PAGE, RAW_SHOWN),
      after === '-1'
        ? Promise.resolve(undefined)
        : queries.rejectsPageBefore(id, String(Number(after) + 1), REJECTS_PER_PAGE),
      queries.runNewFields(id),
    ]);
    if (asJson) {
      json(res, { run: row, payload: payload ?? null, rejectReasons: reasons, rejects: rejectsTotal, newFields });
      return;
    }
    // The previous page starts at `previous`: its cursor is the position before it (-1 for the first page).
    const prev = previous === undefined ? (after === '-1' ? undefined : '-1') : String(Number(previous) - 1);
    page(
      res,
      `Run ${id}`,
      runBody({
        timezone: options.timezone,
        run: row,
        payload,
        reasons,
        rejectsTotal,
        rejects,
        after,
        previous: prev,
        newFields,
      }),
      row.status === 'running' ? 5 : undefined,
    );
  };

  const runNow = async (req: IncomingMessage, res: ServerResponse) => {
    if (!csrf || !options.daemon) return notFound(res, 'run-now is only in the daemon, with SYNC_UI_TOKEN set');
    const body = await readForm(req);
    if (!csrf.valid(body.get('csrf') ?? undefined))
      return send(
        res,
        403,
        'text/plain; charset=utf-8',
        'refused: missing or wrong CSRF token; reload the page and press the button again\n',
      );
    const going = await queries.running();
    const started = going === undefined && options.daemon.runNow();
    options.log.info(
      { started },
      started ? 'run started from the status page' : 'run-now from the status page refused: a run is going',
    );
    res.writeHead(303, { ...securityHeaders(), location: `/?run-now=${started ? 'started' : 'busy'}` }).end();
  };

  const attempts = new TokenAttempts();
  /**
   * The request gate, before any path is looked at. Without a token the page answers only to its
   * own names (DNS rebinding, see hostAllowed); with SYNC_UI_ALLOWED_HOSTS set, with a token too.
   * A request that changes something must come from a page of this server (Origin). Wrong tokens
   * are limited per address.
   */
  const admitted = (req: IncomingMessage, res: ServerResponse): boolean => {
    const checkHost = options.token === undefined || options.allowedHosts.length > 0;
    if (checkHost && !hostAllowed(req, options.boundHost, options.allowedHosts)) {
      refuseHost(res);
      return false;
    }
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD' && !sameOrigin(req)) {
      send(res, 403, 'text/plain; charset=utf-8', 'refused: this request does not come from this page (Origin)\n');
      return false;
    }
    if (options.token === undefined) return true;
    const address = req.socket.remoteAddress ?? '';
    const now = Date.now();
    const wait = attempts.retryAfter(address, now);
    if (wait !== undefined) {
      refuseTooMany(res, wait);
      return false;
    }
    const given = presentedToken(req);
    if (given !== undefined && sameSecret(given, options.token)) return true;
    if (given !== undefined || req.headers.authorization !== undefined) attempts.failed(address, now);
    refuseUnauthorized(res);
    return false;
  };

  return (req, res) => {
    if (!admitted(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://page.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const work = async () => {
      if (path === '/run-now') {
        if (method !== 'POST') return send(res, 405, 'text/plain; charset=utf-8', 'POST only\n', { allow: 'POST' });
        return runNow(req, res);
      }
      if (method !== 'GET' && method !== 'HEAD')
        return send(res, 405, 'text/plain; charset=utf-8', 'GET only\n', { allow: 'GET, HEAD' });
      if (path === '/' || path === '/index.json') return overview(url, res, path.endsWith('.json'));
      if (path === '/page.css') return send(res, 200, 'text/css; charset=utf-8', STYLESHEET);
      if (path === '/favicon.svg' || path === '/favicon.ico') return send(res, 200, 'image/svg+xml', FAVICON);
      if (path === '/fields' || path === '/fields.json') {
        const [discovered, lastLoad] = await Promise.all([queries.fields(), queries.catalogueCounts()]);
        if (path.endsWith('.json')) return json(res, { discovered, lastLoadFieldCounts: lastLoad ?? null });
        return page(res, 'Fields', fieldsBody({ timezone: options.timezone, discovered, lastLoad }));
      }
      const runPath = /^\/runs\/(\d{1,18})(\.json)?$/.exec(path);
      if (runPath) return run(runPath[1]!, url, res, runPath[2] !== undefined);
      // A run's rejects are paged on its page; this address leads there, its paging kept.
      const rejectsPath = /^\/runs\/(\d{1,18})\/rejects$/.exec(path);
      if (rejectsPath)
        return send(res, 303, 'text/plain; charset=utf-8', '', {
          location: `/runs/${rejectsPath[1]!}${url.search}#rejects`,
        });
      const rawPath = /^\/runs\/(\d{1,18})\/rejects\/(\d{1,18})\/raw$/.exec(path);
      if (rawPath) {
        const raw = await queries.rejectRaw(rawPath[1]!, rawPath[2]!);
        // Plain text with nosniff: whatever the record holds, a browser shows it as text.
        return raw === undefined ? notFound(res, 'no such reject') : send(res, 200, 'text/plain; charset=utf-8', raw);
      }
      return notFound(res, path);
    };
    work().catch((error: unknown) => {
      options.log.warn({ err: error, path }, 'status page failed');
      if (!res.headersSent)
        send(res, 500, 'text/plain; charset=utf-8', 'the status page could not read the database; see the log\n');
      else res.end();
    });
  };
}

/** The notice a run-now redirect asks for; only the known ones (the query string is the visitor's). */
function noticeOf(key: string | null): string | undefined {
  return key !== null && Object.hasOwn(NOTICES, key) ? NOTICES[key] : undefined;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 4096) break;
  }
  return new URLSearchParams(text);
}
