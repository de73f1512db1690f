/**
 * The measured figures come from one saved bench run, bench/fixtures/readme-bench.json: every
 * ratio, floor and memory range docs/performance.md's "Current results" quotes is computed here
 * from that file, the README's headline too, and docs/bench.svg is what the documented command
 * (`node dist/bench/plot.js bench/fixtures/readme-bench.json docs/bench.svg`) draws from it. The
 * bench's writer refuses a fixture from a dirty checkout (fixtureRefusal).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { captionOf, renderBenchSvg } from '../../bench/plot.js';
import { fixtureRefusal, NAMES, type BenchRun } from '../../bench/report.js';

const ROOT = join(import.meta.dirname, '..', '..');
const FIXTURE = 'bench/fixtures/readme-bench.json';

interface Report {
  date: string;
  commit?: string;
  machine?: string;
  records: number;
  postgres: string;
  node: string;
  runs: BenchRun[];
  scale?: { ratios: { time: number } };
}

const report = JSON.parse(readFileSync(join(ROOT, FIXTURE), 'utf8')) as Report;
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const performancePage = readFileSync(join(ROOT, 'docs', 'performance.md'), 'utf8');
/** The section of a markdown text that a `## ` heading opens. */
const section = (text: string, heading: string) =>
  text.slice(text.indexOf(`\n## ${heading}\n`), text.indexOf('\n## ', text.indexOf(`\n## ${heading}\n`) + 1));
const performanceSection = section(performancePage, 'Current results');
const readmeHeadline = section(readme, 'Performance');

const seconds = (run: BenchRun, name: string) => {
  const sync = run.syncs.find((s) => s.name === name);
  if (sync === undefined) throw new Error(`${FIXTURE}: a run without "${name}"`);
  return sync.seconds;
};
const range = (values: number[], digits: number) => {
  const [lo, hi] = [Math.min(...values).toFixed(digits), Math.max(...values).toFixed(digits)];
  return lo === hi ? lo : `${lo}–${hi}`;
};

/** The figures the README quotes, each as it writes it. */
function readmeFigures(r: Report): Record<string, string> {
  const toFloor = (name: string) =>
    `${range(
      r.runs.map((run) => seconds(run, name) / run.floorSeconds),
      2,
    )}×`;
  return {
    floor: `${range(
      r.runs.map((run) => run.floorSeconds),
      2,
    )} s`,
    'first load': toFloor(NAMES.first),
    'unchanged re-sync': toFloor(NAMES.unchanged),
    '1% changed': toFloor(NAMES.changed),
    'new fields': `${range(
      r.runs.map((run) => seconds(run, NAMES.newFields) / seconds(run, NAMES.first)),
      2,
    )}×`,
    'peak RSS': `${range(
      r.runs.map((run) => Math.max(...run.syncs.map((s) => s.maxRssMb ?? 0))),
      0,
    )} MB`,
    ...(r.scale ? { '10M check': `${r.scale.ratios.time.toFixed(2)}×` } : {}),
  };
}

describe(`the performance figures (${FIXTURE})`, () => {
  it('the fixture is a whole bench report: its commit, machine and three runs', () => {
    expect(report.commit).toMatch(/^[0-9a-f]{40}/);
    expect(report.machine).toBeTruthy();
    expect(report.runs).toHaveLength(3);
  });

  for (const [what, figure] of Object.entries(readmeFigures(report))) {
    it(`quotes the ${what}: ${figure}`, () => {
      // The results table gives floors and memory without their unit, in its header.
      expect(performanceSection).toContain(figure.replace(/ (s|MB)$/, ''));
    });
  }

  it('names the commit measured as the fixture records it', () => {
    const dirty = report.commit!.endsWith('+changes');
    expect(performanceSection).toContain(`${report.commit!.slice(0, 7)}${dirty ? '+changes' : ''}`);
  });

  it("the README's headline: the unchanged re-sync and the first load against the floor, from the same file", () => {
    const figures = readmeFigures(report);
    expect(readmeHeadline).toContain(`an unchanged re-sync takes ${figures['unchanged re-sync']}`);
    expect(readmeHeadline).toContain(`a first load ${figures['first load']}`);
    expect(readmeHeadline).toContain(`${report.records.toLocaleString('en')} records`);
    expect(readmeHeadline).toContain(`(${report.runs.length} runs)`);
    // The headline only: no other figure of the fixture, no plot, in the README.
    for (const [what, figure] of Object.entries(figures)) {
      if (what !== 'unchanged re-sync' && what !== 'first load') expect(readme, what).not.toContain(figure);
    }
  });

  it('shows the plot the documented command draws from the fixture', () => {
    const drawn = renderBenchSvg({ caption: captionOf(report), runs: report.runs });
    expect(readFileSync(join(ROOT, 'docs', 'bench.svg'), 'utf8')).toBe(drawn);
    expect(performancePage).toContain('(bench.svg)');
  });

  it("the bench's writer refuses a fixture from uncommitted code, and only a fixture", () => {
    const root = '/src/wrs';
    const fixture = `${root}/bench/fixtures/readme-bench.json`;
    expect(fixtureRefusal(fixture, root, 'a'.repeat(40) + '+changes')).toMatch(/uncommitted changes/);
    expect(fixtureRefusal(fixture, root, undefined)).toMatch(/not a git checkout/);
    expect(fixtureRefusal(fixture, root, 'a'.repeat(40))).toBeUndefined();
    expect(
      fixtureRefusal(`${root}/bench/results/bench-1000000.json`, root, 'a'.repeat(40) + '+changes'),
    ).toBeUndefined();
  });

  it('the ranges are computed as written (the check itself)', () => {
    expect(range([0.684, 0.75, 0.7], 2)).toBe('0.68–0.75');
    expect(range([166.2, 211.4], 0)).toBe('166–211');
    expect(range([1.234], 2)).toBe('1.23');
  });
});
