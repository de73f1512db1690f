/** The overview `/`: freshness first, the run in progress, the plots, then the history. */
import { barChart, CUT_RATIO, type Bar } from './svg.js';
import { bytes, count, duration, formatTime, relative } from './format.js';
import { html, query, type Html } from './html.js';
import type { Freshness } from './freshness.js';
import type { PlotRun, RunFilter, RunLine, RunningRun } from './queries.js';
import { totalsSection, type FieldTotals } from './totals-plot.js';
import { STATUSES, TRIGGERS } from './queries.js';

export const PLOT_CHOICES = [30, 90, 365] as const;
export const RUNS_PER_PAGE = 50;

export interface OverviewData {
  now: number;
  timezone: string;
  freshness: Freshness;
  staleWhy: string;
  lastLoad: { id: string; finished_at: Date } | undefined;
  nextRunAt: string | null | undefined;
  running: RunningRun | undefined;
  progress: { received: number; bytes: number } | undefined;
  runTimeoutMs?: number | undefined;
  /** Attempts a chain may have (1 + SYNC_RUN_RETRY_DELAYS), when the server knows them. */
  attempts?: number | undefined;
  plotRuns: PlotRun[];
  plotN: number;
  /** The numeric fields' totals of the plotted runs, and the scale their labels are rounded to. */
  totals: FieldTotals[];
  biScale: number | undefined;
  runs: RunLine[];
  total: number;
  filter: RunFilter;
  /** Links to the pages after and before this one (undefined: none). */
  older: string | undefined;
  newer: string | undefined;
  runNow: { csrf: string } | undefined;
  notice: string | undefined;
}

const num = (v: string | null | undefined) => (v === null || v === undefined ? 0 : Number(v));

export function overviewBody(d: OverviewData): Html {
  return html`<h1>Status</h1>
${freshnessBox(d)}
${d.notice === undefined ? null : html`<p class="notice" id="notice">${d.notice}</p>`}
${runningBox(d)}
${
  d.runNow === undefined
    ? null
    : html`<form method="post" action="/run-now" class="run-now">${[
        html`<input type="hidden" name="csrf" value="${d.runNow.csrf}">`,
        html`<button type="submit">Run now</button> `,
        html`<span class="muted">starts a sync at once, as the schedule would; refused while one is running</span>`,
      ]}</form>`
}
${plots(d)}
${totalsSection(d.totals, d.biScale)}
${history(d)}`;
}

function freshnessBox(d: OverviewData): Html {
  const { lastLoad, timezone, now } = d;
  return html`<section class="freshness ${d.freshness.state}" id="freshness" data-state="${d.freshness.state}">
<strong>${d.freshness.headline}</strong>
<div>Last successful load: ${
    lastLoad
      ? html`<a href="/runs/${lastLoad.id}">run ${lastLoad.id}</a>, finished ${formatTime(
          lastLoad.finished_at,
          timezone,
        )} ${timezone} (${relative(now - lastLoad.finished_at.getTime())})`
      : 'none yet'
  }.</div>
${
  d.nextRunAt === undefined
    ? null
    : html`<div>Next scheduled run: ${
        d.nextRunAt === null
          ? 'none'
          : html`${formatTime(d.nextRunAt, timezone)} ${timezone} (${relative(now - Date.parse(d.nextRunAt))})`
      }.</div>`
}
<div class="muted">${d.staleWhy}</div>
</section>`;
}

function runningBox(d: OverviewData): Html | null {
  const r = d.running;
  if (r === undefined) return null;
  // The daemon's own run, as it goes; else what the run last wrote to its row.
  const p =
    d.progress ?? (r.received === null ? undefined : { received: Number(r.received), bytes: Number(r.bytes ?? 0) });
  const age = d.now - r.started_at.getTime();
  const stuck = d.runTimeoutMs !== undefined && age > d.runTimeoutMs + 60_000;
  return html`<section class="progress" id="running">
<strong>Run <a href="/runs/${r.id}">${r.id}</a> in progress</strong> (${r.trigger}${
    r.dry_run ? ', dry run' : ''
  }), started ${formatTime(r.started_at, d.timezone)} (${duration(d.now - r.started_at.getTime())} so far).
${
  p
    ? html`${count(p.received)} records parsed, ${bytes(p.bytes)} received so far.`
    : html`<span class="muted">No records parsed yet.</span>`
}
${Number(r.rejects_so_far) > 0 ? html` ${count(r.rejects_so_far)} rejected so far.` : null}
${stuck ? html`<strong id="stuck">${STUCK_NOTE}</strong> ` : null}<span class="muted">${REFRESH_NOTE}</span>
</section>`;
}

