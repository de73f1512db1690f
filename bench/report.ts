/** The benchmark's verdicts and its printed summary: per run, then the minimum and median over runs. */
import type { Floor } from './floor.js';
import type { SyncMeasure } from './sync-runner.js';

export interface BenchRun {
  /** The machine's 1-minute load average when the run began; absent in reports older than it. */
  loadAverage?: number;
  floorBefore: Floor;
  floorAfter: Floor;
  /** The floor of the new-fields listing (its rows with extra_fields); absent in reports older than it. */
  newFieldsFloor?: Floor;
  /** The better of the two floors: the run's ratios are to this. */
  floorSeconds: number;
  syncs: SyncMeasure[];
  gzipRequested: boolean;
  /**
   * Rows of the run's first loads (plain and with new fields) that differ from their floor's rows (extra_fields
   * included).
   */
  rowsDifferingFromFloor: number;
  /** Rows of the new-fields first load whose extra_fields lacks either new field (0: both kept in every row). */
  rowsWithoutNewFields: number;
  targets: Record<string, boolean>;
}

export const NAMES = {
  first: 'first load',
  newFields: 'first load, 2 new fields per record',
  unchanged: 'unchanged re-sync',
  changed: '1% changed re-sync',
  renamed: 'all rejected: id renamed to record_id',
  empty: 'all rejected: 2x empty objects',
} as const;

/**
 * The wall-time target of each measurement: at most `ratio` × the run's floor, or × the run's first
 * load. On 1M realistic records, in three consecutive runs: keeping two unknown members of every
 * record costs at most a quarter of a first load; the unchanged re-sync at 0.9×, so that a noisy run
 * does not carry it over 1.0× (the floor itself).
 */
export const WALL_TARGETS: Record<string, { ratio: number; of: 'floor' | 'first load' }> = {
  [NAMES.first]: { ratio: 2.0, of: 'floor' },
  [NAMES.newFields]: { ratio: 1.25, of: 'first load' },
  [NAMES.unchanged]: { ratio: 0.9, of: 'floor' },
  [NAMES.changed]: { ratio: 1.2, of: 'floor' },
  [NAMES.renamed]: { ratio: 2, of: 'first load' },
  [NAMES.empty]: { ratio: 2, of: 'first load' },
};

/** Peak RSS of every sync of a run, and of the large listing's replay (scale check). */
export const RSS_LIMIT_MB = 250;

/** How many consecutive runs must all meet the targets. */
export const RUNS_REQUIRED = 3;

/** The wall time a measurement may take in a run, or undefined when the run lacks what it is relative to. */
export function wallTarget(
  run: { floorSeconds: number; syncs: Array<{ name: string; seconds: number }> },
  name: string,
): number | undefined {
  const target = WALL_TARGETS[name];
  if (target === undefined) return undefined;
  const base = target.of === 'floor' ? run.floorSeconds : run.syncs.find((s) => s.name === NAMES.first)?.seconds;
  return base === undefined ? undefined : target.ratio * base;
}

/** A target's ratio as written: `2.0`, `1.2`, `1.25` (one decimal would round 1.25 to 1.3). */
export const ratioText = (ratio: number) => ratio.toFixed(Number.isInteger(ratio * 10) ? 1 : 2);

/** `first load <= 2.0x floor`: the verdict's name, from WALL_TARGETS so that it says the threshold judged. */
const wallVerdict = (name: string, label = name) =>
  `${label} <= ${ratioText(WALL_TARGETS[name]!.ratio)}x ${WALL_TARGETS[name]!.of}`;

export function judge(run: Omit<BenchRun, 'targets'>): Record<string, boolean> {
  const by = (name: string) => run.syncs.find((s) => s.name === name)!;
  const within = (name: string) => by(name).seconds <= wallTarget(run, name)!;
  return {
    [wallVerdict(NAMES.first)]: within(NAMES.first),
    [wallVerdict(NAMES.newFields)]: within(NAMES.newFields),
    [wallVerdict(NAMES.unchanged)]: within(NAMES.unchanged),
    'unchanged re-sync WAL < 5 MB': by(NAMES.unchanged).walMb < 5,
    'unchanged re-sync writes <= 100 rows': by(NAMES.unchanged).tuplesWritten <= 100,
    [wallVerdict(NAMES.changed, '1% changed')]: within(NAMES.changed),
    [`peak RSS <= ${RSS_LIMIT_MB} MB (every sync)`]: run.syncs.every((s) => (s.maxRssMb ?? Infinity) <= RSS_LIMIT_MB),
    [wallVerdict(NAMES.renamed, 'all-rejected')]: within(NAMES.renamed) && within(NAMES.empty),
    'sync asked for gzip': run.gzipRequested,
    'loaded rows identical to the floor rows': run.rowsDifferingFromFloor === 0,
    // A load that dropped the new fields would be fast for nothing.
    'new fields kept in extra_fields (every row)': run.rowsWithoutNewFields === 0,
  };
}

