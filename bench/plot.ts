/**
 * The benchmark as a picture: for each measurement, each run's wall time as a bar, with the floor
 * measured in the same run and the target (report.ts WALL_TARGETS) as ticks across it. Plain SVG
 * text, written by hand so that the bench needs no plotting package.
 *
 * `npm run bench` writes it (default docs/bench.svg, or `--svg PATH`). To draw it again from a
 * saved report (the README's is bench/fixtures/readme-bench.json):
 *
 *   node dist/bench/plot.js bench/fixtures/readme-bench.json docs/bench.svg
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { NAMES, ratioText, WALL_TARGETS, wallTarget } from './report.js';

/** What the plot needs of a run: a BenchRun has it, and so does a hand-written fixture. */
export interface PlotRun {
  /** Shown beside the bar; default `run N`. */
  label?: string;
  floorSeconds: number;
  syncs: Array<{ name: string; seconds: number }>;
}

export interface PlotInput {
  title?: string;
  /** Said under the plot: which runs these are (machine, date, versions). Lines split on `\n`. */
  caption: string;
  runs: PlotRun[];
}

const WIDTH = 960;
const LEFT = 340;
const RIGHT = 40;
const TOP = 78;
const BAR = 12;
const ROW = 18;
const GROUP_GAP = 16;
const MET = '#3b78b5';
const MISSED = '#d9822b';

