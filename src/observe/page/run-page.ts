/**
 * A run `/runs/:id`, its answer first: status, duration, trigger and counts; then the whole error,
 * its phases, reject reasons and rejects, new fields, archive, BI counts and every column.
 */
import { bytes, count, duration, formatTime } from './format.js';
import { html, query, stackedTable, type Html } from './html.js';
import type { CheckLine, ProfileLine, RejectLine } from './queries.js';
import { checksBadges, checksSection, profileSection } from './run-checks.js';
import { phaseChart } from './svg.js';

export const REJECTS_PER_PAGE = 50;
/** Characters of a reject's raw text shown in the list; the whole text is one link away. */
export const RAW_SHOWN = 400;

export interface RunPageData {
  timezone: string;
  run: Record<string, unknown>;
  payload: { sha256: string; bytes: string; algorithm: string; stored_bytes: string | null } | undefined;
  reasons: Array<{ path: string; message: string; records: string }>;
  rejectsTotal: number;
  rejects: RejectLine[];
  after: string;
  previous: string | undefined;
  newFields: Array<{ name: string; column_name: string | null; bi_kind: string; records: string; note: string | null }>;
  checks: CheckLine[];
  profile: ProfileLine[];
  /** SYNC_BI_SCALE as the BI views were installed with it. */
  biScale: number | undefined;
}

/** Shown in their own sections below the table of columns. */
const OWN_SECTIONS = new Set(['error', 'phases', 'field_counts', 'unknown_fields', 'ms']);

function cell(key: string, value: unknown, timezone: string): Html | string {
  if (value === null || value === undefined) return html`<span class="muted">null</span>`;
  if (value instanceof Date) return `${formatTime(value, timezone)} ${timezone} (${value.toISOString()})`;
  if (key === 'bytes') return `${count(value as string)} (${bytes(value as string)}, decoded)`;
  if (typeof value === 'object') return html`<pre>${JSON.stringify(value)}</pre>`;
  if (typeof value === 'string' && /^\d+$/.test(value) && key !== 'id') return count(value);
  return String(value);
}

/** The counts a run page opens with, in this order: what arrived, what it did to the tables, what it set aside. */
const COUNTS = [
  ['received', 'received'],
  ['inserted', 'inserted'],
  ['updated', 'updated'],
  ['deleted', 'deleted'],
  ['restored', 'restored'],
  ['unchanged', 'unchanged'],
  ['rejected', 'rejected'],
  ['kept_on_reject', 'kept on reject'],
] as const;

const NOT_ARCHIVED_NOTE =
  'Its listing is not archived: only the newest SYNC_ARCHIVE_KEEP successful runs keep theirs, dry runs keep none.';

function archived(payload: NonNullable<RunPageData['payload']>, id: string): Html {
  const stored = bytes(payload.stored_bytes ?? payload.bytes);
  return html`<p id="archive">Its listing is archived: ${[
    html`<span id="archive-decoded">${bytes(payload.bytes)} decoded</span> (the JSON document the run parsed), `,
    html`<span id="archive-stored">kept as ${stored} of ${payload.algorithm}</span>; `,
    html`sha256 <code>${payload.sha256}</code>. Load it again with:</p><pre>wine-recon-sync replay --run ${id}</pre>`,
  ]}`;
}

