/**
 * What `npm run bench` reports beside the wall times: how the steps of a run overlapped (from its
 * debug log), the CPU of Node and of the PostgreSQL backends (from /proc), and the tables that show
 * them, `n/a` when the server's processes are not on this machine.
 */
import { describe, expect, it } from 'vitest';
import { parseProcStat, portsOfSockets } from '../../bench/backend-cpu.js';
import { NAMES, summaryTable, timeTable, type BenchRun } from '../../bench/report.js';
import { spansOf, stepOverlap } from '../../bench/step-overlap.js';
import type { SyncMeasure } from '../../bench/sync-runner.js';

const T0 = 1_800_000_000_000;
/** A pino line closing a step or statement `ms` long at T0 + `end`. */
const line = (fields: Record<string, unknown>, end: number, ms: number) => JSON.stringify({ level: 20, time: T0 + end, ...fields, ms });

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

  it('counts steps that merely follow one another within the log\'s millisecond as no overlap', () => {
    const touching = [line({ step: 'load', msg: 'a' }, 100, 100), line({ step: 'load', msg: 'b' }, 201, 102)].join('\n');
    expect(stepOverlap(spansOf(touching))).toMatchObject({ pairs: [], runMs: undefined });
  });
});

describe('/proc readings', () => {
  it('reads user and system time from a stat line whose command holds spaces and parentheses', () => {
    const stat = '4242 (postgres: u (x) db) S 1 4242 4242 0 -1 4194560 500 0 0 0 1234 56 0 0 20 0 1 0 100 2000000 300';
    expect(parseProcStat(stat, 100)).toEqual({ comm: 'postgres: u (x) db', user: 12.34, system: 0.56 });
  });

  it('finds the local ports of a process\'s sockets in /proc/<pid>/net/tcp', () => {
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
    status: 'succeeded',
    error: null,
    counts: {},
    stepsMs: {},
    overlap: { stepsSeconds: seconds + 0.5, coveredSeconds: seconds - 1, overlapSeconds: 1.5, pairs: [{ steps: ['listing ready', 'copy_live_out'], seconds: 0.61 }] },
    nodeCpu: { user: 5.25, system: 0.5 },
    pgCpu: pg ? { user: 2, system: 0.25, backends: [{ pid: 1, user: 1.9, system: 0.2 }, { pid: 2, user: 0.1, system: 0.05 }] } : null,
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
    targets: {},
  });

  it('the summary gives Node and PostgreSQL CPU, min / median', () => {
    const table = summaryTable([run(true, 1), run(true, 2)]).split('\n');
    expect(table[0]).toContain('| Node CPU s min / median | PostgreSQL CPU s min / median |');
    expect(table.find((l) => l.startsWith(`| ${NAMES.first} |`))).toBe(`| ${NAMES.first} | 8.00 / 12.00 | 1.60 / 2.40 | 5.8 / 5.8 | 2.3 / 2.3 | 180 / 180 | 1.5 / 1.5 | 7 |`);
    expect(table.filter((l) => l.startsWith('| floor')).every((l) => l.split('|').length === table[0]!.split('|').length)).toBe(true);
  });

  it('says n/a for PostgreSQL\'s CPU when its processes could not be read', () => {
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
    expect(table[3]).toBe(`| ${NAMES.first} | 2 | 16.00 | 16.50 | 1.50 | listing ready ∥ copy_live_out 0.61 | 5.8 (5.3 + 0.5) | 2.3 (2.0 + 0.3, 2) |`);
  });
});
