/**
 * Bar charts as SVG, drawn on the server: readable without JavaScript (a title, a description,
 * axes with units, a legend), each bar a link to its run. Colours come from the stylesheet by
 * class (no style attribute: the Content-Security-Policy allows none).
 */
import { Html, html } from './html.js';

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

/**
 * The drawing's own units. The stylesheet sets its text at 13 of them, and a chart is drawn at
 * between 0.9 and 1.3 times this width (a 390 px phone, a column of the overview, the run page's
 * cap): its text never reads smaller than 11 CSS px.
 */
const W = 400;
const H = 220;
const LEFT = 48;
/** Room for the newest run's id, centred under its bar at the axis' end. */
const RIGHT = 24;
/** Room for the value written above a bar cut at the top. */
const TOP = 22;
const BOTTOM = 38;
/** A digit's width at the stylesheet's text size, rounded up, and the gap between two ids. */
const DIGIT_W = 8;
const LABEL_GAP = 8;
/** A bar more than this many times the median run's is cut at the top (chartScale). */
export const CUT_RATIO = 10;

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

/** A bar's total as written on it when it is cut: `3,000`, `12.5`. */
export function valueText(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: value < 10 ? 2 : value < 100 ? 1 : 0 });
}

/**
 * The top of the y axis, and the total above which a bar is cut at the top. One huge run (a first
 * load among small nightly changes) would otherwise flatten every other bar to nothing: a bar more
 * than CUT_RATIO times the median run's (of those that did anything) is cut, and the axis is
 * scaled to the highest of the others. At most half of the bars are ever cut.
 */
export function chartScale(totals: readonly number[]): { top: number; cutAbove: number | undefined } {
  const positive = totals.filter((t) => t > 0).sort((a, b) => a - b);
  if (positive.length === 0) return { top: niceCeiling(0), cutAbove: undefined };
  // The lower median: of two runs, the smaller one is what the scale must keep readable.
  const limit = positive[Math.floor((positive.length - 1) / 2)]! * CUT_RATIO;
  const kept = positive.filter((t) => t <= limit);
  if (kept.length === positive.length) return { top: niceCeiling(positive.at(-1)!), cutAbove: undefined };
  return { top: niceCeiling(kept.at(-1)!), cutAbove: kept.at(-1)! };
}