const STUCK_NOTE =
  'It has outlived SYNC_RUN_TIMEOUT_MS: the process running it most likely died, and the next run will mark it abandoned.';
const REFRESH_NOTE = 'This page refreshes itself every 5 s while a run is in progress.';

function plots(d: OverviewData): Html {
  const runs = d.plotRuns;
  const warnedBy = (r: PlotRun) =>
    Number(r.checks_warned) > 0
      ? `, warned by ${count(r.checks_warned)} check${r.checks_warned === '1' ? '' : 's'}`
      : '';
  const label = (r: PlotRun, what: string) =>
    `run ${r.id}${r.dry_run ? ' (dry run)' : ''}, ${r.status}${warnedBy(r)}: ${what}`;
  const marks = (r: PlotRun) => [...(r.dry_run ? ['dry'] : []), ...(Number(r.checks_warned) > 0 ? ['warned'] : [])];
  const durationBars: Bar[] = runs.map((r) => ({
    runId: r.id,
    values: [{ series: r.status, value: num(r.ms) }],
    label: label(r, duration(num(r.ms))),
    marks: marks(r),
  }));
  const changedBars: Bar[] = runs.map((r) => ({
    runId: r.id,
    values: (['inserted', 'updated', 'deleted', 'restored'] as const).map((k) => ({ series: k, value: num(r[k]) })),
    label: label(
      r,
      `${count(r.inserted)} inserted, ${count(r.updated)} updated, ` +
        `${count(r.deleted)} deleted, ${count(r.restored)} restored`,
    ),
    marks: marks(r),
  }));
  const receivedBars: Bar[] = runs.map((r) => ({
    runId: r.id,
    values: [{ series: 'received', value: num(r.received) }],
    label: label(r, `${count(r.received)} received`),
    marks: marks(r),
  }));
  const rejectedBars: Bar[] = runs.map((r) => ({
    runId: r.id,
    values: [{ series: 'rejected', value: num(r.rejected) }],
    label: label(r, `${count(r.rejected)} rejected`),
    marks: marks(r),
  }));
  const statusSeries = STATUSES.filter((s) => s !== 'running').map((s) => ({ key: s, name: s }));
  // The heading counts the runs drawn: fewer than asked for while the history is short.
  const heading =
    runs.length === 0 ? 'No finished run yet' : runs.length === 1 ? 'The last run' : `The last ${runs.length} runs`;
  return html`<h2 id="plots">${heading}</h2>
<p class="choice">Show the last ${PLOT_CHOICES.map(
    (n) =>
      html`<a href="/${query({
        plot: n === 30 ? undefined : n,
        status: d.filter.status,
        trigger: d.filter.trigger,
      })}" class="${n === d.plotN ? 'on' : ''}">${n}</a>`,
  )} runs. Each bar links to its run; pale bars are dry runs; a mark above a bar: a check warned on that run.
A bar more than ${CUT_RATIO} times the median run's is cut at the top and marked with its value, so that small
changes stay visible beside a first load.</p>
<div class="charts">
${barChart({
  id: 'plot-duration',
  title: 'Duration per run, by status',
  unit: 'seconds',
  scale: 1000,
  series: [...statusSeries, { key: 'dry', name: 'dry run (pale)' }],
  bars: durationBars,
})}
${barChart({
  id: 'plot-changed',
  title: 'Rows changed per run',
  unit: 'rows',
  series: ['inserted', 'updated', 'deleted', 'restored'].map((k) => ({ key: k, name: k })),
  bars: changedBars,
})}
${barChart({
  id: 'plot-received',
  title: 'Records received per run',
  unit: 'records',
  series: [{ key: 'received', name: 'received' }],
  bars: receivedBars,
})}
${barChart({
  id: 'plot-rejected',
  title: 'Records rejected per run',
  unit: 'records',
  series: [{ key: 'rejected', name: 'rejected' }],
  bars: rejectedBars,
})}
</div>
<details id="plot-data"><summary>The plots' numbers as a table</summary>
<table><thead><tr><th>run</th><th>status</th><th class="n">duration</th><th class="n">inserted</th>
<th class="n">updated</th><th class="n">deleted</th><th class="n">restored</th><th class="n">received</th>
<th class="n">rejected</th></tr></thead>
<tbody>${runs.map(
    (r) => html`<tr><td><a href="/runs/${r.id}">${r.id}</a></td>
<td>${r.status}${r.dry_run ? ' (dry run)' : ''}</td><td class="n">${duration(num(r.ms))}</td>
<td class="n">${count(r.inserted)}</td><td class="n">${count(r.updated)}</td><td class="n">${count(r.deleted)}</td>
<td class="n">${count(r.restored)}</td><td class="n">${count(r.received)}</td><td class="n">${count(r.rejected)}</td>
</tr>`,
  )}</tbody></table>
