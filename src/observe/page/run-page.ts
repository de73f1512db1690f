/** A run `/runs/:id`: every column, the whole error, its phases, archive, new fields, BI counts, reasons and rejects. */
import { bytes, count, duration, formatTime } from './format.js';
import { html, query, type Html } from './html.js';
import type { RejectLine } from './queries.js';
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
}

/** Shown in their own sections below the table of columns. */
const OWN_SECTIONS = new Set(['error', 'phases', 'field_counts', 'unknown_fields', 'ms']);

function cell(key: string, value: unknown, timezone: string): Html | string {
  if (value === null || value === undefined) return html`<span class="muted">null</span>`;
  if (value instanceof Date) return `${formatTime(value, timezone)} ${timezone} (${value.toISOString()})`;
  if (key === 'bytes') return `${count(value as string)} (${bytes(value as string)})`;
  if (typeof value === 'object') return html`<pre>${JSON.stringify(value)}</pre>`;
  if (typeof value === 'string' && /^\d+$/.test(value) && key !== 'id') return count(value);
  return String(value);
}

export function runBody(d: RunPageData): Html {
  const r = d.run;
  const id = String(r.id);
  const phases = (r.phases as Array<{ phase: string; ms: number }> | null) ?? null;
  const unknown = ((r.field_counts as { unknown?: Record<string, number> } | null)?.unknown ?? {}) as Record<string, number>;
  return html`<h1>Run ${id} <span class="status status-${String(r.status)}">${String(r.status)}</span>${r.dry_run === true ? html`<span class="badge">dry run</span>` : null}</h1>
<p>${String(r.trigger)} run, started ${cell('started_at', r.started_at, d.timezone)}${r.ms === null ? ', still running' : `, took ${duration(Number(r.ms))}`}.</p>
${r.error === null ? null : html`<h2>Error</h2><pre id="error">${String(r.error)}</pre>`}
<h2>Where its time went</h2>
${phases !== null && phases.length > 0
    ? phaseChart('phases', phases)
    : html`<p class="muted">${r.status === 'running' ? 'Its phase times are stored when it ends.' : 'No phase times for this run: it ran before they were stored (migration 0011), or stopped before its first phase.'}</p>`}
<h2>Archive</h2>
${d.payload
    ? html`<p id="archive">Its listing is archived (${bytes(d.payload.bytes)}, ${d.payload.algorithm}, sha256 <code>${d.payload.sha256}</code>). Load it again with:</p><pre>wine-recon-sync replay --run ${id}</pre>`
    : html`<p id="archive" class="muted">Its listing is not archived: only the newest SYNC_ARCHIVE_KEEP successful runs keep theirs, dry runs keep none.</p>`}
<h2>New fields</h2>
${Object.keys(unknown).length === 0 && d.newFields.length === 0
    ? html`<p class="muted">The listing carried no field outside the catalogue.</p>`
    : html`<table id="new-fields"><thead><tr><th>field</th><th class="n">records with it</th><th>BI column</th><th>note</th></tr></thead><tbody>${Object.entries(unknown).map(([name, n]) => {
        const f = d.newFields.find((x) => x.name === name);
        return html`<tr><td class="field-name">${name}</td><td class="n">${count(n)}</td><td>${f?.column_name ?? ''}${f ? html` <span class="muted">${f.bi_kind}, first found by this run</span>` : null}</td><td>${f?.note ?? ''}</td></tr>`;
      })}</tbody></table>`}
<h2>BI rounding</h2>
${r.bi_scale === null
    ? html`<p class="muted">${r.status === 'succeeded' ? 'Not counted: the run is older than the counts (migration 0006).' : 'Not counted: the run did not finish its load.'}</p>`
    : html`<p id="bi">With SYNC_BI_SCALE=${String(r.bi_scale)}: ${count(r.bi_rounded as string)} live values shown rounded in the BI views, ${count(r.bi_overflow as string)} too large for them (NULL there).</p>`}
<h2>Top reject reasons</h2>
${d.reasons.length === 0 ? html`<p class="muted">No record was set aside.</p>` : html`<table id="reasons"><thead><tr><th>field</th><th>reason</th><th class="n">records</th></tr></thead><tbody>${d.reasons.map((x) => html`<tr><td>${x.path}</td><td>${x.message}</td><td class="n">${count(x.records)}</td></tr>`)}</tbody></table>`}
${rejects(d, id)}
<h2>Every column</h2>
<table class="kv" id="columns"><tbody>${Object.entries(r)
    .filter(([k]) => !OWN_SECTIONS.has(k))
    .map(([k, v]) => html`<tr><th>${k}</th><td>${cell(k, v, d.timezone)}</td></tr>`)}
<tr><th>unknown_fields</th><td>${cell('unknown_fields', r.unknown_fields, d.timezone)}</td></tr>
<tr><th>phases</th><td>${cell('phases', r.phases, d.timezone)}</td></tr>
<tr><th>field_counts</th><td>${r.field_counts === null ? cell('field_counts', null, d.timezone) : html`<details><summary>as stored (JSON)</summary>${cell('field_counts', r.field_counts, d.timezone)}</details>`}</td></tr>
</tbody></table>
<p><a href="/runs/${id}.json">This run as JSON</a></p>`;
}

function rejects(d: RunPageData, id: string): Html {
  if (d.rejectsTotal === 0) return html`<h2 id="rejects">Rejects</h2><p class="muted">None.</p>`;
  const last = d.rejects.at(-1);
  const hasMore = d.rejects.length === REJECTS_PER_PAGE && last !== undefined;
  return html`<h2 id="rejects">Rejects (${count(d.rejectsTotal)})</h2>
<table id="rejects-table"><thead><tr><th class="n">position</th><th>record id</th><th>reasons</th><th>raw text (as received)</th></tr></thead>
<tbody>${d.rejects.map(
    (x) => html`<tr data-position="${x.position}"><td class="n">${x.position}</td><td>${x.record_id}</td><td><ul class="reasons">${x.errors.map((e) => html`<li>${e.path ? html`<code>${e.path}</code>: ` : null}${e.message}</li>`)}</ul></td>
<td><pre class="raw">${x.raw_start}${x.raw_length > RAW_SHOWN ? '…' : ''}</pre>${x.raw_length > RAW_SHOWN ? html`<a href="/runs/${id}/rejects/${x.position}/raw">whole text (${count(x.raw_length)} characters)</a>` : null}</td></tr>`,
  )}</tbody></table>
<nav class="pager">${d.previous === undefined ? null : html`<a href="/runs/${id}${query({ after: d.previous === '-1' ? undefined : d.previous })}#rejects" id="rejects-previous">← previous rejects</a>`}${hasMore ? html`<a href="/runs/${id}${query({ after: last.position })}#rejects" id="rejects-next">next rejects →</a>` : null}</nav>`;
}
