/** The benchmark's verdicts and its printed summary: per run, then the minimum and median over runs. */
import type { Floor } from './floor.js';
import type { SyncMeasure } from './sync-runner.js';

export interface BenchRun {
  floorBefore: Floor;
  floorAfter: Floor;
  /** The better of the two floors: the run's ratios are to this. */
  floorSeconds: number;
  syncs: SyncMeasure[];
  gzipRequested: boolean;
  rowsDifferingFromFloor: number;
  targets: Record<string, boolean>;
}

export const NAMES = {
  first: 'first load',
  unchanged: 'unchanged re-sync',
  changed: '1% changed re-sync',
  renamed: 'all rejected: id renamed to record_id',
  empty: 'all rejected: 2x empty objects',
} as const;

/** The wall-time target of each measurement: at most `ratio` × the run's floor, or × the run's first load. */
export const WALL_TARGETS: Record<string, { ratio: number; of: 'floor' | 'first load' }> = {
  [NAMES.first]: { ratio: 2.0, of: 'floor' },
  [NAMES.unchanged]: { ratio: 1.5, of: 'floor' },
  [NAMES.changed]: { ratio: 1.5, of: 'floor' },
  [NAMES.renamed]: { ratio: 2, of: 'first load' },
  [NAMES.empty]: { ratio: 2, of: 'first load' },
};

/** The wall time a measurement may take in a run, or undefined when the run lacks what it is relative to. */
export function wallTarget(run: { floorSeconds: number; syncs: Array<{ name: string; seconds: number }> }, name: string): number | undefined {
  const target = WALL_TARGETS[name];
  if (target === undefined) return undefined;
  const base = target.of === 'floor' ? run.floorSeconds : run.syncs.find((s) => s.name === NAMES.first)?.seconds;
  return base === undefined ? undefined : target.ratio * base;
}

export function judge(run: Omit<BenchRun, 'targets'>): Record<string, boolean> {
  const by = (name: string) => run.syncs.find((s) => s.name === name)!;
  const within = (name: string) => by(name).seconds <= wallTarget(run, name)!;
  return {
    'first load <= 2.0x floor': within(NAMES.first),
    'unchanged re-sync <= 1.5x floor': within(NAMES.unchanged),
    'unchanged re-sync WAL < 5 MB': by(NAMES.unchanged).walMb < 5,
    'unchanged re-sync writes <= 100 rows': by(NAMES.unchanged).tuplesWritten <= 100,
    '1% changed <= 1.5x floor': within(NAMES.changed),
    'peak RSS <= 250 MB': run.syncs.every((s) => (s.maxRssMb ?? Infinity) <= 250),
    'all-rejected <= 2x first load': within(NAMES.renamed) && within(NAMES.empty),
    'sync asked for gzip': run.gzipRequested,
    'loaded rows identical to the floor rows': run.rowsDifferingFromFloor === 0,
  };
}

export function min(values: number[]): number {
  return Math.min(...values);
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const f = (n: number | undefined, digits = 2) => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits));
const range = (values: number[], digits = 2) => `${f(min(values), digits)} / ${f(median(values), digits)}`;

/** User + system seconds; undefined when not measured. */
const cpuOf = (cpu: { user: number; system: number } | null | undefined) => (cpu ? cpu.user + cpu.system : undefined);
/** Min / median of the runs that measured it; `n/a` when none could (PostgreSQL not on this machine). */
function cpuRange(values: Array<number | undefined>): string {
  const measured = values.filter((v): v is number => v !== undefined);
  return measured.length === 0 ? 'n/a' : range(measured, 1);
}