export function runBody(d: RunPageData): Html {
  const r = d.run;
  const id = String(r.id);
  const phases = (r.phases as Array<{ phase: string; ms: number }> | null) ?? null;
  const unknown = (r.field_counts as { unknown?: Record<string, number> } | null)?.unknown ?? {};
  return html`<h1>Run ${id} <span class="status status-${String(r.status)}">${String(r.status)}</span>${
    r.dry_run === true ? html`<span class="badge">dry run</span>` : null
  }${checksBadges(d.checks)}</h1>
<p id="summary">${String(r.trigger)} run, started ${cell('started_at', r.started_at, d.timezone)}${
    r.ms === null ? ', still running' : html`, took <strong>${duration(Number(r.ms))}</strong>`
  }.</p>
<ul class="counts" id="counts">${COUNTS.map(
    ([key, name]) =>
      html`<li data-count="${key}"><strong>${
        r[key] === null || r[key] === undefined ? '–' : count(r[key] as string)
      }</strong> ${name}</li>`,
  )}</ul>
${r.error === null ? null : html`<h2>Error</h2><pre id="error">${String(r.error)}</pre>`}
${checksSection(d.checks, (r.accepted_checks as string[] | null | undefined) ?? null)}
<h2>Where its time went</h2>
${
  phases !== null && phases.length > 0
    ? phaseChart('phases', phases)
    : html`<p class="muted">${
        r.status === 'running'
          ? 'Its phase times are stored when it ends.'
          : 'No phase times for this run: it ran before they were stored (migration 0011), or stopped before its first phase.'
      }</p>`
}
<h2>Top reject reasons</h2>
${
  d.reasons.length === 0
    ? html`<p class="muted">No record was set aside.</p>`
    : stackedTable(
        'reasons',
        [{ title: 'field' }, { title: 'reason' }, { title: 'records', numeric: true }],
        d.reasons.map((x) => ({ cells: [x.path, x.message, count(x.records)] })),
      )
}
${rejects(d, id)}
<h2>New fields</h2>
${
  Object.keys(unknown).length === 0 && d.newFields.length === 0
    ? html`<p class="muted">The listing carried no field outside the catalogue.</p>`
    : stackedTable(
        'new-fields',
        [{ title: 'field' }, { title: 'records with it', numeric: true }, { title: 'BI column' }, { title: 'note' }],
        Object.entries(unknown).map(([name, n]) => {
          const f = d.newFields.find((x) => x.name === name);
          return {
            cells: [
              html`<span class="field-name">${name}</span>`,
              count(n),
              html`${f?.column_name ?? ''}${
                f ? html` <span class="muted">${f.bi_kind}, first found by this run</span>` : null
              }`,
              f?.note ?? '',
            ],
          };
        }),
      )
}
<h2>Archive</h2>
${d.payload ? archived(d.payload, id) : html`<p id="archive" class="muted">${NOT_ARCHIVED_NOTE}</p>`}
<h2>BI rounding</h2>
${
  r.bi_scale === null
    ? html`<p class="muted">${
        r.status === 'succeeded'
          ? 'Not counted: the run is older than the counts (migration 0006).'
          : 'Not counted: the run did not finish its load.'
      }</p>`
    : html`<p id="bi">With SYNC_BI_SCALE=${String(r.bi_scale)}: ${count(
        r.bi_rounded as string,
      )} live values shown rounded in the BI views, ${count(
        r.bi_overflow as string,
      )} too large for them (NULL there).</p>`
}
${profileSection(d.profile, d.biScale)}
<h2>Every column</h2>
<table class="kv" id="columns"><tbody>${Object.entries(r)
    .filter(([k]) => !OWN_SECTIONS.has(k))
    .map(([k, v]) => html`<tr><th>${k}</th><td>${cell(k, v, d.timezone)}</td></tr>`)}
<tr><th>unknown_fields</th><td>${cell('unknown_fields', r.unknown_fields, d.timezone)}</td></tr>
<tr><th>phases</th><td>${cell('phases', r.phases, d.timezone)}</td></tr>
<tr><th>field_counts</th>
<td>${
    r.field_counts === null
      ? cell('field_counts', null, d.timezone)
      : html`<details><summary>as stored (JSON)</summary>${cell('field_counts', r.field_counts, d.timezone)}</details>
  `
  }</td></tr>
</tbody></table>
<p><a href="/runs/${id}.json">This run as JSON</a></p>`;
}

function rejects(d: RunPageData, id: string): Html {
  if (d.rejectsTotal === 0) return html`<h2 id="rejects">Rejects</h2><p class="muted">None.</p>`;
  const last = d.rejects.at(-1);
  const hasMore = d.rejects.length === REJECTS_PER_PAGE && last !== undefined;
  return html`<h2 id="rejects">Rejects (${count(d.rejectsTotal)})</h2>
${stackedTable(
  'rejects-table',
  [
    { title: 'position', numeric: true },
    { title: 'record id' },
    { title: 'reasons' },
    { title: 'raw text (as received)' },
  ],
  d.rejects.map((x) => ({
    attrs: html`data-position="${x.position}"`,
    cells: [
      x.position,
      x.record_id,
      html`<ul class="reasons">${x.errors.map(
        (e) => html`<li>${e.path ? html`<code>${e.path}</code>: ` : null}${e.message}</li>`,
      )}</ul>`,
      html`<pre class="raw">${x.raw_start}${x.raw_length > RAW_SHOWN ? '…' : ''}</pre>${
        x.raw_length > RAW_SHOWN
          ? html`<a href="/runs/${id}/rejects/${x.position}/raw">whole text (${count(x.raw_length)} characters)</a>`
          : null
      }`,
    ],
  })),
)}
<nav class="pager">${
    d.previous === undefined
      ? null
      : html`<a href="/runs/${id}${query({
          after: d.previous === '-1' ? undefined : d.previous,
        })}#rejects" id="rejects-previous">← previous rejects</a>`
  }${
    hasMore
      ? html`<a href="/runs/${id}${query({ after: last.position })}#rejects" id="rejects-next">next rejects →</a>`
      : null
  }</nav>`;
}