export function barChart(chart: Chart): Html {
  const scale = chart.scale ?? 1;
  const totals = chart.bars.map((b) => b.values.reduce((s, v) => s + v.value, 0) / scale);
  const { top, cutAbove } = chartScale(totals);
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const n = Math.max(chart.bars.length, 1);
  const slot = plotW / n;
  const barW = Math.min(Math.max(slot * 0.8, 0.6), 28);
  const y = (v: number) => TOP + plotH - (Math.min(v, top) / top) * plotH;
  const center = (i: number) => LEFT + slot * i + slot / 2;

  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const v = top * f;
    const at = y(v).toFixed(1);
    const line = html`<line x1="${LEFT - 4}" x2="${W - RIGHT}" y1="${at}" y2="${at}"></line>`;
    const text = html`<text x="${LEFT - 7}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${tickText(v)}</text>`;
    return html`<g class="tick">${line}${text}</g>`;
  });
  // Each id centred under its bar; as many as fit side by side, counted from the newest run, which is always named.
  const widest = Math.max(1, ...chart.bars.map((b) => b.runId.length)) * DIGIT_W + LABEL_GAP;
  const every = Math.max(1, Math.ceil(widest / slot));
  const xLabels = chart.bars.map((b, i) =>
    (n - 1 - i) % every === 0
      ? html`<text class="x-label" data-run="${b.runId}" x="${center(i).toFixed(2)}" y="${H - BOTTOM + 16}"${
          MIDDLE
        }>${b.runId}</text>`
      : null,
  );
  const hit = (i: number) =>
    html`<rect class="hit" x="${(LEFT + slot * i).toFixed(2)}" y="${TOP}"${html` width="${slot.toFixed(2)}"`} height="${
      plotH
    }"></rect>`;
  const cut: Array<{ runId: string; total: number }> = [];
  const bars = chart.bars.map((b, i) => {
    const x = LEFT + slot * i + (slot - barW) / 2;
    const total = totals[i]!;
    const isCut = cutAbove !== undefined && total > cutAbove;
    if (isCut) cut.push({ runId: b.runId, total });
    let base = 0;
    const rects = b.values.map(({ series, value }) => {
      const v = value / scale;
      const y0 = y(base);
      const y1 = y(base + v);
      base += v;
      const classes = `bar s-${series}${b.marks?.length ? ` ${b.marks.join(' ')}` : ''}`;
      const box = html`x="${x.toFixed(2)}" y="${y1.toFixed(2)}" width="${barW.toFixed(2)}"`;
      const height = Math.max(y0 - y1, 0).toFixed(2);
      const data = html`data-series="${series}" data-value="${value}"`;
      return html`<rect class="${classes}" ${box} height="${height}" ${data}></rect>`;
    });
    // A cut bar: a gap across it near the top, and its total written above it.
    const across = (barW + 2).toFixed(2);
    // The way back is the negated number (as it always was): "-8.5", not "-8.50".
    const gap = `M${(x - 1).toFixed(2)} ${TOP + 9} l${across} -4 m0 4 l${-across} 4`;
    const cutMark = html`<path class="cut" d="${gap}"></path>`;
    const cutAt = html`x="${center(i).toFixed(2)}" y="${TOP - 6}"`;
    const cutValue = html`<text class="cut-value" ${cutAt}${MIDDLE}>${valueText(total)}</text>`;
    const mark = isCut ? html`${cutMark}${cutValue}` : null;
    // A warned run (a check failed at warn level): a mark above its bar.
    const warned = b.marks?.includes('warned') === true;
    const markY = isCut ? TOP - 4 : y(total) - 9;
    const warn = warned
      ? html`<path class="warn-mark" d="M${(center(i) - 5).toFixed(2)} ${markY.toFixed(1)} h10 l-5 7 z"></path>`
      : null;
    return html`<a href="/runs/${b.runId}" class="run-bar" data-run="${b.runId}"${
      isCut ? html` data-cut="${total}"` : null
    }${warned ? html` data-warned="true"` : null}><title>${b.label}</title>${hit(i)}${rects}${mark}${warn}</a>`;
  });
  const cutWords = cut.length === 0 ? '' : ` ${cutSentence(cut, chart.unit)}`;
  const desc =
    chart.bars.length === 0
      ? 'No finished run yet.'
      : `${
          chart.bars.length === 1
            ? `1 run, run ${chart.bars[0]!.runId}`
            : `${chart.bars.length} runs, from run ${chart.bars[0]!.runId} to run ${chart.bars.at(-1)!.runId}`
        }; the highest bar is ${valueText(Math.max(...totals))} ${chart.unit}.${cutWords}` +
        ' The same numbers are in the table below the plots.';
  return html`<figure class="chart" id="${chart.id}">
<figcaption>${chart.title}</figcaption>
<svg ${SVG_NS} viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${chart.id}-t ${chart.id}-d">
<title id="${chart.id}-t">${chart.title}</title><desc id="${chart.id}-d">${desc}</desc>
${ticks}
<line class="axis" x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${TOP + plotH}"></line>
<line class="axis" x1="${LEFT}" x2="${W - RIGHT}" y1="${TOP + plotH}" y2="${TOP + plotH}"></line>
<text class="axis-label" transform="rotate(-90)" x="${-(TOP + plotH / 2)}" y="13"${MIDDLE}>${chart.unit}</text>
<text class="axis-label" x="${LEFT + plotW / 2}" y="${H - 3}" text-anchor="middle">run id (oldest left)</text>
${xLabels}
${bars}
</svg>
<ul class="legend">${chart.series.map((s) => html`<li><span class="swatch s-${s.key}"></span>${s.name}</li>`)}${
    chart.bars.some((b) => b.marks?.includes('warned'))
      ? html`<li><span class="swatch s-warned"></span>warned (a check failed)</li>`
      : null
  }</ul>
${cut.length === 0 ? null : html`<p class="chart-note">${cutSentence(cut, chart.unit)}</p>`}
</figure>`;
}

