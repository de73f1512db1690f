/**
 * One sync launched as users launch it (`bin/wine-recon-sync` with its shebang's node flags),
 * measured from outside: wall time, peak RSS and CPU (reported by a probe loaded into the
 * process), the CPU of its PostgreSQL backends (backend-cpu.ts), WAL written (pg_current_wal_lsn
 * before and after), and each step's duration and how the steps overlapped, from its debug log.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type pg from 'pg';
import { PACKAGE_ROOT } from '../src/io/paths.js';
import { BackendCpuSampler, type ProcCpu } from './backend-cpu.js';
import { spansOf, stepOverlap } from './step-overlap.js';

const BIN = join(PACKAGE_ROOT, 'bin', 'wine-recon-sync');
const PROBE = join(PACKAGE_ROOT, 'dist', 'bench', 'rss-probe.js');

export interface SyncMeasure {
  name: string;
  seconds: number;
  maxRssMb: number | undefined;
  /** WAL of the whole cluster: on a shared server it includes other databases' writes (see otherTuples). */
  walMb: number;
  /** Rows inserted, updated or deleted in the sync's schema (its tables, not its temporary staging). */
  tuplesWritten: number;
  /** Rows written in other databases of the cluster meanwhile: when not 0, walMb is not the sync's alone. */
  otherTuples: number;
  /**
   * Rows updated in the data table (bulk_wine_reconciliation), and how many of those were HOT
   * (heap-only: the new version on the same page, no index entry); absent in reports older than them.
   */
  updates?: number;
  hotUpdates?: number;
  status: string;
  error: string | null;
  counts: Record<string, number | null>;
  /** Duration of each step and statement, from the run's debug log. */
  stepsMs: Record<string, number>;
  /** Each phase's wall time as the run stored it (sync_runs.phases); absent in older reports. */
  phasesMs?: Record<string, number>;
  /**
   * The steps (spans inside no other step, statements of a step excluded) summed, and how much of that ran beside
   * another step.
   */
  overlap: {
    stepsSeconds: number;
    coveredSeconds: number;
    overlapSeconds: number;
    pairs: Array<{ steps: [string, string]; seconds: number }>;
  };
  /** CPU of the sync's Node process (every thread), seconds; undefined when the probe did not report. */
  nodeCpu: ProcCpu | undefined;
  /** CPU of its PostgreSQL backends, seconds; null when the server's processes are not on this machine (n/a). */
  pgCpu: (ProcCpu & { backends: Array<{ pid: number } & ProcCpu> }) | null;
  runId: number;
}

/** A measurement that could not be taken: fails every verdict that needs it. */
export function notMeasured(name: string): SyncMeasure {
  return {
    name,
    seconds: NaN,
    maxRssMb: undefined,
    walMb: 0,
    tuplesWritten: 0,
    otherTuples: 0,
    updates: 0,
    hotUpdates: 0,
    status: 'not run',
    error: null,
    counts: {},
    stepsMs: {},
    overlap: { stepsSeconds: 0, coveredSeconds: 0, overlapSeconds: 0, pairs: [] },
    nodeCpu: undefined,
    pgCpu: null,
    runId: 0,
  };
}

