/** package.json's `engines` names exactly the Node.js majors CI runs the tests on (.ci/run). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines
  .node;
const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');

/** The majors of a range such as `^20.19.0 || ^24.0.0`, each one `^M.m.p` (a whole major line). */
const majors = (range: string) =>
  range.split('||').map((part) => {
    const m = /^\s*\^(\d+)\.\d+\.\d+\s*$/.exec(part);
    if (!m) throw new Error(`engines.node: "${part.trim()}" is not a ^M.m.p range`);
    return Number(m[1]);
  });

describe('engines.node', () => {
  it("names the majors of .ci/run: those it fetches (node_dir N) and the machine's own (smoke set)", () => {
    const fetched = [...ci.matchAll(/^\w+=\$\(node_dir (\d+)\)$/gm)].map((m) => Number(m[1]));
    const machine = /on the machine's end-of-life Node\.js (\d+)\b/.exec(ci.replace(/\n#\s*/g, ' '));
    expect(fetched.length).toBeGreaterThan(0);
    expect(machine, ".ci/run's header names the machine's Node.js major").not.toBeNull();
    const tested = [...new Set([...fetched, Number(machine![1])])].sort((a, b) => a - b);
    expect(majors(engines).sort((a, b) => a - b)).toEqual(tested);
  });

  it('admits the Node.js running this test', () => {
    expect(majors(engines)).toContain(Number(process.versions.node.split('.')[0]));
  });
});
