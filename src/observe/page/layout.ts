/** The frame of every page: head, navigation, and the stylesheet (served as /page.css). */
import { html, type Html } from './html.js';

export function layout(options: { title: string; body: Html; refreshSeconds?: number | undefined }): string {
  return `<!doctype html>\n${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.refreshSeconds === undefined ? null : html`<meta http-equiv="refresh" content="${options.refreshSeconds}">`}
<title>${options.title} · wine-recon-sync</title>
<link rel="stylesheet" href="/page.css">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
</head>
<body>
<header><nav><a href="/" class="brand">wine-recon-sync</a> <a href="/">Overview</a> <a href="/fields">Fields</a></nav></header>
<main>
${options.body}
</main>
</body>
</html>`.text}\n`;
}

export const FAVICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="3" y="2" width="10" height="12" rx="2" fill="#7b2d43"/></svg>';

export const STYLESHEET = `
:root { --ok: #1a7f37; --late: #9a6700; --bad: #c62828; --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #fff; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
header { background: #7b2d43; padding: 8px 16px; }
header a { color: #fff; margin-right: 16px; text-decoration: none; }
header .brand { font-weight: 700; }
main { padding: 12px 16px 32px; max-width: 1280px; }
h1 { font-size: 20px; margin: 8px 0 12px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 6px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.kv th { width: 220px; font-weight: 600; }
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
.badge { border: 1px solid var(--muted); border-radius: 8px; padding: 0 6px; font-size: 12px; color: var(--muted); margin-left: 4px; }
pre { white-space: pre-wrap; word-break: break-all; background: #f6f8fa; padding: 6px 8px; margin: 0; max-width: 100%; }
.error-start { color: var(--bad); max-width: 360px; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 12px 24px; }
figure.chart { margin: 0; }
figure.chart figcaption { font-weight: 600; margin-bottom: 2px; }
figure.chart svg { width: 100%; height: auto; display: block; }
figure.phases svg { max-width: 760px; }
svg text { font-size: 11px; fill: var(--muted); }
svg .tick line { stroke: #eaeef2; }
svg .axis { stroke: var(--muted); }
svg .hit { fill: transparent; }
svg a.run-bar:hover .hit, svg a.run-bar:focus .hit { fill: #eaeef2; }
svg .bar.dry { fill-opacity: 0.45; }
.legend { list-style: none; padding: 0; margin: 4px 0 0; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; }
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
form.filters { display: flex; gap: 12px; align-items: end; margin: 8px 0; flex-wrap: wrap; }
.pager { margin: 8px 0; display: flex; gap: 16px; }
.choice a { margin-right: 8px; }
.choice a.on { font-weight: 700; text-decoration: none; color: var(--ink); }
button { font: inherit; padding: 4px 12px; }
ul.reasons { margin: 0; padding-left: 18px; }
`;