export async function measureSync(
  name: string,
  args: string[],
  env: Record<string, string>,
  admin: pg.Client,
): Promise<SyncMeasure> {
  const walBefore = (await admin.query('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn;
  const tuplesBefore = await rowsWritten(admin, env.SYNC_DB_SCHEMA ?? 'public');
  const started = process.hrtime.bigint();
  let sampler: Promise<BackendCpuSampler | undefined> = Promise.resolve(undefined);
  const { stdout, stderr, probe } = await runCli([...args, '--json'], { ...env, LOG_LEVEL: 'debug' }, true, (pid) => {
    sampler = BackendCpuSampler.start(admin, pid).catch(() => undefined); // not measured: n/a
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const pgCpu = (await (await sampler)?.stop()) ?? null;
  const overlap = stepOverlap(spansOf(stderr));
  const wal = (await admin.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint AS bytes', [walBefore]))
    .rows[0].bytes;
  const tuplesAfter = await rowsWritten(admin, env.SYNC_DB_SCHEMA ?? 'public');
  let run: Record<string, unknown>;
  try {
    run = JSON.parse(stdout);
  } catch {
    throw new Error(`${name}: no run row on stdout; stderr:\n${stderr.slice(-3000)}`);
  }
  const pick = (k: string) => (run[k] === null || run[k] === undefined ? null : Number(run[k]));
  return {
    name,
    seconds,
    maxRssMb: probe === undefined ? undefined : probe.maxRssBytes / 2 ** 20,
    walMb: Number(wal) / 2 ** 20,
    tuplesWritten: tuplesAfter.mine - tuplesBefore.mine,
    otherTuples: tuplesAfter.others - tuplesBefore.others,
    updates: tuplesAfter.updates - tuplesBefore.updates,
    hotUpdates: tuplesAfter.hotUpdates - tuplesBefore.hotUpdates,
    status: String(run.status),
    error: (run.error as string | null) ?? null,
    counts: Object.fromEntries(
      ['received', 'rejected', 'duplicates', 'inserted', 'updated', 'unchanged', 'deleted', 'restored'].map((k) => [
        k,
        pick(k),
      ]),
    ),
    stepsMs: steps(stderr),
    phasesMs: Object.fromEntries(
      ((run.phases as Array<{ phase: string; ms: number }> | null) ?? []).map((p) => [p.phase, p.ms]),
    ),
    overlap: {
      stepsSeconds: overlap.sumMs / 1000,
      coveredSeconds: overlap.coveredMs / 1000,
      overlapSeconds: overlap.overlapMs / 1000,
      pairs: overlap.pairs.map((p) => ({ steps: p.steps, seconds: p.ms / 1000 })),
    },
    nodeCpu: probe === undefined ? undefined : { user: probe.userCpuMicros / 1e6, system: probe.systemCpuMicros / 1e6 },
    pgCpu,
    runId: Number(run.id),
  };
}

/**
 * Cumulative rows written to the sync's own tables (temporary staging tables excluded), and in
 * other databases of the cluster; the sync's sessions have ended, so their counts are flushed.
 */
async function rowsWritten(
  admin: pg.Client,
  schema: string,
): Promise<{ mine: number; others: number; updates: number; hotUpdates: number }> {
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await admin.query<{ mine: string; others: string; updates: string; hot: string }>(
    `SELECT (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables
             WHERE schemaname = $1)::text AS mine,
            (SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables
             WHERE schemaname = $1 AND relname = 'bulk_wine_reconciliation')::text AS updates,
            (SELECT coalesce(sum(n_tup_hot_upd), 0) FROM pg_stat_user_tables
             WHERE schemaname = $1 AND relname = 'bulk_wine_reconciliation')::text AS hot,
            (SELECT coalesce(sum(tup_inserted + tup_updated + tup_deleted), 0) FROM pg_stat_database
             WHERE datname IS NOT NULL AND datname <> current_database())::text AS others`,
    [schema],
  );
  return {
    mine: Number(rows[0]!.mine),
    others: Number(rows[0]!.others),
    updates: Number(rows[0]!.updates),
    hotUpdates: Number(rows[0]!.hot),
  };
}

/** Step durations from the run's debug log: every line with `ms` names a step or a statement. */
function steps(stderr: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; ms?: number; statement?: string };
    if (typeof entry.ms !== 'number') continue;
    const name = entry.statement ?? entry.msg;
    if (name) out[name] = (out[name] ?? 0) + entry.ms;
  }
  return out;
}

/** Drops the sync's schema (env.SYNC_DB_SCHEMA) and migrates it again: the empty schema a first load starts from. */
export async function freshSchema(admin: pg.Client, env: Record<string, string>): Promise<void> {
  await admin.query(`DROP SCHEMA IF EXISTS "${env.SYNC_DB_SCHEMA}" CASCADE`);
  const migrated = await runCli(['migrate'], env);
  if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
}

/** What the probe (rss-probe.ts) reports from inside the process on exit. */
export interface ProbeReport {
  maxRssBytes: number;
  userCpuMicros: number;
  systemCpuMicros: number;
}

export function runCli(
  args: string[],
  env: Record<string, string>,
  probe = false,
  onSpawn?: (pid: number) => void,
): Promise<{ code: number | null; stdout: string; stderr: string; probe?: ProbeReport }> {
  return new Promise((resolve, reject) => {
    // The probe rides in NODE_OPTIONS and reports on fd 3.
    const childEnv = { PATH: process.env.PATH ?? '', ...env, ...(probe ? { NODE_OPTIONS: `--import=${PROBE}` } : {}) };
    const child = spawn(BIN, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    // The shebang's `env -S node` execs node in place: this pid is the sync's Node process.
    if (child.pid !== undefined) onSpawn?.(child.pid);
    let stdout = '';
    let stderr = '';
    let probeOut = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdio[3]!.on('data', (d) => (probeOut += d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout, stderr, probe: probeOut ? (JSON.parse(probeOut) as ProbeReport) : undefined }),
    );
  });
}
