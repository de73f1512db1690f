/**
 * The status page's HTTP side: which path answers what, behind the token when one is set.
 * Read-only but for POST /run-now (the daemon's, with SYNC_UI_TOKEN only). Serves the daemon
 * (beside /metrics and /healthz) and `serve` alike.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fieldsBody } from './fields-page.js';
import { judgeFreshness } from './freshness.js';
import { query } from './html.js';
import { FAVICON, STYLESHEET } from './layout.js';
import { overviewBody, PLOT_CHOICES, RUNS_PER_PAGE } from './overview.js';
import { PageQueries, STATUSES, TRIGGERS, type RunFilter } from './queries.js';
import { RAW_SHOWN, REJECTS_PER_PAGE, runBody } from './run-page.js';
import { fieldTotals } from './totals-plot.js';
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
import {
  notFound,
  send,
  sendJson,
  sendPage,
  type Exchange,
  type PageHandler,
  type PageOptions,
  type Site,
} from './site.js';

export type { DaemonView, PageHandler, PageOptions } from './site.js';

const ID = /^\d{1,18}$/;
const NOTICES: Record<string, string> = {
  started: 'A run was started. It shows below as in progress.',
  busy: 'A run is already going: no other was started.',
};

/** A path the page answers, the method it answers, and how. */
interface Route {
  path: RegExp;
  /** GET routes answer HEAD too. */
  method: 'GET' | 'POST';
  handle: (x: Exchange) => Promise<void> | void;
}

/** Every path the page answers, in the order they are tried. */
const ROUTES: readonly Route[] = [
  { path: /^\/run-now$/, method: 'POST', handle: runNowRoute },
  { path: /^\/(index\.json)?$/, method: 'GET', handle: overviewRoute },
  { path: /^\/page\.css$/, method: 'GET', handle: (x) => send(x, 200, 'text/css; charset=utf-8', STYLESHEET) },
  { path: /^\/favicon\.(svg|ico)$/, method: 'GET', handle: (x) => send(x, 200, 'image/svg+xml', FAVICON) },
  { path: /^\/fields(\.json)?$/, method: 'GET', handle: fieldsRoute },
  { path: /^\/runs\/(\d{1,18})(\.json)?$/, method: 'GET', handle: runRoute },
  { path: /^\/runs\/(\d{1,18})\/rejects$/, method: 'GET', handle: rejectsRoute },
  { path: /^\/runs\/(\d{1,18})\/rejects\/(\d{1,18})\/raw$/, method: 'GET', handle: rejectRawRoute },
];

export function pageHandler(options: PageOptions): PageHandler {
  const site: Site = {
    options,
    queries: new PageQueries(options.pool, options.schema),
    csrf: options.daemon && options.token !== undefined ? new CsrfTokens(options.token) : undefined,
    attempts: new TokenAttempts(),
  };
  return (req, res) => {
    if (!admitted(site, req, res)) return;
    const url = new URL(req.url ?? '/', 'http://page.invalid');
    const path = url.pathname;
    dispatch(site, req, res, url).catch((error: unknown) => {
      options.log.warn({ err: error, path }, 'status page failed');
      if (!res.headersSent)
        send(
          { site, res },
          500,
          'text/plain; charset=utf-8',
          'the status page could not read the database; see the log\n',
        );
      else res.end();
    });
  };
}

/** The route for the path, when the method suits it; a method other than GET or HEAD elsewhere is refused first. */
async function dispatch(site: Site, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const path = url.pathname;
  const method = req.method ?? 'GET';
  let found: { route: Route; match: RegExpExecArray } | undefined;
  for (const route of ROUTES) {
    const match = route.path.exec(path);
    if (match) {
      found = { route, match };
      break;
    }
  }
  if (found?.route.method === 'POST') {
    if (method !== 'POST')
      return send({ site, res }, 405, 'text/plain; charset=utf-8', 'POST only\n', { allow: 'POST' });
  } else if (method !== 'GET' && method !== 'HEAD') {
    return send({ site, res }, 405, 'text/plain; charset=utf-8', 'GET only\n', { allow: 'GET, HEAD' });
  }
  if (found === undefined) return notFound({ site, res }, path);
  return found.route.handle({ site, req, res, url, match: found.match });
}

