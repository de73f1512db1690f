/**
 * What `npm run bench` judges and reports: the performance targets (each a ratio to the
 * floor of the same run, the large-listing check's ratios to the reference listing), how the steps
 * of a run overlapped (from its debug log), the CPU of Node and of the PostgreSQL backends (from
 * /proc), and the tables that show them, `n/a` when the server's processes are not on this machine.
 */
import { describe, expect, it } from 'vitest';
import { parseProcStat, portsOfSockets } from '../../bench/backend-cpu.js';
import {
  firstLoadRatioLines,
  judge,
  judgeScale,
  NAMES,
  scaleTargetLines,
  summaryTable,
  targetLines,
  timeTable,
  type BenchRun,
  type ScaleInput,
  type ScaleMeasure,
} from '../../bench/report.js';
import { spansOf, stepOverlap } from '../../bench/step-overlap.js';
import { notMeasured, type SyncMeasure } from '../../bench/sync-runner.js';

const T0 = 1_800_000_000_000;
/** A pino line closing a step or statement `ms` long at T0 + `end`. */
const line = (fields: Record<string, unknown>, end: number, ms: number) =>
  JSON.stringify({ level: 20, time: T0 + end, ...fields, ms });

/** A re-sync's log: the shortcut's read during the download, statements inside "changes applied". */
const LOG = [
  'not json',
  JSON.stringify({ level: 30, time: T0, msg: 'sync started' }),
  line({ step: 'load', statement: 'copy_live_out', msg: 'statement done' }, 900, 700),
  line({ step: 'extract', msg: 'listing ready' }, 1000, 1000),
  line({ step: 'load', msg: 'listing parsed and staged' }, 3000, 2000),
  line({ step: 'load', statement: 'classify_changes', msg: 'statement done' }, 3500, 400),
  line({ step: 'load', statement: 'update_changed', msg: 'statement done' }, 3999, 300),
  line({ step: 'load', msg: 'changes applied' }, 4000, 1000),
  line({ step: 'load', statement: 'count_bi_rounding_changes', msg: 'statement done' }, 4050, 50),
  line({ step: 'load', statement: 'store_payload', msg: 'statement done' }, 4300, 250),
  line({ msg: 'sync finished' }, 4400, 4400),
].join('\n');

describe('step overlap from the debug log', () => {
  const overlap = stepOverlap(spansOf(LOG));

  it('takes the steps, not the statements inside a step of the same logger', () => {
    expect(overlap.steps.map((s) => s.name)).toEqual([
      'listing ready',
      'copy_live_out',
      'listing parsed and staged',
      'changes applied',
      'count_bi_rounding_changes',
      'store_payload',
    ]);
  });

  it('sums them, and says how much of that ran beside another step, and which', () => {
    expect(overlap.sumMs).toBe(1000 + 700 + 2000 + 1000 + 50 + 250);
    expect(overlap.coveredMs).toBe(4300);
    expect(overlap.overlapMs).toBe(700);
    expect(overlap.pairs).toEqual([{ steps: ['listing ready', 'copy_live_out'], ms: 700 }]);
    expect(overlap.runMs).toBe(4400);
  });

  it("counts steps that merely follow one another within the log's millisecond as no overlap", () => {
    const touching = [line({ step: 'load', msg: 'a' }, 100, 100), line({ step: 'load', msg: 'b' }, 201, 102)].join(
      '\n',
    );
    expect(stepOverlap(spansOf(touching))).toMatchObject({ pairs: [], runMs: undefined });
  });
});

describe('/proc readings', () => {
  it('reads user and system time from a stat line whose command holds spaces and parentheses', () => {
    const stat = '4242 (postgres: u (x) db) S 1 4242 4242 0 -1 4194560 500 0 0 0 1234 56 0 0 20 0 1 0 100 2000000 300';
    expect(parseProcStat(stat, 100)).toEqual({ comm: 'postgres: u (x) db', user: 12.34, system: 0.56 });
  });

  it("finds the local ports of a process's sockets in /proc/<pid>/net/tcp", () => {
    const table = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1527 00000000:0000 0A 00000000:00000000 00:00000000 00000000   106        0 111 1 0000000000000000 100 0 0 10 0',
      '   1: 0100007F:D431 0100007F:1527 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 20 4 30 10 -1',
      '   2: 0100007F:D432 0100007F:1527 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 20 4 30 10 -1',
    ].join('\n');
    expect(portsOfSockets(table, new Set(['222', '333']))).toEqual([0xd431, 0xd432]);
    expect(portsOfSockets(table, new Set(['999']))).toEqual([]);
  });
});