/**
 * The large-listing check's targets: the large listing's first load (`run --from-file`) against
 * the reference listing's, measured the same way in the same bench, and the replay of each run's
 * archived listing (an unchanged re-sync). The time may grow 1.1 × the size ratio (11× for 10M
 * records against 1M), the memory at most 1.3×.
 */
export const SCALE_TARGETS = {
  /** Large first load's wall time ≤ this × (large / reference records) × the reference's. */
  timePerSize: 1.1,
  /** Large first load's peak RSS ≤ this × the reference's. */
  rss: 1.3,
  /** Large replay's peak RSS ≤ this × the reference replay's, and ≤ RSS_LIMIT_MB. */
  replayRss: 1.3,
} as const;

/** What the scale verdicts need of each measured sync. */
export interface ScaleMeasure {
  seconds: number;
  maxRssMb: number | undefined;
  status: string;
  counts: Record<string, number | null>;
}

export interface ScaleInput {
  reference: { records: number; rows: number; load: ScaleMeasure; replay: ScaleMeasure };
  large: { records: number; rows: number; load: ScaleMeasure; replay: ScaleMeasure };
}

export interface ScaleVerdicts {
  /** Large / reference: the first loads' wall time and peak RSS, the replays' peak RSS. */
  ratios: { size: number; time: number; rss: number; replayRss: number };
  /** The limits those ratios are judged against (the time's scales with the size). */
  limits: { time: number; rss: number; replayRss: number; replayRssMb: number };
  /** Each verdict by a name that says its threshold (the same in every run of the bench). */
  targets: Record<string, boolean>;
  /** What was measured for each verdict, by the same names. */
  measured: Record<string, string>;
}

export function judgeScale({ reference, large }: ScaleInput): ScaleVerdicts {
  const rss = (m: ScaleMeasure) => m.maxRssMb ?? Infinity;
  const size = large.records / reference.records;
  const ratios = {
    size,
    time: large.load.seconds / reference.load.seconds,
    rss: rss(large.load) / rss(reference.load),
    replayRss: rss(large.replay) / rss(reference.replay),
  };
  const limits = {
    time: SCALE_TARGETS.timePerSize * size,
    rss: SCALE_TARGETS.rss,
    replayRss: SCALE_TARGETS.replayRss,
    replayRssMb: RSS_LIMIT_MB,
  };
  const loaded = (l: ScaleInput['large']) => l.load.status === 'succeeded' && l.load.counts.inserted === l.rows;
  const replayed = (l: ScaleInput['large']) => l.replay.status === 'succeeded' && l.replay.counts.unchanged === l.rows;
  const counted = (m: ScaleMeasure, count: string) => `${m.status}, ${m.counts[count] ?? '-'} ${count}`;
  const [r, L] = [reference.records, large.records];
  const s = (m: ScaleMeasure) => `${f(m.seconds)} s`;
  const mb = (m: ScaleMeasure) => `${f(m.maxRssMb, 0)} MB`;
  const verdicts: Array<[name: string, ok: boolean, measured: string]> = [
    [
      `first loads (run --from-file) of ${r} and ${L} records succeeded, every row inserted`,
      loaded(reference) && loaded(large),
      `${counted(reference.load, 'inserted')} of ${reference.rows}; ` +
        `${counted(large.load, 'inserted')} of ${large.rows}`,
    ],
    [
      `${L}-record first load time <= ${f(limits.time, 1)}x the ${r}-record one's`,
      ratios.time <= limits.time,
      `${f(ratios.time)}x: ${s(large.load)} against ${s(reference.load)}`,
    ],
    [
      `${L}-record first load peak RSS <= ${f(limits.rss, 1)}x the ${r}-record one's`,
      ratios.rss <= limits.rss,
      `${f(ratios.rss)}x: ${mb(large.load)} against ${mb(reference.load)}`,
    ],
    [
      'replays (replay --run) of both runs succeeded, every row unchanged',
      replayed(reference) && replayed(large),
      `${counted(reference.replay, 'unchanged')} of ${reference.rows}; ` +
        `${counted(large.replay, 'unchanged')} of ${large.rows}`,
    ],
    [`${L}-record replay peak RSS <= ${RSS_LIMIT_MB} MB`, rss(large.replay) <= RSS_LIMIT_MB, mb(large.replay)],
    [
      `${L}-record replay peak RSS <= ${f(limits.replayRss, 1)}x the ${r}-record replay's`,
      ratios.replayRss <= limits.replayRss,
      `${f(ratios.replayRss)}x: ${mb(large.replay)} against ${mb(reference.replay)}`,
    ],
  ];
  return {
    ratios,
    limits,
    targets: Object.fromEntries(verdicts.map(([name, ok]) => [name, ok])),
    measured: Object.fromEntries(verdicts.map(([name, , measured]) => [name, measured])),
  };
}

