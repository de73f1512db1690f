/** `/fields`: the field catalogue of this version, and the extra fields (sync_fields). */
import { FIELDS, SQL_TYPE } from '../../fields.js';
import { count, formatTime } from './format.js';
import { html, stackedTable, type Html } from './html.js';
import type { FieldRow } from './queries.js';

const EXTRA_FIELDS_NOTE =
  'Fields the upstream sent that the catalogue does not know: kept in extra_fields and shown in the BI views when they can be named (sync_fields).';

export interface FieldsData {
  timezone: string;
  discovered: FieldRow[];
  lastLoad:
    | {
        id: string;
        field_counts: { records: number; fields: Record<string, { present: number; non_null: number }> } | null;
      }
    | undefined;
}

export function fieldsBody(d: FieldsData): Html {
  const counts = d.lastLoad?.field_counts;
  return html`<h1>Fields</h1>
<h2>The catalogue</h2>
<p class="muted">The fields this version loads into columns of their own${
    d.lastLoad
      ? html`; records counted by the last successful load, <a href="/runs/${d.lastLoad.id}">run ${d.lastLoad.id}</a>`
      : null
  }.</p>
${stackedTable(
  'catalogue',
  [
    { title: 'field' },
    { title: 'column type' },
    { title: 'required' },
    { title: 'records with it', numeric: true },
    { title: 'with a value', numeric: true },
    { title: 'meaning' },
  ],
  FIELDS.map((f) => {
    const c = counts?.fields?.[f.name];
    return {
      cells: [
        html`<code>${f.name}</code>`,
        SQL_TYPE[f.kind],
        f.required ? 'yes' : 'no',
        c ? count(c.present) : '',
        c ? count(c.non_null) : '',
        f.meaning,
      ],
    };
  }),
)}
<h2>Found at run time</h2>
<p class="muted">${EXTRA_FIELDS_NOTE}</p>
${
  d.discovered.length === 0
    ? html`<p class="muted">None so far.</p>`
    : stackedTable(
        'discovered',
        [
          { title: 'field' },
          { title: 'BI column' },
          { title: 'type' },
          { title: 'kinds seen' },
          { title: 'first run' },
          { title: 'last run' },
          { title: 'records', numeric: true },
          { title: 'found' },
          { title: 'note' },
        ],
        d.discovered.map((f) => ({
          cells: [
            html`<span class="field-name">${f.name}</span>`,
            f.column_name,
            f.bi_kind,
            f.kinds.join(', '),
            html`<a href="/runs/${f.first_run_id}">${f.first_run_id}</a>`,
            html`<a href="/runs/${f.last_run_id}">${f.last_run_id}</a>`,
            count(f.records),
            formatTime(f.discovered_at, d.timezone),
            f.note,
          ],
        })),
      )
}
<p><a href="/fields.json">These fields as JSON</a></p>`;
}
