/**
 * Which steps of a run ran at the same time, from its debug log. Every line with `ms` closes a step
 * or a statement at its `time`, so it spans [time - ms, time]. A statement inside a step of the same
 * logger (`step`: extract, load) is part of it, as the statements of "changes applied" are; the
 * others are the run's steps. Time alone cannot say it: the shortcut's `copy_live_out` read, on a
 * connection of its own, runs inside the download ("listing ready", step extract) without being part
 * of it. The steps' durations summed, against the time they cover together, say how much of the
 * run overlapped. `sync finished` is the whole run as the process saw it, not a step.
 */

export interface Span {
  name: string;
  /** The logger's `step` (extract, load), if any. */
  step?: string;
  /** A statement line (`statement`), not a step's own line. */
  statement?: boolean;
  /** Milliseconds since the epoch, from the log line's `time`. */
  start: number;
  end: number;
}

export interface StepOverlap {
  /** The run's steps (spans inside no other), in the order they started. */
  steps: Span[];
  /** Their durations summed, ms. */
  sumMs: number;
  /** The time at least one of them ran, ms. */
  coveredMs: number;
  /** sumMs - coveredMs: step time that ran beside another step. */
  overlapMs: number;
  /** Pairs of steps that ran at once, and for how long, ms; longest first. */
  pairs: Array<{ steps: [string, string]; ms: number }>;
  /** From `sync finished`: the run from lock to audit row, ms; undefined without that line. */
  runMs: number | undefined;
}

/**
 * Log times are whole milliseconds, and `time` is taken a little after `ms` is: a statement ending with its step is
 * still inside it.
 */
const SLACK_MS = 2;

export function spansOf(stderr: string): Span[] {
  const spans: Span[] = [];
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { msg?: unknown; ms?: unknown; statement?: unknown; time?: unknown; step?: unknown };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof entry.ms !== 'number' || typeof entry.time !== 'number') continue;
    const statement = typeof entry.statement === 'string';
    const name = statement ? (entry.statement as string) : typeof entry.msg === 'string' ? entry.msg : undefined;
    if (name === undefined) continue;
    const step = typeof entry.step === 'string' ? entry.step : undefined;
    spans.push({
      name,
      ...(step === undefined ? {} : { step }),
      ...(statement ? { statement } : {}),
      start: entry.time - entry.ms,
      end: entry.time,
    });
  }
  return spans;
}

export function stepOverlap(all: Span[]): StepOverlap {
  const run = all.find((s) => s.name === 'sync finished');
  const spans = all.filter((s) => s !== run).sort((a, b) => a.start - b.start || b.end - a.end);
  const partOf = (s: Span, o: Span) =>
    s.statement === true &&
    o.statement !== true &&
    o.step === s.step &&
    o.start - SLACK_MS <= s.start &&
    s.start < o.end &&
    s.end <= o.end + SLACK_MS;
  const steps = spans.filter((s) => !spans.some((o) => o !== s && partOf(s, o)));
  const sumMs = steps.reduce((t, s) => t + (s.end - s.start), 0);
  let coveredMs = 0;
  let reach = -Infinity;
  for (const s of steps) {
    coveredMs += Math.max(0, s.end - Math.max(s.start, reach));
    reach = Math.max(reach, s.end);
  }
  const byPair = new Map<string, { steps: [string, string]; ms: number }>();
  steps.forEach((a, i) => {
    for (const b of steps.slice(i + 1)) {
      const ms = Math.min(a.end, b.end) - Math.max(a.start, b.start);
      if (ms <= SLACK_MS) continue; // steps one after the other, within the log's resolution
      const key = `${a.name}\u0000${b.name}`;
      const pair = byPair.get(key) ?? { steps: [a.name, b.name] as [string, string], ms: 0 };
      pair.ms += ms;
      byPair.set(key, pair);
    }
  });
  return {
    steps,
    sumMs,
    coveredMs,
    overlapMs: sumMs - coveredMs,
    pairs: [...byPair.values()].sort((a, b) => b.ms - a.ms),
    runMs: run === undefined ? undefined : run.end - run.start,
  };
}