export function summaryTable(runs: BenchRun[]): string {
  const lines = [
    `| measurement (${runs.length} runs) | wall s min / median | × floor min / median | Node CPU s min / median | PostgreSQL CPU s min / median | peak RSS MB min / median | WAL MB min / median | rows written median |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    `| floor (${runs[0]!.floorBefore.tools}) | ${range(runs.map((r) => r.floorSeconds))} | 1.00 | - | - | - | - | - |`,
    `| floor: download | ${range(runs.map((r) => Math.min(r.floorBefore.downloadSeconds, r.floorAfter.downloadSeconds)))} | - | - | - | - | - | - |`,
    `| floor: \\copy into a table with a primary key | ${range(runs.map((r) => Math.min(r.floorBefore.copySeconds, r.floorAfter.copySeconds)))} | - | - | - | - | - | - |`,
  ];
  for (const name of Object.values(NAMES)) {
    const ms = runs.map((r) => ({ m: r.syncs.find((s) => s.name === name)!, floor: r.floorSeconds }));
    lines.push(
      `| ${name} | ${range(ms.map((x) => x.m.seconds))} | ${range(ms.map((x) => x.m.seconds / x.floor))} | ${cpuRange(ms.map((x) => cpuOf(x.m.nodeCpu)))} | ${cpuRange(ms.map((x) => cpuOf(x.m.pgCpu)))} | ${range(ms.map((x) => x.m.maxRssMb ?? NaN), 0)} | ${range(ms.map((x) => x.m.walMb), 1)} | ${f(median(ms.map((x) => x.m.tuplesWritten)), 0)} |`,
    );
  }
  return lines.join('\n');
}

/**
 * Per run, where the wall time went: the steps summed (more than the wall time when they overlap),
 * how much of them ran beside another step and which, and the CPU of Node and of the PostgreSQL
 * backends (n/a when the server is not on this machine).
 */
export function timeTable(runs: BenchRun[]): string {
  const lines = [
    '| measurement | run | wall s | steps summed s | of which overlapping s | steps that overlapped (s) | Node CPU s (user + sys) | PostgreSQL CPU s (user + sys, backends) |',
    '|---|---:|---:|---:|---:|---|---:|---:|',
  ];
  for (const name of Object.values(NAMES)) {
    runs.forEach((r, i) => {
      const m = r.syncs.find((s) => s.name === name);
      if (m === undefined) return;
      const pairs = m.overlap.pairs.filter((p) => p.seconds >= 0.01).slice(0, 3);
      const node = m.nodeCpu ? `${f(cpuOf(m.nodeCpu), 1)} (${f(m.nodeCpu.user, 1)} + ${f(m.nodeCpu.system, 1)})` : '-';
      const pg = m.pgCpu ? `${f(cpuOf(m.pgCpu), 1)} (${f(m.pgCpu.user, 1)} + ${f(m.pgCpu.system, 1)}, ${m.pgCpu.backends.length})` : 'n/a';
      lines.push(
        `| ${name} | ${i + 1} | ${f(m.seconds)} | ${f(m.overlap.stepsSeconds)} | ${f(m.overlap.overlapSeconds)} | ${pairs.length === 0 ? '-' : pairs.map((p) => `${p.steps.join(' ∥ ')} ${f(p.seconds)}`).join('; ')} | ${node} | ${pg} |`,
      );
    });
  }
  return lines.join('\n');
}

/** Median duration of each step of a measurement over the runs, in seconds. */
export function stepTable(runs: BenchRun[], name: string): string {
  const steps = new Map<string, number[]>();
  for (const r of runs) {
    const m = r.syncs.find((s) => s.name === name);
    for (const [step, ms] of Object.entries(m?.stepsMs ?? {})) steps.set(step, [...(steps.get(step) ?? []), ms / 1000]);
  }
  return `${name}: ${[...steps].map(([step, s]) => `${step} ${f(median(s))} s`).join('; ')}`;
}

export function targetLines(runs: BenchRun[]): string[] {
  const names = Object.keys(runs[0]!.targets);
  const lines = names.map((t) => {
    const met = runs.filter((r) => r.targets[t]).length;
    return `${met === runs.length ? 'met   ' : 'MISSED'} ${t} (${met} of ${runs.length} runs)`;
  });
  const shared = runs.map((r) => r.syncs.find((s) => s.name === NAMES.unchanged)!.otherTuples).filter((n) => n > 0);
  if (shared.length > 0) {
    lines.push(`note: other databases of this cluster wrote rows during ${shared.length} unchanged re-sync(s) (up to ${Math.max(...shared)}): their WAL is in the WAL figure`);
  }
  return lines;
}