/**
 * The request gate, before any path is looked at. Without a token the page answers only to its
 * own names (DNS rebinding, see hostAllowed); with SYNC_UI_ALLOWED_HOSTS set, with a token too.
 * A request that changes something must come from a page of this server (Origin). Wrong tokens
 * are limited per address.
 */
function admitted(site: Site, req: IncomingMessage, res: ServerResponse): boolean {
  const { options, attempts } = site;
  const checkHost = options.token === undefined || options.allowedHosts.length > 0;
  if (checkHost && !hostAllowed(req, options.boundHost, options.allowedHosts)) {
    refuseHost(res);
    return false;
  }
  const method = req.method ?? 'GET';
  if (method !== 'GET' && method !== 'HEAD' && !sameOrigin(req)) {
    send(
      { site, res },
      403,
      'text/plain; charset=utf-8',
      'refused: this request does not come from this page (Origin)\n',
    );
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
}

/** `/` and `/index.json`: the overview, its runs filtered and paged as the query string asks. */
async function overviewRoute(x: Exchange): Promise<void> {
  const { options, queries, csrf } = x.site;
  const p = x.url.searchParams;
  const filter: RunFilter = {
    status: (STATUSES as readonly string[]).includes(p.get('status') ?? '') ? p.get('status')! : undefined,
    trigger: (TRIGGERS as readonly string[]).includes(p.get('trigger') ?? '') ? p.get('trigger')! : undefined,
  };
  const plotN = (PLOT_CHOICES as readonly number[]).includes(Number(p.get('plot'))) ? Number(p.get('plot')) : 30;
  const before = ID.test(p.get('before') ?? '') ? p.get('before')! : undefined;
  const after = before === undefined && ID.test(p.get('after') ?? '') ? p.get('after')! : undefined;
  const [running, lastLoad, latest, runs, total, plotRuns, biScale] = await Promise.all([
    queries.running(),
    queries.lastLoad(),
    queries.latestFinished(),
    queries.runs(filter, { before, after }, RUNS_PER_PAGE + 1),
    queries.runsCount(filter),
    queries.plotRuns(plotN),
    queries.biScale(),
  ]);
  const totals = fieldTotals(await queries.plotTotals(plotRuns.map((r) => r.id)), plotRuns);
  const { shown, hasOlder, hasNewer } = runsPage(runs, before, after);
  const now = Date.now();
  const rule = options.staleRule();
  const freshness = judgeFreshness({
    now,
    lastLoadAt: lastLoad?.finished_at,
    latest,
    rule,
    attempts: options.attempts,
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
    attempts: options.attempts,
    plotRuns,
    plotN,
    totals,
    biScale,
    runs: shown,
    total,
    filter,
    older: hasOlder && shown.length > 0 ? `/${query({ ...keep, before: shown.at(-1)!.id })}#runs` : undefined,
    newer: hasNewer && shown.length > 0 ? `/${query({ ...keep, after: shown[0]!.id })}#runs` : undefined,
    runNow: csrf ? { csrf: csrf.token() } : undefined,
    notice: noticeOf(p.get('run-now')),
  };
  if (x.match[1] !== undefined) {
    return sendJson(x, {
      freshness,
      lastLoad,
      nextRunAt: data.nextRunAt ?? null,
      running: running ?? null,
      progress: data.progress ?? null,
      runs: shown,
      total,
      plotRuns,
      // Exact text (`total`) and as the BI views round it (`bi_total`, at SYNC_BI_SCALE = biScale).
      totals: {
        biScale: biScale ?? null,
        fields: totals.map((t) => ({
          field: t.field,
          runs: t.points.map((p) => ({ id: p.run_id, total: p.total, bi_total: p.bi_total, failed: p.failed })),
        })),
      },
    });
  }
  sendPage(x, 'Status', overviewBody(data), running ? 5 : undefined);
}

/** One more than a page was asked for: whether there is a page beyond, without counting. */
function runsPage<T>(
  runs: T[],
  before: string | undefined,
  after: string | undefined,
): { shown: T[]; hasOlder: boolean; hasNewer: boolean } {
  if (after !== undefined) {
    const hasNewer = runs.length > RUNS_PER_PAGE;
    return { shown: hasNewer ? runs.slice(1) : runs, hasOlder: true, hasNewer };
  }
  return { shown: runs.slice(0, RUNS_PER_PAGE), hasOlder: runs.length > RUNS_PER_PAGE, hasNewer: before !== undefined };
}

/** `/runs/N` and `/runs/N.json`: one run, its rejects paged after the `after` cursor. */
async function runRoute(x: Exchange): Promise<void> {
  const { options, queries } = x.site;
  const id = x.match[1]!;
  const row = await queries.run(id);
  if (row === undefined) return notFound(x, `there is no run ${id}`);
  const afterParam = x.url.searchParams.get('after') ?? '';
  const after = /^\d{1,18}$/.test(afterParam) ? afterParam : '-1';
  const [payload, reasons, rejectsTotal, rejects, previous, newFields, checks, profile, biScale] = await Promise.all([
    queries.payload(id),
    queries.rejectReasons(id, 10),
    queries.rejectsCount(id),
    queries.rejects(id, after, REJECTS_PER_PAGE, RAW_SHOWN),
    after === '-1'
      ? Promise.resolve(undefined)
      : queries.rejectsPageBefore(id, String(Number(after) + 1), REJECTS_PER_PAGE),
    queries.runExtraFields(id),
    queries.runChecks(id),
    queries.runProfile(id),
    queries.biScale(),
  ]);
  if (x.match[2] !== undefined) {
    return sendJson(x, {
      run: row,
      payload: payload ?? null,
      rejectReasons: reasons,
      rejects: rejectsTotal,
      newFields,
      checks,
      profile,
      biScale: biScale ?? null,
    });
  }
  // The previous page starts at `previous`: its cursor is the position before it (-1 for the first page).
  const prev = previous === undefined ? (after === '-1' ? undefined : '-1') : String(Number(previous) - 1);
  sendPage(
    x,
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
      checks,
      profile,
      biScale,
    }),
    row.status === 'running' ? 5 : undefined,
  );
}