describe('the report tables', () => {
  const measure = (name: string, seconds: number, pg: boolean): SyncMeasure => ({
    name,
    seconds,
    maxRssMb: 180,
    walMb: 1.5,
    tuplesWritten: 7,
    otherTuples: 0,
    updates: 10008,
    hotUpdates: seconds > 10 ? 8999 : 1,
    status: 'succeeded',
    error: null,
    counts: {},
    stepsMs: {},
    overlap: {
      stepsSeconds: seconds + 0.5,
      coveredSeconds: seconds - 1,
      overlapSeconds: 1.5,
      pairs: [{ steps: ['listing ready', 'copy_live_out'], seconds: 0.61 }],
    },
    nodeCpu: { user: 5.25, system: 0.5 },
    pgCpu: pg
      ? {
          user: 2,
          system: 0.25,
          backends: [
            { pid: 1, user: 1.9, system: 0.2 },
            { pid: 2, user: 0.1, system: 0.05 },
          ],
        }
      : null,
    runId: 1,
  });
  const floor = { seconds: 5, downloadSeconds: 1, copySeconds: 4, tools: 'curl --compressed + psql \\copy' };
  const run = (pg: boolean, scale: number): BenchRun => ({
    floorBefore: floor,
    floorAfter: floor,
    floorSeconds: 5,
    syncs: Object.values(NAMES).map((name) => measure(name, 8 * scale, pg)),
    gzipRequested: true,
    rowsDifferingFromFloor: 0,
    rowsWithoutNewFields: 0,
    targets: {},
  });

  it('the summary gives Node and PostgreSQL CPU, min / median', () => {
    const table = summaryTable([run(true, 1), run(true, 2)]).split('\n');
    expect(table[0]).toContain('| Node CPU s min / median | PostgreSQL CPU s min / median |');
    expect(table.find((l) => l.startsWith(`| ${NAMES.first} |`))).toBe(
      `| ${NAMES.first} | 8.00 / 12.00 | 1.60 / 2.40 | 5.8 / 5.8 | 2.3 / 2.3 |` +
        ` 180 / 180 | 1.5 / 1.5 | 7 | 4500 of 10008 |`,
    );
    expect(
      table.filter((l) => l.startsWith('| floor')).every((l) => l.split('|').length === table[0]!.split('|').length),
    ).toBe(true);
  });

  it("says n/a for PostgreSQL's CPU when its processes could not be read", () => {
    const table = summaryTable([run(false, 1)]).split('\n');
    expect(table.find((l) => l.startsWith(`| ${NAMES.unchanged} |`))).toContain('| 5.8 / 5.8 | n/a |');
    expect(timeTable([run(false, 1)])).toContain('| 5.8 (5.3 + 0.5) | n/a |');
  });

  it('per run: wall time against the steps summed, their overlap and which steps, and the CPU split', () => {
    const table = timeTable([run(true, 1), run(true, 2)]).split('\n');
    expect(table[0]).toBe(
      '| measurement | run | wall s | steps summed s | of which overlapping s | steps that overlapped (s) | Node CPU s (user + sys) | PostgreSQL CPU s (user + sys, backends) |',
    );
    expect(table).toHaveLength(2 + 2 * Object.values(NAMES).length);
    expect(table[3]).toBe(
      `| ${NAMES.first} | 2 | 16.00 | 16.50 |` +
        ` 1.50 | listing ready ∥ copy_live_out 0.61 | 5.8 (5.3 + 0.5) | 2.3 (2.0 + 0.3, 2) |`,
    );
  });

  it('leaves out a measurement that no run took (a report from before it existed), and takes it from the runs that did', () => {
    const before = (r: BenchRun): BenchRun => ({ ...r, syncs: r.syncs.filter((s) => s.name !== NAMES.newFields) });
    const old = summaryTable([before(run(true, 1))]).split('\n');
    // A report from before the HOT count says so with a dash.
    const { updates: _u, hotUpdates: _h, ...withoutHot } = measure(NAMES.first, 8, true);
    expect(
      summaryTable([{ ...run(true, 1), syncs: [withoutHot] }])
        .split('\n')
        .find((l) => l.startsWith(`| ${NAMES.first} |`)),
    ).toMatch(/\| 7 \| - \|$/);
    expect(old.some((l) => l.startsWith(`| ${NAMES.newFields} |`))).toBe(false);
    expect(old).toHaveLength(5 + Object.values(NAMES).length - 1);
    expect(
      summaryTable([before(run(true, 1)), run(true, 2)])
        .split('\n')
        .find((l) => l.startsWith(`| ${NAMES.newFields} |`)),
    ).toContain('| 16.00 / 16.00 | 3.20 / 3.20 |');
    expect(timeTable([before(run(true, 1))]).split('\n')).toHaveLength(2 + Object.values(NAMES).length - 1);
  });

  it("gives the ratio to the run's first load of each measurement whose target is relative to it", () => {
    const slower = (r: BenchRun): BenchRun => ({
      ...r,
      syncs: r.syncs.map((s) => (s.name === NAMES.newFields ? { ...s, seconds: s.seconds * 1.1 } : s)),
    });
    expect(firstLoadRatioLines([slower(run(true, 1)), run(true, 2)])).toEqual([
      `${NAMES.newFields}: 1.10x, 1.00x the run's first load (target <= 1.25x)`,
      `${NAMES.renamed}: 1.00x, 1.00x the run's first load (target <= 2.0x)`,
      `${NAMES.empty}: 1.00x, 1.00x the run's first load (target <= 2.0x)`,
    ]);
  });

  it("gives the floor of the new-fields listing against the run's floor, when the run measured it", () => {
    const withFloor = (r: BenchRun, seconds: number): BenchRun => ({ ...r, newFieldsFloor: { ...floor, seconds } });
    expect(firstLoadRatioLines([withFloor(run(true, 1), 7.25), run(true, 2)]).slice(0, 2)).toEqual([
      `${NAMES.newFields}: 1.00x, 1.00x the run's first load (target <= 1.25x)`,
      "  its floor (curl --compressed + psql \\copy of its rows, extra_fields included): 1.45x the run's floor before",
    ]);
  });
});

