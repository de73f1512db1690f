/** How many live values the BI views round or leave NULL: the run says so, and warns when it gets worse. */
import { BI_PRECISION, biDecimalType, checkBiScale } from '../fields.js';
import type { PoolClient } from '../db/pool.js';
import { loadStatements, timedQuery } from '../db/statements.js';
import type { Logger } from '../log.js';
import type { ChangeCounts } from './apply.js';

const SQL = loadStatements('load/bi.sql', [
  'count_bi_rounding',
  'count_bi_rounding_changes',
  'count_bi_rounding_settled',
]);

export interface BiRounding {
  scale: number;
  /** Values that lose fractional digits in the BI views. */
  rounded: number;
  /** Values too large for numeric(BI_PRECISION, scale): NULL in the BI views. */
  overflow: number;
}

/** Counts on the caller's connection, so inside a run's transaction it sees the run's changes. */
export async function countBiRounding(client: PoolClient, scale: number, log?: Logger): Promise<BiRounding> {
  const { rows } = await timedQuery<{ rounded: string; overflow: string }>(
    client,
    'count_bi_rounding',
    SQL.count_bi_rounding,
    [scale, overflowThreshold(scale)],
    log,
  );
  return { scale, rounded: Number(rows[0]!.rounded), overflow: Number(rows[0]!.overflow) };
}

/**
 * The count over the rows of the ids staging_records holds (a first load's settled duplicate ids,
 * sql/load/first_load.sql): read before and after their winners are written, it corrects the
 * count of the rows as written by the change on those few ids.
 */
export async function countBiRoundingSettled(client: PoolClient, scale: number, log?: Logger): Promise<BiRounding> {
  const { rows } = await timedQuery<{ rounded: string; overflow: string }>(
    client,
    'count_bi_rounding_settled',
    SQL.count_bi_rounding_settled,
    [scale, overflowThreshold(scale)],
    log,
  );
  return { scale, rounded: Number(rows[0]!.rounded), overflow: Number(rows[0]!.overflow) };
}

/**
 * How a run gets its count: `carried` (it changed no row: the last count as it is), `incremental`
 * (the last count updated from the rows it changed), `written` (a first load: its rows counted as
 * they were written, run/first-load.ts), or `full` (a scan of every live row).
 */
export type BiCountMethod = 'carried' | 'incremental' | 'written' | 'full';

export type BiCountPlan =
  | { method: 'full'; scale: number }
  | { method: 'carried' | 'incremental'; base: BiRounding }
  | { method: 'written'; counted: BiRounding };

/** The count a successful run stored in sync_runs (bigint columns: text from pg). */
export interface LastCount {
  bi_scale: number | null;
  bi_rounded: string | null;
  bi_overflow: string | null;
}

/** What a run changed, as classify_changes counted it. */
export type RunChanges = Pick<
  ChangeCounts,
  'initialLoad' | 'liveBefore' | 'inserted' | 'updated' | 'restored' | 'deleted'
>;

/**
 * A first load counted its rows as it wrote them (`written`, at this scale): that is the count, and
 * no earlier one matters. Otherwise the last successful run's count is a starting point only when
 * it described the live rows as this run found them: the same scale, and the table provably as
 * runs left it (`asRunsLeftIt`: every live row the version a run's fingerprint vouches for, none
 * removed behind a run's back) with as many live rows as that run left. Anything else (a first
 * run, a write outside a run, a new scale, an initial load that did not count its rows, which has
 * no change table) is counted in full.
 */
export function biCountPlan(
  last: (LastCount & { live_after: string | null }) | undefined,
  scale: number,
  changes: RunChanges,
  asRunsLeftIt: boolean,
  written?: BiRounding,
): BiCountPlan {
  if (written?.scale === scale) return { method: 'written', counted: written };
  const trusted =
    asRunsLeftIt && !changes.initialLoad && last?.live_after != null && changes.liveBefore === Number(last.live_after);
  const base = trusted ? carriedBiRounding(last, scale) : undefined;
  if (base === undefined) return { method: 'full', scale };
  const changed = changes.inserted + changes.updated + changes.deleted + changes.restored;
  return { method: changed === 0 ? 'carried' : 'incremental', base };
}

/**
 * The count after a run's changes, by the plan above. The incremental count reads only the changed
 * rows (sql/load/bi.sql count_bi_rounding_changes); it falls back to the full count when the rows it
 * found are not the ones the run changed or a total went below zero: a starting point that was
 * wrong after all must not be carried on from run to run.
 */