/** The printed verdicts of the scale check, each with what was measured. */
export function scaleTargetLines(v: Pick<ScaleVerdicts, 'targets' | 'measured'>): string[] {
  return Object.entries(v.targets).map(([name, ok]) => `${ok ? 'met   ' : 'MISSED'} ${name} (${v.measured[name]})`);
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

/** `1 of 10008` (medians), or `-` for reports older than the count. */
function hotOf(ms: SyncMeasure[]): string {
  const known = ms.filter((m) => m.updates !== undefined && m.hotUpdates !== undefined);
  if (known.length === 0) return '-';
  return `${f(median(known.map((m) => m.hotUpdates!)), 0)} of ${f(median(known.map((m) => m.updates!)), 0)}`;
}

export function summaryTable(runs: BenchRun[]): string {
  const floors = runs.map((r) => r.floorSeconds);
  const downloads = runs.map((r) => Math.min(r.floorBefore.downloadSeconds, r.floorAfter.downloadSeconds));
  const copies = runs.map((r) => Math.min(r.floorBefore.copySeconds, r.floorAfter.copySeconds));
  const lines = [
    `| measurement (${runs.length} runs) | wall s min / median | × floor min / median | ` +
      'Node CPU s min / median | PostgreSQL CPU s min / median | peak RSS MB min / median | WAL MB min / median | ' +
      "rows written median | HOT of the data table's updates, median |",
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| floor (${runs[0]!.floorBefore.tools}) | ${range(floors)} | 1.00 | - | - | - | - | - | - |`,
    `| floor: download | ${range(downloads)} | - | - | - | - | - | - | - |`,
    `| floor: \\copy into a table with a primary key | ${range(copies)} | - | - | - | - | - | - | - |`,
  ];
  for (const name of Object.values(NAMES)) {
    // Over the runs that took it: a report from before a measurement existed lacks it.
    const ms = runs.flatMap((r) => r.syncs.filter((s) => s.name === name).map((m) => ({ m, floor: r.floorSeconds })));
    if (ms.length === 0) continue;
    lines.push(
      `| ${name} | ${range(ms.map((x) => x.m.seconds))} | ${range(ms.map((x) => x.m.seconds / x.floor))} | ` +
        `${cpuRange(ms.map((x) => cpuOf(x.m.nodeCpu)))} | ${cpuRange(ms.map((x) => cpuOf(x.m.pgCpu)))} | ` +
        `${range(
          ms.map((x) => x.m.maxRssMb ?? NaN),
          0,
        )} | ${range(
          ms.map((x) => x.m.walMb),
          1,
        )} | ${f(median(ms.map((x) => x.m.tuplesWritten)), 0)} | ${hotOf(ms.map((x) => x.m))} |`,
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
    '| measurement | run | wall s | steps summed s | of which overlapping s | steps that overlapped (s) | ' +
      'Node CPU s (user + sys) | PostgreSQL CPU s (user + sys, backends) |',
    '|---|---:|---:|---:|---:|---|---:|---:|',
  ];
  for (const name of Object.values(NAMES)) {
    runs.forEach((r, i) => {
      const m = r.syncs.find((s) => s.name === name);
      if (m === undefined) return;
      const pairs = m.overlap.pairs.filter((p) => p.seconds >= 0.01).slice(0, 3);
      const node = m.nodeCpu ? `${f(cpuOf(m.nodeCpu), 1)} (${f(m.nodeCpu.user, 1)} + ${f(m.nodeCpu.system, 1)})` : '-';
      const pg = m.pgCpu
        ? `${f(cpuOf(m.pgCpu), 1)} (${f(m.pgCpu.user, 1)} + ${f(m.pgCpu.system, 1)}, ${m.pgCpu.backends.length})`
        : 'n/a';
      const overlapped =
        pairs.length === 0 ? '-' : pairs.map((p) => `${p.steps.join(' ∥ ')} ${f(p.seconds)}`).join('; ');
      lines.push(
        `| ${name} | ${i + 1} | ${f(m.seconds)} | ${f(m.overlap.stepsSeconds)} | ${f(m.overlap.overlapSeconds)} | ` +
          `${overlapped} | ${node} | ${pg} |`,
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

/**
 * What the run's profile (its `profile` phase, sync_runs.phases) cost in each measurement, and its
 * share of the run's wall time: median and range over the runs.
 * `unchanged re-sync: profile 4 ms (0.2% of the run; 3-6 ms, 0.1-0.3% over 3 runs)`.
 */
export function profileShareLines(runs: BenchRun[]): string[] {
  return [NAMES.first, NAMES.unchanged, NAMES.changed].flatMap((name) => {
    const ms: number[] = [];
    const shares: number[] = [];
    for (const r of runs) {
      const m = r.syncs.find((s) => s.name === name);
      const profile = m?.phasesMs?.profile;
      if (m === undefined || profile === undefined || !Number.isFinite(m.seconds)) continue;
      ms.push(profile);
      shares.push((100 * profile) / (m.seconds * 1000));
    }
    if (ms.length === 0) return [];
    const range = (xs: number[], digits: number) =>
      `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`;
    return [
      `${name}: profile ${median(ms).toFixed(0)} ms (${median(shares).toFixed(1)}% of the run; ` +
        `${range(ms, 0)} ms, ${range(shares, 1)}% over ${ms.length} run${ms.length === 1 ? '' : 's'})`,
    ];
  });
}

/**
 * Each measurement whose target is relative to the first load, as that ratio per run (the tables
 * give ratios to the floor): `first load, 2 new fields per record: 1.08x, 1.12x the run's first load (target <=
 * 1.25x)`.
 */
export function firstLoadRatioLines(runs: BenchRun[]): string[] {
  return Object.values(NAMES).flatMap((name) => {
    if (WALL_TARGETS[name]?.of !== 'first load') return [];
    const ratios = runs.flatMap((r) => {
      const [m, first] = [name, NAMES.first].map((n) => r.syncs.find((s) => s.name === n));
      return m && first ? [`${f(m.seconds / first.seconds)}x`] : [];
    });
    if (ratios.length === 0) return [];
    const line =
      `${name}: ${ratios.join(', ')} the run's first load ` + `(target <= ${ratioText(WALL_TARGETS[name].ratio)}x)`;
    if (name !== NAMES.newFields) return [line];
    // The same ratio for a C client: what the larger listing and its jsonb values cost at the least.
    const floors = runs.flatMap((r) =>
      r.newFieldsFloor ? [`${f(r.newFieldsFloor.seconds / r.floorBefore.seconds)}x`] : [],
    );
    return floors.length === 0
      ? [line]
      : [
          line,
          '  its floor (curl --compressed + psql \\copy of its rows, extra_fields included): ' +
            `${floors.join(', ')} the run's floor before`,
        ];
  });
}

