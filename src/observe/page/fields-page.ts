/** `/fields`: the field catalogue of this version, and the fields found at run time (sync_fields). */
import { FIELDS, SQL_TYPE } from '../../fields.js';
import { count, formatTime } from './format.js';
import { html, type Html } from './html.js';
import type { FieldRow } from './queries.js';

export interface FieldsData {
  timezone: string;
  discovered: FieldRow[];
  lastLoad: { id: string; field_counts: { records: number; fields: Record<string, { present: number; non_null: number }> } | null } | undefined;
}

export function fieldsBody(d: FieldsData): Html {
  const counts = d.lastLoad?.field_counts;
  return html`<h1>Fields</h1>
<h2>The catalogue</h2>
<p class="muted">The fields this version loads into columns of their own${d.lastLoad ? html`; records counted by the last successful load, <a href="/runs/${d.lastLoad.id}">run ${d.lastLoad.id}</a>` : null}.</p>
<table id="catalogue"><thead><tr><th>field</th><th>column type</th><th>required</th><th class="n">records with it</th><th class="n">with a value</th><th>meaning</th></tr></thead>
<tbody>${FIELDS.map((f) => {
    const c = counts?.fields?.[f.name];
    return html`<tr><td><code>${f.name}</code></td><td>${SQL_TYPE[f.kind]}</td><td>${f.required ? 'yes' : 'no'}</td><td class="n">${c ? count(c.present) : ''}</td><td class="n">${c ? count(c.non_null) : ''}</td><td>${f.meaning}</td></tr>`;
  })}</tbody></table>
<h2>Found at run time</h2>
<p class="muted">Fields the upstream sent that the catalogue does not know: kept in extra_fields and shown in the BI views when they can be named (sync_fields).</p>
${d.discovered.length === 0
    ? html`<p class="muted">None so far.</p>`
    : html`<table id="discovered"><thead><tr><th>field</th><th>BI column</th><th>type</th><th>kinds seen</th><th>first run</th><th>last run</th><th class="n">records</th><th>found</th><th>note</th></tr></thead>
<tbody>${d.discovered.map(
        (f) => html`<tr><td class="field-name">${f.name}</td><td>${f.column_name}</td><td>${f.bi_kind}</td><td>${f.kinds.join(', ')}</td><td><a href="/runs/${f.first_run_id}">${f.first_run_id}</a></td><td><a href="/runs/${f.last_run_id}">${f.last_run_id}</a></td><td class="n">${count(f.records)}</td><td>${formatTime(f.discovered_at, d.timezone)}</td><td>${f.note}</td></tr>`,
      )}</tbody></table>`}
<p><a href="/fields.json">These fields as JSON</a></p>`;
}