/** `/runs/N/rejects`: a run's rejects are paged on its page; this address leads there, its paging kept. */
function rejectsRoute(x: Exchange): void {
  send(x, 303, 'text/plain; charset=utf-8', '', { location: `/runs/${x.match[1]!}${x.url.search}#rejects` });
}

/** `/runs/N/rejects/P/raw`: a reject's raw text. */
async function rejectRawRoute(x: Exchange): Promise<void> {
  const raw = await x.site.queries.rejectRaw(x.match[1]!, x.match[2]!);
  // Plain text with nosniff: whatever the record holds, a browser shows it as text.
  if (raw === undefined) return notFound(x, 'no such reject');
  send(x, 200, 'text/plain; charset=utf-8', raw);
}

/** `/fields` and `/fields.json`: the fields found outside the catalogue, and the last load's counts. */
async function fieldsRoute(x: Exchange): Promise<void> {
  const { options, queries } = x.site;
  const [discovered, lastLoad] = await Promise.all([queries.fields(), queries.catalogueCounts()]);
  if (x.match[1] !== undefined) return sendJson(x, { discovered, lastLoadFieldCounts: lastLoad ?? null });
  sendPage(x, 'Fields', fieldsBody({ timezone: options.timezone, discovered, lastLoad }));
}

/** POST `/run-now`: the daemon's button, behind the token and a CSRF token of this page. */
async function runNowRoute(x: Exchange): Promise<void> {
  const { options, queries, csrf } = x.site;
  if (!csrf || !options.daemon) return notFound(x, 'run-now is only in the daemon, with SYNC_UI_TOKEN set');
  const body = await readForm(x.req);
  if (!csrf.valid(body.get('csrf') ?? undefined))
    return send(
      x,
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
  x.res.writeHead(303, { ...securityHeaders(), location: `/?run-now=${started ? 'started' : 'busy'}` }).end();
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
