/** How many live values the BI views round or leave NULL: the run says so, and warns when it gets worse. */
import { BI_PRECISION, biDecimalType, checkBiScale } from '../bi-types.js';
import type { PoolClient } from '../db/pool.js';
import { loadStatements } from '../db/statements.js';

const SQL = loadStatements('load/bi.sql', ['count_bi_rounding']);

export interface BiRounding {
  scale: number;
  /** Values that lose fractional digits in the BI views. */
  rounded: number;
  /** Values too large for numeric(BI_PRECISION, scale): NULL in the BI views. */
  overflow: number;
}

/** Counts on the caller's connection, so inside a run's transaction it sees the run's changes. */
export async function countBiRounding(client: PoolClient, scale: number): Promise<BiRounding> {
  const { rows } = await client.query<{ rounded: string; overflow: string }>(SQL.count_bi_rounding, [scale, overflowThreshold(scale)]);
  return { scale, rounded: Number(rows[0]!.rounded), overflow: Number(rows[0]!.overflow) };
}

/**
 * The last successful run's count, when it still holds: the caller knows that no live row changed
 * since that run committed (this run changed none, and the fingerprints, which any outside write
 * invalidates, were trusted), and the scale is the same. Saves a read of every live row per re-sync.
 */
export function carriedBiRounding(
  last: { bi_scale: number | null; bi_rounded: string | null; bi_overflow: string | null } | undefined,
  scale: number,
): BiRounding | undefined {
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
export function biRoundingLevel(
  now: BiRounding,
  last: { bi_scale: number | null; bi_rounded: string | null; bi_overflow: string | null } | undefined,
): 'warn' | 'info' {
  if (last?.bi_scale !== now.scale || last.bi_rounded === null || last.bi_overflow === null) return 'warn';
  return now.rounded > Number(last.bi_rounded) || now.overflow > Number(last.bi_overflow) ? 'warn' : 'info';
}

/** The warning for the log and the run summary; undefined when the BI views show every value exactly. */
export function describeBiRounding(r: BiRounding): string | undefined {
  if (r.rounded === 0 && r.overflow === 0) return undefined;
  const parts: string[] = [];
  if (r.rounded > 0) parts.push(`${r.rounded} live value${r.rounded === 1 ? ' has' : 's have'} more than ${r.scale} decimal places and ${r.rounded === 1 ? 'is' : 'are'} rounded`);
  if (r.overflow > 0) parts.push(`${r.overflow} live value${r.overflow === 1 ? ' does' : 's do'} not fit ${biDecimalType(r.scale)} and ${r.overflow === 1 ? 'is' : 'are'} NULL (see overflow_columns)`);
  return `BI views: ${parts.join('; ')}; the exact tables keep every digit`;
}
