/** The frame of every page: head, navigation, and the stylesheet (served as /page.css). */
import { html, type Html } from './html.js';

const NAV_LINKS = html`<a href="/" class="brand">wine-recon-sync</a> <a href="/">Overview</a> <a href="/fields">Fields</a>`;

export function layout(options: { title: string; body: Html; refreshSeconds?: number | undefined }): string {
  return `<!doctype html>\n${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.refreshSeconds === undefined ? null : html`<meta http-equiv="refresh" content="${options.refreshSeconds}">`}
<title>${options.title} · wine-recon-sync</title>
<link rel="stylesheet" href="/page.css">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
</head>
<body>
<header><nav>${NAV_LINKS}</nav></header>
<main>
${options.body}
</main>
</body>
</html>`.text
  }\n`;
}

export const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="3" y="2" width="10" height="12" rx="2" fill="#7b2d43"/></svg>';

export const STYLESHEET = `
:root { --ok: #1a7f37; --late: #9a6700; --bad: #c62828; --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #fff; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  background: var(--bg); }
header { background: #7b2d43; padding: 8px 16px; }
header a { color: #fff; margin-right: 16px; text-decoration: none; }
header .brand { font-weight: 700; }
main { padding: 12px 16px 32px; max-width: 1280px; }
/*
 * Upstream text (a wpi, a field name, an error) may be one long word: it wraps anywhere rather than
 * widen the page. In tables only where such text stands, so that headers and numbers keep their words.
 */
p, li, pre, code, summary, .freshness, .progress, .error-start, .field-name, .kv td,
table.stack td { overflow-wrap: anywhere; }
h1 { font-size: 20px; margin: 8px 0 12px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 6px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.kv th { width: 220px; font-weight: 600; }
ul.counts { list-style: none; padding: 0; margin: 4px 0 8px; display: flex; flex-wrap: wrap; gap: 2px 18px;
  font-size: 15px; }
ul.counts strong { font-variant-numeric: tabular-nums; }
.freshness { border-left: 6px solid; padding: 10px 14px; margin-bottom: 12px; }
.freshness.fresh { border-color: var(--ok); background: #dafbe1; }
.freshness.late { border-color: var(--late); background: #fff8c5; }
.freshness.failing { border-color: var(--bad); background: #ffebe9; }
.freshness strong { font-size: 18px; display: block; }
.progress, .notice { border: 1px solid var(--line); padding: 8px 12px; margin: 8px 0; background: #f6f8fa; }
.status { font-weight: 600; }
.status-succeeded { color: var(--ok); }
.status-failed, .status-abandoned, .status-aborted { color: var(--bad); }
.status-running { color: #0969da; }
.badge { border: 1px solid var(--muted); border-radius: 8px; padding: 0 6px; font-size: 12px; color: var(--muted);
  margin-left: 4px; }
pre { white-space: pre-wrap; background: #f6f8fa; padding: 6px 8px; margin: 0; max-width: 100%; }
.error-start { color: var(--bad); max-width: 360px; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
/* One plot per row on a phone, three on a wide screen; each drawn 360-520 px wide (text: 12-17 px). */
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 360px), 1fr)); gap: 12px 24px; }
figure.chart { margin: 0; }
figure.chart figcaption { font-weight: 600; margin-bottom: 2px; }
figure.chart svg { width: 100%; max-width: 520px; height: auto; display: block; }
figure.phases svg { max-width: 440px; }
svg text { font-size: 13px; fill: var(--muted); }
svg .cut { stroke: #fff; stroke-width: 2.5; fill: none; }
svg text.cut-value { fill: var(--ink); font-weight: 600; }
.chart-note { margin: 2px 0 0; font-size: 12px; color: var(--muted); }
svg .tick line { stroke: #eaeef2; }
svg .axis { stroke: var(--muted); }
svg .hit { fill: transparent; }
svg a.run-bar:hover .hit, svg a.run-bar:focus .hit { fill: #eaeef2; }
svg .bar.dry { fill-opacity: 0.45; }
.legend { list-style: none; padding: 0; margin: 4px 0 0; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px;
  }
.narrow-only { display: none; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: baseline; }
.s-succeeded { fill: #2da44e; background: #2da44e; }
.s-failed { fill: #cf222e; background: #cf222e; }
.s-aborted { fill: #bc4c00; background: #bc4c00; }
.s-abandoned { fill: #8250df; background: #8250df; }
.s-inserted { fill: #2da44e; background: #2da44e; }
.s-updated { fill: #0969da; background: #0969da; }
.s-deleted { fill: #cf222e; background: #cf222e; }
.s-restored { fill: #bf8700; background: #bf8700; }
.s-received { fill: #57606a; background: #57606a; }
.s-rejected { fill: #cf222e; background: #cf222e; }
.s-phase { fill: #7b2d43; background: #7b2d43; }
.s-dry { fill: #2da44e; fill-opacity: 0.45; background: #96d2a6; }
.s-total { fill: #7b2d43; background: #7b2d43; }
svg .bar.refused { fill: #cf222e; fill-opacity: 0.35; }
svg .bar.flagged { stroke: #9a6700; stroke-width: 1.5; }
svg .warn-mark { fill: #bf8700; stroke: #fff; stroke-width: 0.8; }
.swatch.s-warned { width: 0; height: 0; background: none;
  border-left: 5px solid transparent; border-right: 5px solid transparent; border-top: 8px solid #bf8700; }
.badge { white-space: nowrap; display: inline-block; }
figure.totals figcaption { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 0 8px; }
figure.totals .last-total { font-weight: 400; color: var(--muted); font-variant-numeric: tabular-nums; }
figure.totals .last-total strong { color: var(--ink); }
.badge.check-warn { border-color: #bf8700; color: #7d4e00; background: #fff8c5; text-decoration: none; }
.badge.check-error { border-color: var(--bad); color: var(--bad); background: #ffebe9; text-decoration: none; }
.checks-failed { border-left: 6px solid #bf8700; padding: 6px 10px; background: #fff8c5; }
#checks-table tr.failed-error td { background: #ffebe9; }
#checks-table tr.failed-warn td { background: #fff8c5; }
#checks-table .check-result { font-weight: 600; }
.scroll { overflow-x: auto; max-width: 100%; }
/* A check's name and its numbers are read whole: on a wide screen only the message wraps. */
@media (min-width: 641px) {
  #checks-table td:first-child, #checks-table td.n, #profile-table td.n { white-space: nowrap; overflow-wrap: normal; }
}
form.filters { display: flex; gap: 12px; align-items: end; margin: 8px 0; flex-wrap: wrap; }
.pager { margin: 8px 0; display: flex; gap: 16px; }
.choice a { margin: 0 3px; }
.choice a.on { font-weight: 700; text-decoration: none; color: var(--ink); }
button { font: inherit; padding: 4px 12px; }
ul.reasons { margin: 0; padding-left: 18px; }
/*
 * A phone (390 px): each run of the runs table is a block of its number, status, start, duration,
 * rows changed and error (the run's own page has the rest, first thing); other tables become one
 * block per row, each value under its column's name.
 */
@media (max-width: 640px) {
  main { padding: 8px 12px 24px; }
  header { padding: 8px 12px; }
  .wide-only { display: none; }
  .narrow-only { display: revert; }
  #runs-table thead { display: none; }
  #runs-table, #runs-table tbody { display: block; }
  #runs-table tr { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 12px;
    border-bottom: 1px solid var(--line); padding: 6px 0; }
  #runs-table td { display: block; border: 0; padding: 0; }
  #runs-table td.wide-only { display: none; }
  #runs-table td.changed::after { content: " rows changed"; color: var(--muted); }
  #runs-table td.error-start { flex-basis: 100%; max-width: none; }
  #runs-table td.error-start:empty { display: none; }
  .kv th { width: 40%; }
  table.stack thead { display: none; }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack tr { border-bottom: 1px solid var(--line); padding: 4px 0; }
  table.stack td { border: 0; padding: 1px 0; text-align: left; }
  table.stack td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
  #profile-table td:empty, #checks-table td:empty { display: none; }
}
`;