describe('the targets of a run (judge), each against the floor of the same run', () => {
  const FLOOR = 4;
  /** A run that meets every target exactly at its limit; `seconds` and `rss` override a measurement's. */
  const runWith = (
    seconds: Partial<Record<string, number>> = {},
    rss: Partial<Record<string, number>> = {},
    other: Partial<SyncMeasure> = {},
  ): Omit<BenchRun, 'targets'> => {
    const at: Record<string, number> = {
      [NAMES.first]: 2.0 * FLOOR,
      [NAMES.newFields]: 1.25 * 2.0 * FLOOR,
      [NAMES.unchanged]: 0.9 * FLOOR,
      [NAMES.changed]: 1.2 * FLOOR,
      [NAMES.renamed]: 2 * 2.0 * FLOOR,
      [NAMES.empty]: 2 * 2.0 * FLOOR,
    };
    const floor = { seconds: FLOOR, downloadSeconds: 1, copySeconds: 3, tools: 'curl --compressed + psql \\copy' };
    return {
      floorBefore: floor,
      floorAfter: { ...floor, seconds: FLOOR + 1 },
      floorSeconds: FLOOR,
      syncs: Object.values(NAMES).map((name) => ({
        ...notMeasured(name),
        seconds: seconds[name] ?? at[name]!,
        maxRssMb: rss[name] ?? 250,
        walMb: 4.9,
        tuplesWritten: 100,
        status: name.startsWith('all rejected') ? 'failed' : 'succeeded',
        runId: 1,
        ...other,
      })),
      gzipRequested: true,
      rowsDifferingFromFloor: 0,
      rowsWithoutNewFields: 0,
    };
  };
  const missed = (targets: Record<string, boolean>) => Object.keys(targets).filter((t) => !targets[t]);

  it('names every target with its threshold', () => {
    expect(Object.keys(judge(runWith()))).toEqual([
      'first load <= 2.0x floor',
      'first load, 2 new fields per record <= 1.25x first load',
      'unchanged re-sync <= 0.9x floor',
      'unchanged re-sync WAL < 5 MB',
      'unchanged re-sync writes <= 100 rows',
      '1% changed <= 1.2x floor',
      'peak RSS <= 250 MB (every sync)',
      'all-rejected <= 2.0x first load',
      'sync asked for gzip',
      'loaded rows identical to the floor rows',
      'new fields kept in extra_fields (every row)',
    ]);
  });

  it('meets each target at its limit: first load 2.0x, unchanged 1.0x, 1% changed 1.2x the floor, new fields 1.25x the first load, 250 MB', () => {
    expect(missed(judge(runWith()))).toEqual([]);
  });

  it('misses each just past its limit, and only that one', () => {
    const past = 1.01;
    expect(
      missed(
        judge(
          runWith({
            [NAMES.first]: 2.0 * FLOOR * past,
            [NAMES.renamed]: 2.0 * FLOOR * past * 2,
            [NAMES.empty]: 2.0 * FLOOR * past * 2,
          }),
        ),
      ),
    ).toEqual(['first load <= 2.0x floor']);
    expect(missed(judge(runWith({ [NAMES.unchanged]: 0.9 * FLOOR * past })))).toEqual([
      'unchanged re-sync <= 0.9x floor',
    ]);
    expect(missed(judge(runWith({ [NAMES.changed]: 1.2 * FLOOR * past })))).toEqual(['1% changed <= 1.2x floor']);
    expect(missed(judge(runWith({}, { [NAMES.empty]: 250.5 })))).toEqual(['peak RSS <= 250 MB (every sync)']);
    expect(missed(judge(runWith({ [NAMES.renamed]: 4.0 * FLOOR * past })))).toEqual([
      'all-rejected <= 2.0x first load',
    ]);
    expect(missed(judge(runWith({ [NAMES.newFields]: 1.25 * 2.0 * FLOOR * past })))).toEqual([
      'first load, 2 new fields per record <= 1.25x first load',
    ]);
  });

  it("judges the first load with 2 new fields per record against the same run's first load: 1.30x misses, 1.20x meets", () => {
    const verdict = 'first load, 2 new fields per record <= 1.25x first load';
    const first = 2.0 * FLOOR;
    expect(missed(judge(runWith({ [NAMES.newFields]: 1.3 * first })))).toEqual([verdict]);
    // 2.4x the floor, but 1.2x the first load: met.
    expect(missed(judge(runWith({ [NAMES.newFields]: 1.2 * first })))).toEqual([]);
    // The same seconds against a slower first load of the same run (1.22x): met.
    expect(judge(runWith({ [NAMES.first]: 1.065 * first, [NAMES.newFields]: 1.3 * first }))[verdict]).toBe(true);
  });

  it('judges against the better of the two floors', () => {
    // 1.1x the better floor, 0.88x the worse: missed.
    expect(missed(judge(runWith({ [NAMES.unchanged]: 1.1 * FLOOR })))).toEqual(['unchanged re-sync <= 0.9x floor']);
  });

  it('keeps the WAL, rows-written, gzip and identical-rows checks', () => {
    expect(missed(judge(runWith({}, {}, { walMb: 5 })))).toEqual(['unchanged re-sync WAL < 5 MB']);
    expect(missed(judge(runWith({}, {}, { tuplesWritten: 101 })))).toEqual(['unchanged re-sync writes <= 100 rows']);
    expect(missed(judge({ ...runWith(), gzipRequested: false }))).toEqual(['sync asked for gzip']);
    expect(missed(judge({ ...runWith(), rowsDifferingFromFloor: 1 }))).toEqual([
      'loaded rows identical to the floor rows',
    ]);
    expect(missed(judge({ ...runWith(), rowsWithoutNewFields: 3 }))).toEqual([
      'new fields kept in extra_fields (every row)',
    ]);
  });

  it('says when fewer than the three consecutive runs the targets ask for were made', () => {
    const run = runWith();
    const judged = { ...run, targets: judge(run) };
    expect(targetLines([judged]).at(-1)).toBe(
      'note: the targets ask for 3 consecutive runs that all meet them; this bench made 1',
    );
    expect(targetLines([judged, judged, judged])).toContain('met    unchanged re-sync <= 0.9x floor (3 of 3 runs)');
    expect(targetLines([judged, judged, judged]).some((l) => l.startsWith('note: the targets ask'))).toBe(false);
  });
});

