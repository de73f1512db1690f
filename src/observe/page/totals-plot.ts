/**
 * "Totals per run": one small plot per numeric field, each run's exact total (sync_run_profiles)
 * drawn from zero, with its value written as the BI views show it (SYNC_BI_SCALE). A warned run
 * is marked, a run refused by a check is drawn pale red: its total is what it would have committed.
 */
import { KNOWN_FIELDS } from '../../fields.js';
import { html, type Html } from './html.js';
import type { PlotRun, TotalPoint } from './queries.js';
import { niceCeiling } from './svg.js';

const W = 400;
const H = 170;
const LEFT = 56;
const RIGHT = 24;
const TOP = 16;
const BOTTOM = 36;
const DIGIT_W = 8;
const LABEL_GAP = 8;
/** The least distance between two tick labels: the text's height and a little air. */
const TICK_GAP = 16;

export interface FieldTotals {
  field: string;
  points: Array<TotalPoint & { run: PlotRun }>;
}

/** The fields in the catalogue's order, then the kept new ones by name; each with the plotted runs' totals. */
export function fieldTotals(points: readonly TotalPoint[], runs: readonly PlotRun[]): FieldTotals[] {
  const byKey = new Map(points.map((p) => [`${p.field}\u0000${p.run_id}`, p]));
  const fields = [...new Set(points.map((p) => p.field))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return fields.map((field) => ({
    field,
    points: runs.flatMap((run) => {
      const p = byKey.get(`${field}\u0000${run.id}`);
      return p === undefined ? [] : [{ ...p, run }];
    }),
  }));
}

function rank(field: string): number {
  const i = (KNOWN_FIELDS as readonly string[]).indexOf(field);
  return i === -1 ? KNOWN_FIELDS.length : i;
}

/**
 * A decimal's text as the BI views round it (the database rounded it, half away from zero, to
 * SYNC_BI_SCALE places), its trailing zeros dropped and its integer digits grouped: `12,345.5`.
 * Text to text: the value never passes through a JS number.
 */
export function biLabel(rounded: string | null): string {
  if (rounded === null) return '–';
  const m = /^(-?)(\d+)(?:\.(\d*?)0*)?$/.exec(rounded);
  if (m === null) return rounded;
  const [, sign, int, frac] = m;
  const grouped = int!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const text = `${grouped}${frac ? `.${frac}` : ''}`;
  return text === '0' ? '0' : `${sign}${text}`;
}

function tickText(value: number): string {
  if (value === 0) return '0';
  const a = Math.abs(value);
  if (a >= 1e9) return `${+(value / 1e9).toFixed(2)}G`;
  if (a >= 1e6) return `${+(value / 1e6).toFixed(2)}M`;
  if (a >= 1e4) return `${+(value / 1e3).toFixed(1)}k`;
  return `${+value.toFixed(3)}`;
}

/** A run's total as a bar: its height only (a float is enough for pixels; the label is the exact text). */
const height = (p: TotalPoint) => (p.total === null ? 0 : Number(p.total));

export function totalsChart(t: FieldTotals): Html {
  const id = `totals-${t.field.replace(/[^a-z0-9_]/gi, '_')}`;
  const values = t.points.map(height);
  const hi = niceCeiling(Math.max(0, ...values));
  const lowest = Math.min(0, ...values);
  const lo = lowest < 0 ? -niceCeiling(-lowest) : 0;
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const n = Math.max(t.points.length, 1);
  const slot = plotW / n;
  const barW = Math.min(Math.max(slot * 0.8, 0.6), 28);
  const y = (v: number) => TOP + plotH - ((v - lo) / (hi - lo)) * plotH;
  const center = (i: number) => LEFT + slot * i + slot / 2;
  // Zero is always marked; another tick is left out when its label would touch zero's.
  const tickValues = (lo < 0 ? [lo, 0, hi] : [0, hi / 2, hi]).filter(
    (v) => v === 0 || Math.abs(y(v) - y(0)) >= TICK_GAP,
  );
  const ticks = tickValues.map(
    (v) =>
      html`<g class="tick"><line x1="${LEFT - 4}" x2="${W - RIGHT}"
 y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"></line>
<text x="${LEFT - 7}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${tickText(v)}</text></g>`,
  );
  const widest = Math.max(1, ...t.points.map((p) => p.run_id.length)) * DIGIT_W + LABEL_GAP;
  const every = Math.max(1, Math.ceil(widest / slot));
  const xLabels = t.points.map((p, i) =>
    (n - 1 - i) % every === 0
      ? html`<text class="x-label" data-run="${p.run_id}" x="${center(i).toFixed(2)}" y="${H - BOTTOM + 15}"
 text-anchor="middle">${p.run_id}</text>`
      : null,
  );
  const bars = t.points.map((p, i) => {
    const v = values[i]!;
    const x = LEFT + slot * i + (slot - barW) / 2;
    const [top, bottom] = [y(Math.max(v, 0)), y(Math.min(v, 0))];
    const warned = Number(p.run.checks_warned) > 0;
    const refused = Number(p.run.checks_refused) > 0;
    const classes = ['bar', 's-total', p.run.dry_run ? 'dry' : '', refused ? 'refused' : '', p.failed ? 'flagged' : '']
      .filter(Boolean)
      .join(' ');
    const said = [
      `run ${p.run_id}${p.run.dry_run ? ' (dry run)' : ''}, ${p.run.status}: total ${biLabel(p.bi_total)}`,
      refused ? 'refused by a check: what it would have committed' : '',
      warned ? `warned${p.failed ? `: ${p.failed} failed` : ''}` : '',
    ]
      .filter(Boolean)
      .join('; ');
    // A warned run: a mark above its bar (below it when the total is negative).
    const markY = v < 0 ? bottom + 3 : top - 9;
    const path = `M${(center(i) - 5).toFixed(2)} ${markY.toFixed(1)} h10 l-5 ${v < 0 ? -6 : 7} z`;
    const mark = warned ? html`<path class="warn-mark" d="${path}"></path>` : null;
    const hit = { x: (LEFT + slot * i).toFixed(2), width: slot.toFixed(2) };
    const bar = {
      x: x.toFixed(2),
      y: top.toFixed(2),
      width: barW.toFixed(2),
      height: Math.max(bottom - top, 0).toFixed(2),
    };
    return html`<a href="/runs/${p.run_id}" class="run-bar" data-run="${p.run_id}" data-total="${p.total ?? ''}"
 data-label="${biLabel(p.bi_total)}"${warned ? html` data-warned="true"` : null}><title>${said}</title>
<rect class="hit" x="${hit.x}" y="${TOP}" width="${hit.width}" height="${plotH}"></rect>
<rect class="${classes}" x="${bar.x}" y="${bar.y}" width="${bar.width}" height="${bar.height}"></rect>${mark}</a>`;
  });
  const last = t.points.at(-1);
  const desc =
    last === undefined
      ? 'No run has a profile yet.'
      : `${t.points.length} runs, from run ${t.points[0]!.run_id} to run ${last.run_id}; ` +
        `the last total is ${biLabel(last.bi_total)}. The same numbers are in the table below the plots.`;
  const lastTotal =
    last === undefined
      ? null
      : html` <span class="last-total">run ${last.run_id}: <strong>${biLabel(last.bi_total)}</strong></span>`;
  return html`<figure class="chart totals" id="${id}" data-field="${t.field}">
<figcaption><span class="field-name">${t.field}</span>${lastTotal}</figcaption>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-t ${id}-d">
<title id="${id}-t">Total of ${t.field} per run</title><desc id="${id}-d">${desc}</desc>
${ticks}
<line class="axis" x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${TOP + plotH}"></line>
<line class="axis" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(0).toFixed(1)}" y2="${y(0).toFixed(1)}"></line>
${xLabels}
${bars}
</svg>
</figure>`;
}

/** The section: the plots, what their marks mean, and their numbers as a table. */
export function totalsSection(totals: readonly FieldTotals[], scale: number | undefined): Html {
  const scaleWords =
    scale === undefined
      ? 'exactly'
      : `as the BI views show them: rounded half away from zero to ${scale} decimal places`;
  if (totals.length === 0)
    return html`<h2 id="totals">Totals per run</h2>
<p class="muted" id="totals-none">No run in this window has a profile of its numeric fields yet.</p>`;
  const cells = totals.map((t) => new Map(t.points.map((p) => [p.run_id, p.bi_total])));
  const runs = [...new Map(totals.flatMap((t) => t.points.map((p) => [p.run_id, p.run] as const))).values()].sort(
    (a, b) => Number(a.id) - Number(b.id),
  );
  return html`<h2 id="totals">Totals per run</h2>
<p class="muted">Each numeric field's exact sum over the live rows after each run, written ${scaleWords}
(SYNC_BI_SCALE). <span class="swatch s-warned"></span>A mark above a bar: a check warned on that run.
Pale red: a check refused the run, and its bar is what it would have committed.</p>
<div class="charts">
${totals.map(totalsChart)}
</div>
<details id="totals-data"><summary>The totals as a table</summary>
<div class="scroll"><table><thead><tr><th>run</th>${totals.map((t) => html`<th class="n">${t.field}</th>`)}</tr></thead>
<tbody>${runs.map(
    (r) =>
      html`<tr data-run="${r.id}"><td><a href="/runs/${r.id}">${r.id}</a></td>${cells.map(
        (byRun) => html`<td class="n">${biLabel(byRun.get(r.id) ?? null)}</td>`,
      )}</tr>`,
  )}</tbody></table></div>
</details>`;
}
