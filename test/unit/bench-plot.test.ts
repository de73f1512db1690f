/**
 * The bench's SVG plot (bench/plot.ts): drawn from a fixed set of runs, it is well-formed XML with
 * one bar, one floor tick and one target tick per measurement and run, and says what it shows.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderBenchSvg, type PlotRun } from '../../bench/plot.js';
import { NAMES } from '../../bench/report.js';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * Three runs, seconds in NAMES order; run 3's first load misses its target (2.0× its floor), the
 * first loads with new fields (1.25× the first load) and the re-syncs (0.9× and 1.2×) meet theirs.
 */
const RUNS: PlotRun[] = [
  { floorSeconds: 4, syncs: sync([7.9, 9.5, 3.5, 4.7, 8, 2.5]) },
  { floorSeconds: 4.2, syncs: sync([8.1, 9.0, 3.7, 5.0, 8.2, 2.6]) },
  { label: 'slow <run> & co', floorSeconds: 3.9, syncs: sync([12.5, 14.0, 3.4, 4.6, 8.4, 2.4]) },
];

function sync(seconds: number[]): PlotRun['syncs'] {
  return Object.values(NAMES).map((name, i) => ({ name, seconds: seconds[i]! }));
}

/**
 * A small well-formedness check: one root, every tag closed in order, attributes quoted, no raw
 * `<` or stray `&` in text or attribute values.
 */
function wellFormedXml(xml: string): { ok: true; root: string } | { ok: false; why: string } {
  const body = xml.replace(/^<\?xml [^?]*\?>\s*/, '');
  const stack: string[] = [];
  let root: string | undefined;
  let at = 0;
  const badText = (text: string) => /<|&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/.test(text);
  for (const m of body.matchAll(/<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"]*")*)\s*(\/?)>/g)) {
    const between = body.slice(at, m.index);
    if (badText(between)) return { ok: false, why: `bad text before offset ${m.index}: ${between.slice(0, 60)}` };
    if (stack.length === 0 && root !== undefined && between.trim() !== '')
      return { ok: false, why: 'text after the root' };
    at = m.index + m[0].length;
    const [, closing, name, attributes, selfClosing] = m;
    for (const a of attributes!.matchAll(/="([^"]*)"/g))
      if (badText(a[1]!)) return { ok: false, why: `bad attribute value in <${name}>` };
    if (closing) {
      if (stack.pop() !== name)
        return { ok: false, why: `</${name}> does not close the open tag at offset ${m.index}` };
    } else {
      if (stack.length === 0) {
        if (root !== undefined) return { ok: false, why: 'a second root element' };
        root = name;
      }
      if (!selfClosing) stack.push(name!);
    }
  }
  const rest = body.slice(at);
  if (rest.includes('<') || rest.trim() !== '') return { ok: false, why: `not a tag: ${rest.slice(0, 60)}` };
  if (stack.length > 0) return { ok: false, why: `unclosed <${stack.join('>, <')}>` };
  if (root === undefined) return { ok: false, why: 'no element' };
  // Every `<` must have been a tag the pattern above accepted.
  if (
    (body.match(/</g) ?? []).length !==
    [...body.matchAll(/<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"]*")*)\s*(\/?)>/g)].length
  ) {
    return { ok: false, why: 'a malformed tag' };
  }
  return { ok: true, root };
}

const count = (svg: string, cls: string) => (svg.match(new RegExp(`class="${cls}"`, 'g')) ?? []).length;

describe('the bench plot', () => {
  const svg = renderBenchSvg({ caption: 'fixed runs for the test\nsecond line', runs: RUNS });

  it('is well-formed XML with an svg root', () => {
    expect(wellFormedXml(svg)).toEqual({ ok: true, root: 'svg' });
    expect(svg).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" /);
  });

  it('passes xmllint when it is installed', () => {
    if (spawnSync('xmllint', ['--version']).status !== 0) return;
    const lint = spawnSync('xmllint', ['--noout', '-'], { input: svg, encoding: 'utf8' });
    expect(lint.stderr).toBe('');
    expect(lint.status).toBe(0);
  });

  it('draws a bar, a floor tick and a target tick per measurement and run', () => {
    const marks = Object.keys(NAMES).length * RUNS.length;
    expect(count(svg, 'run')).toBe(marks);
    expect(count(svg, 'floor')).toBe(marks);
    expect(count(svg, 'target')).toBe(marks);
    expect(count(svg, 'line-label')).toBe(Object.keys(NAMES).length);
  });

  it('labels the axis, the targets and the runs, escaping text', () => {
    expect(svg).toContain('wall time, seconds');
    expect(svg).toContain('target ≤ 2.0× floor');
    expect(svg).toContain('target ≤ 0.9× floor');
    expect(svg).toContain('target ≤ 1.2× floor');
    expect(svg).toContain('target ≤ 2.0× first load');
    expect(svg).toContain('target ≤ 1.25× first load');
    expect(svg).toContain('>run 1<');
    expect(svg).toContain('slow &lt;run&gt; &amp; co');
    expect(svg).toContain('>second line<');
  });

  it('marks a missed target: the slow first load, and nothing else', () => {
    const bars = [...svg.matchAll(/<rect class="run"[^>]*fill="([^"]+)"><title>([^<]*)<\/title>/g)];
    const missed = bars.filter((b) => b[2]!.includes('(missed)'));
    expect(missed.map((b) => b[2]!.split(',')[0])).toEqual([NAMES.first]);
    const metColours = new Set(bars.filter((b) => b[2]!.includes('(met)')).map((b) => b[1]));
    expect(metColours.size).toBe(1);
    expect(metColours.has(missed[0]![1])).toBe(false);
  });

  it('draws a report from before a measurement existed without it (no new-fields first load)', () => {
    const older = RUNS.map((run) => ({ ...run, syncs: run.syncs.filter((s) => s.name !== NAMES.newFields) }));
    const old = renderBenchSvg({ caption: 'an older report', runs: older });
    const measured = Object.values(NAMES).filter((name) => name !== NAMES.newFields);
    expect(wellFormedXml(old)).toEqual({ ok: true, root: 'svg' });
    expect(count(old, 'line-label')).toBe(measured.length);
    expect(count(old, 'run')).toBe(measured.length * older.length);
    expect(old).not.toContain(NAMES.newFields);
  });

  it('rejects what is not well-formed (the check itself)', () => {
    expect(wellFormedXml('<svg><g></svg>').ok).toBe(false);
    expect(wellFormedXml('<svg><text>a < b</text></svg>').ok).toBe(false);
    expect(wellFormedXml('<svg><text>a & b</text></svg>').ok).toBe(false);
    expect(wellFormedXml('<svg x=1></svg>').ok).toBe(false);
    expect(wellFormedXml('<svg/><svg/>').ok).toBe(false);
  });

  it('in docs/ is well-formed too', () => {
    const saved = readFileSync(join(ROOT, 'docs', 'bench.svg'), 'utf8');
    expect(wellFormedXml(saved)).toEqual({ ok: true, root: 'svg' });
    expect(count(saved, 'run')).toBeGreaterThan(0);
  });
});