export function targetLines(runs: BenchRun[]): string[] {
  const names = Object.keys(runs[0]!.targets);
  const lines = names.map((t) => {
    const met = runs.filter((r) => r.targets[t]).length;
    return `${met === runs.length ? 'met   ' : 'MISSED'} ${t} (${met} of ${runs.length} runs)`;
  });
  if (runs.length < RUNS_REQUIRED) {
    lines.push(
      `note: the targets ask for ${RUNS_REQUIRED} consecutive runs that all meet them; this bench made ${runs.length}`,
    );
  }
  const shared = runs.map((r) => r.syncs.find((s) => s.name === NAMES.unchanged)!.otherTuples).filter((n) => n > 0);
  if (shared.length > 0) {
    lines.push(
      `note: other databases of this cluster wrote rows during ${shared.length} unchanged re-sync(s) ` +
        `(up to ${Math.max(...shared)}): their WAL is in the WAL figure`,
    );
  }
  return lines;
}

/**
 * Why a report may not be written to `out`, or undefined when it may: a fixture under
 * bench/fixtures/ is what the docs quote, so it must name a commit that holds the code it measured,
 * never `<commit>+changes` (a dirty checkout) or no commit at all.
 */
export function fixtureRefusal(out: string, packageRoot: string, commit: string | undefined): string | undefined {
  const fixtures = `${packageRoot.replace(/\/+$/, '')}/bench/fixtures/`;
  if (!out.startsWith(fixtures)) return undefined;
  if (commit === undefined) return `refusing to write ${out}: not a git checkout, so the fixture could name no commit`;
  if (commit.endsWith('+changes')) {
    return `refusing to write ${out}: the checkout has uncommitted changes (git status); commit them, then bench`;
  }
  return undefined;
}