</details>`;
}

function history(d: OverviewData): Html {
  const option = (value: string, selected: string | undefined) =>
    html`<option value="${value}"${selected === value ? html` selected` : null}>${value}</option>`;
  return html`<h2 id="runs">Runs</h2>
<form method="get" action="/" class="filters">
<label>Status <select name="status"><option value="">any</option>${STATUSES.map((s) =>
    option(s, d.filter.status),
  )}</select></label>
<label>Trigger <select name="trigger"><option value="">any</option>${TRIGGERS.map((t) =>
    option(t, d.filter.trigger),
  )}</select></label>
${d.plotN === 30 ? null : html`<input type="hidden" name="plot" value="${d.plotN}">`}
<button type="submit">Filter</button> <span class="muted">${count(d.total)} runs${
    d.filter.status || d.filter.trigger ? ' match' : ''
  }</span>
</form>
<p class="narrow-only muted">Times in ${d.timezone}. A run's number leads to all its counts.</p>
<table id="runs-table"><thead><tr><th>run</th><th class="wide-only">trigger</th><th>status</th>
<th>started (${d.timezone})</th><th class="n">duration</th>
${WIDE_COUNTS.map((k) => html`<th class="n wide-only">${k.replace('_', ' ')}</th>`)}<th>error</th></tr></thead>
<tbody>${d.runs.map((r) => runRow(r, d))}</tbody></table>
${
  d.runs.length === 0
    ? html`<p class="muted">No run${d.filter.status || d.filter.trigger ? ' matches these filters' : ' yet'}.</p>`
    : null
}
<nav class="pager">${d.newer ? html`<a href="${d.newer}" rel="prev" id="newer">← newer</a>` : null}${
    d.older ? html`<a href="${d.older}" rel="next" id="older">older →</a>` : null
  }</nav>
<p><a href="/index.json">This page as JSON</a> (/index.json)</p>`;
}

/** The runs table's counts on a wide screen; a phone shows the rows changed (their sum) instead. */
const WIDE_COUNTS = [
  'received',
  'inserted',
  'updated',
  'deleted',
  'restored',
  'rejected',
  'skipped_unchanged',
] as const;

function runRow(r: RunLine, d: OverviewData): Html {
  const changed =
    r.ms === null && r.status === 'running'
      ? null
      : num(r.inserted) + num(r.updated) + num(r.deleted) + num(r.restored);
  // A retry counts its attempt as /healthz does and links to its chain's first; a failure to be retried says when.
  const of = d.attempts === undefined ? '' : ` of ${d.attempts}`;
  const chain =
    r.retry_of === null
      ? null
      : html` <span class="muted">attempt ${r.attempt}${of}, retry of ${html`<a href="/runs/${r.retry_of}">${
          r.retry_of
        }</a>`}</span>`;
  const retry =
    r.retry_at === null ? null : html` <span class="muted">retry ${formatTime(r.retry_at, d.timezone)}</span>`;
  return html`<tr data-run="${r.id}"><td><a href="/runs/${r.id}">${r.id}</a></td><td class="wide-only">${r.trigger}</td>
  <td><span class="status status-${r.status}">${r.status}</span>${
    r.dry_run ? html`<span class="badge">dry run</span>` : null
  }${checkBadges(r)}${chain}${retry}</td>
<td>${formatTime(r.started_at, d.timezone)} <span class="muted">${relative(d.now - r.started_at.getTime())}</span></td>
<td class="n">${duration(r.ms === null ? null : Number(r.ms))}</td>
<td class="n changed narrow-only">${count(changed)}</td>
${WIDE_COUNTS.map((k) => html`<td class="n wide-only">${count(r[k])}</td>`)}
<td class="error-start">${r.error_start}</td></tr>`;
}

/** A warned run, a run a check refused: how many checks failed, leading to them on its page. */
function checkBadges(r: RunLine): Html | null {
  const warned = Number(r.checks_warned);
  const refused = Number(r.checks_refused);
  if (warned === 0 && refused === 0) return null;
  const link = (kind: string, n: number) =>
    html`<a class="badge check-${kind}" href="/runs/${r.id}#checks" data-checks="${kind}">${n} ${kind}</a>`;
  return html`${refused > 0 ? link('error', refused) : null}${warned > 0 ? link('warn', warned) : null}`;
}