export function renderBenchSvg({
  title = 'npm run bench: wall time per run against the floor',
  caption,
  runs,
}: PlotInput): string {
  // Only what some run measured: a report from before a measurement existed draws as it did then.
  const lines = Object.values(NAMES).filter((name) => runs.some((r) => r.syncs.some((s) => s.name === name)));
  const xMax = niceMax(
    Math.max(
      1,
      ...runs.flatMap((r) => [r.floorSeconds, ...r.syncs.map((s) => Math.max(s.seconds, wallTarget(r, s.name) ?? 0))]),
    ),
  );
  const plotWidth = WIDTH - LEFT - RIGHT;
  const x = (seconds: number) => LEFT + (seconds / xMax) * plotWidth;
  const groupHeight = runs.length * ROW + GROUP_GAP;
  const plotBottom = TOP + lines.length * groupHeight;
  const captionLines = caption.split('\n');
  const height = plotBottom + 56 + captionLines.length * 16;

  const out: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}"` +
      ' font-family="Helvetica, Arial, sans-serif" font-size="12" role="img" aria-labelledby="plot-title">',
    `<title id="plot-title">${esc(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
    ...legend(LEFT, 44),
  ];

  // Grid and x axis.
  const step = tickStep(xMax);
  for (let t = 0; t <= xMax + 1e-9; t += step) {
    out.push(`<line x1="${n(x(t))}" y1="${TOP - 6}" x2="${n(x(t))}" y2="${plotBottom}" stroke="#e4e4e4"/>`);
    out.push(`<text x="${n(x(t))}" y="${plotBottom + 16}" text-anchor="middle" fill="#444">${n(t)}</text>`);
  }
  out.push(
    `<line class="axis" x1="${LEFT}" y1="${plotBottom}" x2="${WIDTH - RIGHT}" y2="${plotBottom}" stroke="#444"/>`,
  );
  out.push(`<line class="axis" x1="${LEFT}" y1="${TOP - 6}" x2="${LEFT}" y2="${plotBottom}" stroke="#444"/>`);
  out.push(
    `<text x="${n(LEFT + plotWidth / 2)}" y="${plotBottom + 36}" text-anchor="middle">` +
      'wall time, seconds (one bar per run)</text>',
  );

  lines.forEach((name, i) => {
    const top = TOP + i * groupHeight;
    const target = WALL_TARGETS[name]!;
    out.push(`<text class="line-label" x="12" y="${top + 10}" font-weight="bold">${esc(name)}</text>`);
    out.push(`<text x="12" y="${top + 25}" fill="#555">target ≤ ${ratioText(target.ratio)}× ${target.of}</text>`);
    runs.forEach((run, j) => {
      const y = top + j * ROW;
      const measured = run.syncs.find((s) => s.name === name);
      const runLabel = run.label ?? `run ${j + 1}`;
      out.push(
        `<text x="${LEFT - 8}" y="${y + BAR - 2}" text-anchor="end" fill="#555" font-size="11">${esc(runLabel)}</text>`,
      );
      if (measured === undefined) return;
      const limit = wallTarget(run, name);
      const met = limit === undefined || measured.seconds <= limit;
      const ratio = measured.seconds / run.floorSeconds;
      const targetText = limit === undefined ? '' : `; target ≤ ${limit.toFixed(2)} s (${met ? 'met' : 'missed'})`;
      const tip =
        `${name}, ${runLabel}: ${measured.seconds.toFixed(2)} s, ` +
        `${ratio.toFixed(2)}× its floor of ${run.floorSeconds.toFixed(2)} s${targetText}`;
      out.push(
        `<rect class="run" x="${LEFT}" y="${y}" width="${n(Math.max(1, x(measured.seconds) - LEFT))}" height="${BAR}"` +
          ` fill="${met ? MET : MISSED}"><title>${esc(tip)}</title></rect>`,
      );
      out.push(
        `<line class="floor" x1="${n(x(run.floorSeconds))}" y1="${y - 3}" x2="${n(x(run.floorSeconds))}"` +
          ` y2="${y + BAR + 3}" stroke="#111" stroke-width="2"/>`,
      );
      if (limit !== undefined) {
        out.push(
          `<line class="target" x1="${n(x(limit))}" y1="${y - 3}" x2="${n(x(limit))}" y2="${y + BAR + 3}"` +
            ' stroke="#c0392b" stroke-width="2" stroke-dasharray="3 2"/>',
        );
      }
      // After the bar and its floor tick; after the target tick too when that would cross the text.
      const end = Math.max(x(measured.seconds), x(run.floorSeconds));
      const labelX = (limit !== undefined && x(limit) >= end && x(limit) < end + 150 ? x(limit) : end) + 6;
      out.push(
        `<text x="${n(labelX)}" y="${y + BAR - 2}" font-size="11">` +
          `${measured.seconds.toFixed(2)} s · ${ratio.toFixed(2)}× floor</text>`,
      );
    });
  });

  captionLines.forEach((line, i) =>
    out.push(`<text x="12" y="${plotBottom + 60 + i * 16}" fill="#333" font-size="11">${esc(line)}</text>`),
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function legend(left: number, y: number): string[] {
  return [
    `<rect x="${left}" y="${y - 9}" width="22" height="10" fill="${MET}"/>`,
    `<text x="${left + 28}" y="${y}">the sync, target met</text>`,
    `<rect x="${left + 160}" y="${y - 9}" width="22" height="10" fill="${MISSED}"/>`,
    `<text x="${left + 188}" y="${y}">target missed</text>`,
    `<line x1="${left + 290}" y1="${y - 11}" x2="${left + 290}" y2="${y + 3}" stroke="#111" stroke-width="2"/>`,
    `<text x="${left + 298}" y="${y}">floor of the same run</text>`,
    `<line x1="${left + 440}" y1="${y - 11}" x2="${left + 440}" y2="${y + 3}"` +
      ' stroke="#c0392b" stroke-width="2" stroke-dasharray="3 2"/>',
    `<text x="${left + 448}" y="${y}">target</text>`,
  ];
}

/** The axis end: the next 1, 2 or 5 × 10^k step past the largest value, with a little room. */
function niceMax(value: number): number {
  const step = tickStep(value * 1.05);
  return Math.ceil((value * 1.05) / step) * step;
}

function tickStep(range: number): number {
  const raw = range / 8;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
}

const n = (v: number) => String(Math.round(v * 10) / 10);

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A report written by bench.ts, or a fixture of the same shape; `caption` overrides the one built from it. */
interface SavedReport {
  date?: string;
  commit?: string;
  records?: number;
  postgres?: string;
  node?: string;
  caption?: string;
  runs: PlotRun[];
}

export function captionOf(report: SavedReport): string {
  if (report.caption) return report.caption;
  const what = [
    report.records === undefined ? undefined : `${report.records.toLocaleString('en-US')} records`,
    `${report.runs.length} runs`,
    report.date,
    report.commit === undefined
      ? undefined
      : `commit ${report.commit.slice(0, 7)}${report.commit.endsWith('+changes') ? '+changes' : ''}`,
    report.postgres === undefined ? undefined : `PostgreSQL ${report.postgres}`,
    report.node === undefined ? undefined : `node ${report.node}`,
  ];
  return `npm run bench: ${what.filter((w) => w !== undefined).join(', ')}`;
}

async function main(): Promise<void> {
  const [input, output = 'docs/bench.svg'] = process.argv.slice(2);
  if (input === undefined) throw new Error('usage: node dist/bench/plot.js REPORT.json [OUT.svg]');
  const report = JSON.parse(await readFile(input, 'utf8')) as SavedReport;
  await mkdir(dirname(output), { recursive: true });
  await writeFile(output, renderBenchSvg({ caption: captionOf(report), runs: report.runs }));
  process.stdout.write(`written to ${output}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