describe('the large-listing check (judgeScale): 10M against 1M, first loads and their replays', () => {
  const m = (
    seconds: number,
    maxRssMb: number | undefined,
    counts: Record<string, number>,
    status = 'succeeded',
  ): ScaleMeasure => ({ seconds, maxRssMb, status, counts });
  const ROWS = { reference: 999_998, large: 9_999_998 };
  /** Exactly at every limit: 11x the time, 1.3x the RSS, the large replay 1.3x its reference's and 250 MB. */
  const input = (
    over: {
      load?: Partial<ScaleMeasure>;
      replay?: Partial<ScaleMeasure>;
      referenceReplay?: Partial<ScaleMeasure>;
    } = {},
  ): ScaleInput => ({
    reference: {
      records: 1_000_000,
      rows: ROWS.reference,
      load: m(10, 150, { inserted: ROWS.reference }),
      replay: { ...m(5, 250 / 1.3, { unchanged: ROWS.reference }), ...over.referenceReplay },
    },
    large: {
      records: 10_000_000,
      rows: ROWS.large,
      load: { ...m(110, 195, { inserted: ROWS.large }), ...over.load },
      replay: { ...m(50, 250, { unchanged: ROWS.large }), ...over.replay },
    },
  });
  const missed = (i: ScaleInput) =>
    Object.entries(judgeScale(i).targets)
      .filter(([, ok]) => !ok)
      .map(([t]) => t);

  it('names the verdicts with their thresholds: 11x the time, 1.3x the RSS, the replay 250 MB and 1.3x', () => {
    expect(Object.keys(judgeScale(input()).targets)).toEqual([
      'first loads (run --from-file) of 1000000 and 10000000 records succeeded, every row inserted',
      "10000000-record first load time <= 11.0x the 1000000-record one's",
      "10000000-record first load peak RSS <= 1.3x the 1000000-record one's",
      'replays (replay --run) of both runs succeeded, every row unchanged',
      '10000000-record replay peak RSS <= 250 MB',
      "10000000-record replay peak RSS <= 1.3x the 1000000-record replay's",
    ]);
  });

  it('meets each at its limit, and gives the ratios', () => {
    const v = judgeScale(input());
    expect(missed(input())).toEqual([]);
    expect(v.ratios.size).toBe(10);
    expect(v.ratios.time).toBeCloseTo(11);
    expect(v.ratios.rss).toBeCloseTo(1.3);
    expect(v.ratios.replayRss).toBeCloseTo(1.3);
    expect(v.limits).toEqual({ time: expect.closeTo(11, 9), rss: 1.3, replayRss: 1.3, replayRssMb: 250 });
  });

  it('misses each just past its limit', () => {
    expect(missed(input({ load: { seconds: 110.2 } }))).toEqual([
      "10000000-record first load time <= 11.0x the 1000000-record one's",
    ]);
    expect(missed(input({ load: { maxRssMb: 195.2 } }))).toEqual([
      "10000000-record first load peak RSS <= 1.3x the 1000000-record one's",
    ]);
    expect(missed(input({ replay: { maxRssMb: 250.2 } }))).toEqual([
      '10000000-record replay peak RSS <= 250 MB',
      "10000000-record replay peak RSS <= 1.3x the 1000000-record replay's",
    ]);
    // Under 250 MB, but more than 1.3x a lean reference replay.
    expect(missed(input({ referenceReplay: { maxRssMb: 150 } }))).toEqual([
      "10000000-record replay peak RSS <= 1.3x the 1000000-record replay's",
    ]);
  });

  it('scales the time limit with the sizes: 11x for 10x the records, 22x for 20x', () => {
    const double: ScaleInput = { ...input(), large: { ...input().large, records: 20_000_000 } };
    expect(judgeScale(double).limits.time).toBeCloseTo(22);
    expect(Object.keys(judgeScale(double).targets)[1]).toBe(
      "20000000-record first load time <= 22.0x the 1000000-record one's",
    );
  });

  it('fails a load that did not insert every row, a replay that changed rows, and an unmeasured RSS', () => {
    expect(missed(input({ load: { counts: { inserted: ROWS.large - 1 } } }))).toEqual([
      'first loads (run --from-file) of 1000000 and 10000000 records succeeded, every row inserted',
    ]);
    expect(missed(input({ replay: { counts: { unchanged: ROWS.large - 5 } } }))).toEqual([
      'replays (replay --run) of both runs succeeded, every row unchanged',
    ]);
    expect(missed(input({ replay: { maxRssMb: undefined } }))).toContain('10000000-record replay peak RSS <= 250 MB');
  });

  it('prints each verdict with what was measured', () => {
    const lines = scaleTargetLines(judgeScale(input({ load: { seconds: 120 } })));
    expect(lines[1]).toBe(
      "MISSED 10000000-record first load time <= 11.0x the 1000000-record one's (12.00x: 120.00 s against 10.00 s)",
    );
    expect(lines[4]).toBe('met    10000000-record replay peak RSS <= 250 MB (250 MB)');
  });
});