export async function countAfterRun(
  client: PoolClient,
  plan: BiCountPlan,
  changes: RunChanges,
  log?: Logger,
): Promise<{ bi: BiRounding; method: BiCountMethod }> {
  if (plan.method === 'written') return { bi: plan.counted, method: 'written' };
  if (plan.method === 'carried') return { bi: plan.base, method: 'carried' };
  if (plan.method === 'incremental') {
    const { scale, rounded, overflow } = plan.base;
    const { rows } = await timedQuery<{ rounded: string; overflow: string; replaced: string; written: string }>(
      client,
      'count_bi_rounding_changes',
      SQL.count_bi_rounding_changes,
      [scale, overflowThreshold(scale), String(rounded), String(overflow)],
      log,
    );
    const r = rows[0]!;
    const bi = { scale, rounded: Number(r.rounded), overflow: Number(r.overflow) };
    const found =
      Number(r.replaced) === changes.updated + changes.deleted &&
      Number(r.written) === changes.inserted + changes.updated + changes.restored;
    if (found && bi.rounded >= 0 && bi.overflow >= 0) return { bi, method: 'incremental' };
    log?.warn(
      { ...bi, replaced: Number(r.replaced), written: Number(r.written), changes },
      'BI rounding: the changed rows did not add up; counted in full',
    );
  }
  const scale = plan.method === 'full' ? plan.scale : plan.base.scale;
  return { bi: await countBiRounding(client, scale, log), method: 'full' };
}

/**
 * What the BI views round after a run's changes, in the log. A first load counted its rows as it
 * wrote them (`written`). When the last successful run's count still described the table as
 * this run found it (biCountPlan), it is carried forward (no row changed) or updated from the
 * changed rows only; otherwise every live row is counted. The log line says which (`biCount`) and
 * which run's count it rests on (`countedBy`).
 */
export async function countRunBiRounding(
  client: PoolClient,
  run: {
    runId: string;
    scale: number;
    last: (LastCount & { id: string; live_after: string | null }) | undefined;
    changes: RunChanges;
    asRunsLeftIt: boolean;
    written: BiRounding | undefined;
  },
  log: Logger,
): Promise<BiRounding> {
  const { last } = run;
  const plan = biCountPlan(last, run.scale, run.changes, run.asRunsLeftIt, run.written);
  const { bi, method } = await countAfterRun(client, plan, run.changes, log);
  const how = {
    biCount: method,
    countedBy: Number(method === 'carried' ? last!.id : run.runId),
    ...(method === 'incremental' ? { countedFrom: Number(last!.id) } : {}),
  };
  // A warning only when the count grew or the scale changed: a state logged every night is noise.
  const note = describeBiRounding(bi);
  if (note) log[biRoundingLevel(bi, last)]({ ...bi, ...how }, note);
  else log.debug({ ...bi, ...how }, 'BI views show every live value exactly');
  return bi;
}

/**
 * The last successful run's count at this scale, as it stored it; undefined without one. Whether it
 * still describes the live rows is biCountPlan's question.
 */
export function carriedBiRounding(last: LastCount | undefined, scale: number): BiRounding | undefined {
  if (last?.bi_scale !== scale || last.bi_rounded === null || last.bi_overflow === null) return undefined;
  return { scale, rounded: Number(last.bi_rounded), overflow: Number(last.bi_overflow) };
}

/**
 * The smallest magnitude that rounds (half away from zero) to S places with more than P-S integer
 * digits (P = BI_PRECISION): P-S nines, then S nines and a 5 after the point. Built as text, never a
 * JS number: S is a validated integer.
 */
export function overflowThreshold(scale: number): string {
  checkBiScale(scale);
  return `${'9'.repeat(BI_PRECISION - scale)}.${'9'.repeat(scale)}5`;
}

/**
 * A warning is for a change, not a state: the count grew since the last successful load (its
 * stored bi_rounded/bi_overflow) or the scale changed; the same values rounded night after night
 * are logged at info, so that alerting on warnings stays quiet on unchanged re-syncs.
 */
export function biRoundingLevel(now: BiRounding, last: LastCount | undefined): 'warn' | 'info' {
  if (last?.bi_scale !== now.scale || last.bi_rounded === null || last.bi_overflow === null) return 'warn';
  return now.rounded > Number(last.bi_rounded) || now.overflow > Number(last.bi_overflow) ? 'warn' : 'info';
}

/** The warning for the log and the run summary; undefined when the BI views show every value exactly. */
export function describeBiRounding(r: BiRounding): string | undefined {
  if (r.rounded === 0 && r.overflow === 0) return undefined;
  const parts: string[] = [];
  if (r.rounded > 0)
    parts.push(
      `${r.rounded} live value${r.rounded === 1 ? ' has' : 's have'} more than ${r.scale} decimal places ` +
        `and ${r.rounded === 1 ? 'is' : 'are'} rounded`,
    );
  if (r.overflow > 0)
    parts.push(
      `${r.overflow} live value${r.overflow === 1 ? ' does' : 's do'} not fit ${biDecimalType(r.scale)} ` +
        `and ${r.overflow === 1 ? 'is' : 'are'} NULL (see overflow_columns)`,
    );
  return `BI views: ${parts.join('; ')}; the exact tables keep every digit`;
}