const SVG_NS = new Html('xmlns="http://www.w3.org/2000/svg"');
const MIDDLE = new Html(' text-anchor="middle"');

/** One phase's row of the phase chart: its name, its bar (with a tooltip) and its value. */
function phaseRow(
  p: { phase: string; ms: number },
  rowTop: number,
  left: number,
  x: (s: number) => number,
  rowH: number,
): Html {
  const name = html`<text x="${left - 6}" y="${rowTop + 21}" text-anchor="end">${p.phase}</text>`;
  const width = Math.max(x(p.ms / 1000) - left, 0.5).toFixed(2);
  const box = html`x="${left}" y="${rowTop + 8}" width="${width}" height="${rowH - 6}"`;
  const bar = html`<rect class="bar s-phase" ${box}><title>${p.phase}: ${p.ms} ms</title></rect>`;
  const value = html`<text x="${(x(p.ms / 1000) + 4).toFixed(1)}" y="${rowTop + 21}">${formatMs(p.ms)}</text>`;
  return html`${name}${bar}${value}`;
}

/** The phase chart's description: each phase and its time. */
function phaseWords(phases: ReadonlyArray<{ phase: string; ms: number }>): string {
  return `${phases.map((p) => `${p.phase} ${formatMs(p.ms)}`).join('; ')}. The download overlaps the parse.`;
}

/** What a chart says of its cut bars, in words: which runs, and their totals. */
function cutSentence(cut: ReadonlyArray<{ runId: string; total: number }>, unit: string): string {
  const which = cut.map((c) => `run ${c.runId} (${valueText(c.total)} ${unit})`).join(', ');
  return `Cut at the top and marked with ${
    cut.length === 1 ? 'its value' : 'their values'
  }, so that the other runs stay readable: ${which}.`;
}

/** Where a run's time went: one horizontal bar per phase, in the order they started, in seconds. */
export function phaseChart(id: string, phases: ReadonlyArray<{ phase: string; ms: number }>): Html {
  const rowH = 24;
  // The longest phase name ("parse and stage") and the longest value ("123.45 s") at the stylesheet's text size.
  const left = 112;
  const right = 62;
  const top = niceCeiling(Math.max(...phases.map((p) => p.ms / 1000), 0));
  const plotW = W - left - right;
  const height = phases.length * rowH + 40;
  const x = (s: number) => left + (s / top) * plotW;
  const ticks = [0, 0.5, 1].map((f) => {
    const at = x(top * f).toFixed(1);
    const line = html`<line x1="${at}" x2="${at}" y1="4" y2="${phases.length * rowH + 6}"></line>`;
    const text = html`<text x="${at}" y="${phases.length * rowH + 20}"${MIDDLE}>${tickText(top * f)}</text>`;
    return html`<g class="tick">${line}${text}</g>`;
  });
  const bars = phases.map(
    (p, i) =>
      html`<g class="phase" data-phase="${p.phase}" data-ms="${p.ms}">${phaseRow(p, i * rowH, left, x, rowH)}</g>`,
  );
  return html`<figure class="chart phases" id="${id}">
<svg ${SVG_NS} viewBox="0 0 ${W} ${height}" role="img" aria-labelledby="${id}-t ${id}-d">
<title id="${id}-t">Wall time of each phase, in seconds</title><desc id="${id}-d">${phaseWords(phases)}</desc>
${ticks}
<line class="axis" x1="${left}" x2="${left}" y1="4" y2="${phases.length * rowH + 6}"></line>
<text class="axis-label" x="${left + plotW / 2}" y="${height - 2}" text-anchor="middle">seconds</text>
${bars}
</svg></figure>`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}
