/**
 * HTML built from templates in which every interpolated value is escaped unless it is already
 * Html: text from the upstream or the database (wpi, raw rejects, field names, error messages)
 * can only ever reach a page as text. Every attribute is written in double quotes, so the same
 * escaping serves text and attribute values; URLs are built from numbers and encodeURIComponent.
 */

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

type Value = Html | string | number | bigint | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** A template whose values are escaped (arrays joined, null/undefined/false left out). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** A query string from the pairs that have a value. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

export interface Column {
  title: string;
  /** Right-aligned, tabular figures. */
  numeric?: boolean;
}

/**
 * A table that a phone shows as one block per row, each value under its column's name (the
 * stylesheet's `table.stack`): wide tables of long text stay readable at 390 px.
 */
export function stackedTable(
  id: string,
  columns: readonly Column[],
  rows: ReadonlyArray<{ attrs?: Html; cells: readonly Value[] }>,
): Html {
  const n = (c: Column) => (c.numeric ? ' class="n"' : '');
  const cellHtml = (c: Column, cell: Value) => `<td${n(c)} data-label="${escapeHtml(c.title)}">${render(cell)}</td>`;
  const head = columns.map((c) => `<th${n(c)}>${escapeHtml(c.title)}</th>`).join('');
  const body = rows.map(
    (r) =>
      `<tr${r.attrs ? ` ${r.attrs.text}` : ''}>${r.cells.map((cell, i) => cellHtml(columns[i]!, cell)).join('')}</tr>`,
  );
  return new Html(
    `<table id="${escapeHtml(id)}" class="stack"><thead><tr>${head}</tr></thead><tbody>${body.join('')}</tbody>
    </table>`,
  );
}
