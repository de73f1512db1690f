/**
 * Bar charts as SVG, drawn on the server: readable without JavaScript (a title, a description,
 * axes with units, a legend), each bar a link to its run. Colours come from the stylesheet by
 * class (no style attribute: the Content-Security-Policy allows none).
 */
import { html, type Html } from './html.js';

export interface Series {
  key: string;
  name: string;
}

export interface Bar {
  runId: string;
  /** Stacked from the axis up, in the order of the chart's series. */
  values: Array<{ series: string; value: number }>;
  /** Said in the bar's tooltip. */
  label: string;
  /** Extra classes of the bar (e.g. `dry`). */
  marks?: string[];
}

export interface Chart {
  id: string;
  title: string;
  /** Of the y axis, e.g. `seconds`. */
  unit: string;
  series: Series[];
  bars: Bar[];
  /** Values are divided by this before drawing (ms to seconds, …). */
  scale?: number;
}

const W = 760;
const H = 220;
const LEFT = 64;
const RIGHT = 12;
const TOP = 12;
const BOTTOM = 36;

/** 1, 2, 4 or 8 times a power of ten, at least `max`: its quarters are round numbers. */
export function niceCeiling(max: number): number {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 4, 8, 10]) if (step * power >= max * (1 - 1e-12)) return step * power;
  return 10 * power;
}

function tickText(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 1e6) return `${+(value / 1e6).toFixed(2)}M`;
  if (Math.abs(value) >= 1e4) return `${+(value / 1e3).toFixed(1)}k`;
  return `${+value.toFixed(3)}`;
}

export function barChart(chart: Chart): Html {
  const scale = chart.scale ?? 1;
  const totals = chart.bars.map((b) => b.values.reduce((s, v) => s + v.value, 0) / scale);
  const top = niceCeiling(Math.max(0, ...totals));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const n = Math.max(chart.bars.length, 1);
  const slot = plotW / n;
  const barW = Math.min(Math.max(slot * 0.8, 0.6), 28);
  const y = (v: number) => TOP + plotH - (v / top) * plotH;

  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const v = top * f;
    return html`<g class="tick"><line x1="${LEFT - 4}" x2="${W - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"></line><text x="${LEFT - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${tickText(v)}</text></g>`;
  });
  // Run ids under a few bars, so that the x axis reads as "which run".
  const every = Math.max(1, Math.ceil(n / 8));
  // The last bar's id always, ending at the axis' end; a regular one too close to it is left out.
  const xLabels = chart.bars.map((b, i) => {
    const last = i === n - 1;
    if (!last && (i % every !== 0 || (n - 1 - i < every / 2 && n > 1))) return null;
    const x = last && n > 1 ? LEFT + slot * n : LEFT + slot * i + slot / 2;
    return html`<text x="${x.toFixed(1)}" y="${H - BOTTOM + 16}" text-anchor="${last && n > 1 ? 'end' : 'middle'}">${b.runId}</text>`;
  });
  const bars = chart.bars.map((b, i) => {
    const x = (LEFT + slot * i + (slot - barW) / 2).toFixed(2);
    let base = 0;
    const rects = b.values.map(({ series, value }) => {
      const v = value / scale;
      const y0 = y(base);
      const y1 = y(base + v);
      base += v;
      return html`<rect class="bar s-${series}${b.marks?.length ? ` ${b.marks.join(' ')}` : ''}" x="${x}" y="${y1.toFixed(2)}" width="${barW.toFixed(2)}" height="${Math.max(y0 - y1, 0).toFixed(2)}" data-series="${series}" data-value="${value}"></rect>`;
    });
    return html`<a href="/runs/${b.runId}" class="run-bar" data-run="${b.runId}"><title>${b.label}</title><rect class="hit" x="${(LEFT + slot * i).toFixed(2)}" y="${TOP}" width="${slot.toFixed(2)}" height="${plotH}"></rect>${rects}</a>`;
  });
  const desc = chart.bars.length === 0 ? 'No finished run yet.' : `${chart.bars.length} runs, from run ${chart.bars[0]!.runId} to run ${chart.bars.at(-1)!.runId}; the highest bar is ${tickText(Math.max(...totals))} ${chart.unit}. The same numbers are in the table below the plots.`;
  return html`<figure class="chart" id="${chart.id}">
<figcaption>${chart.title}</figcaption>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${chart.id}-t ${chart.id}-d">
<title id="${chart.id}-t">${chart.title}</title><desc id="${chart.id}-d">${desc}</desc>
${ticks}
<line class="axis" x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${TOP + plotH}"></line>
<line class="axis" x1="${LEFT}" x2="${W - RIGHT}" y1="${TOP + plotH}" y2="${TOP + plotH}"></line>
<text class="axis-label" transform="rotate(-90)" x="${-(TOP + plotH / 2)}" y="14" text-anchor="middle">${chart.unit}</text>
<text class="axis-label" x="${LEFT + plotW / 2}" y="${H - 4}" text-anchor="middle">run id (oldest left)</text>
${xLabels}
${bars}
</svg>
<ul class="legend">${chart.series.map((s) => html`<li><span class="swatch s-${s.key}"></span>${s.name}</li>`)}</ul>
</figure>`;
}

/** Where a run's time went: one horizontal bar per phase, in the order they started, in seconds. */
export function phaseChart(id: string, phases: ReadonlyArray<{ phase: string; ms: number }>): Html {
  const rowH = 22;
  const left = 130;
  const width = 760;
  const right = 90;
  const top = niceCeiling(Math.max(...phases.map((p) => p.ms / 1000), 0));
  const plotW = width - left - right;
  const height = phases.length * rowH + 40;
  const x = (s: number) => left + (s / top) * plotW;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map(
    (f) => html`<g class="tick"><line x1="${x(top * f).toFixed(1)}" x2="${x(top * f).toFixed(1)}" y1="4" y2="${phases.length * rowH + 6}"></line><text x="${x(top * f).toFixed(1)}" y="${phases.length * rowH + 20}" text-anchor="middle">${tickText(top * f)}</text></g>`,
  );
  const bars = phases.map(
    (p, i) => html`<g class="phase" data-phase="${p.phase}" data-ms="${p.ms}"><text x="${left - 8}" y="${i * rowH + 20}" text-anchor="end">${p.phase}</text><rect class="bar s-phase" x="${left}" y="${i * rowH + 8}" width="${Math.max(x(p.ms / 1000) - left, 0.5).toFixed(2)}" height="${rowH - 6}"><title>${p.phase}: ${p.ms} ms</title></rect><text x="${(x(p.ms / 1000) + 4).toFixed(1)}" y="${i * rowH + 20}">${formatMs(p.ms)}</text></g>`,
  );
  return html`<figure class="chart phases" id="${id}">
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="${id}-t ${id}-d">
<title id="${id}-t">Wall time of each phase, in seconds</title><desc id="${id}-d">${phases.map((p) => `${p.phase} ${formatMs(p.ms)}`).join('; ')}. The download overlaps the parse.</desc>
${ticks}
<line class="axis" x1="${left}" x2="${left}" y1="4" y2="${phases.length * rowH + 6}"></line>
<text class="axis-label" x="${left + plotW / 2}" y="${height - 2}" text-anchor="middle">seconds</text>
${bars}
</svg></figure>`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}
