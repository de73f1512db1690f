/**
 * The run checks in OpenLineage: the output table's `dataQualityMetrics` from the run's profile
 * (sync_run_profiles), the listing's `dataQualityAssertions` from its checks (sync_run_checks).
 * Sums, minima and maxima keep every digit: they are JsonNumberText, written by jsonText.
 */
import type { RunCheck, RunProfileField } from '../load/run-quality.js';
import { JsonNumberText } from './json-text.js';

/**
 * Per field: nullCount and count (the non-null values); for a numeric field (one with a total)
 * also sum, min and max. A date's min and max are left out: the facet types them as numbers.
 */
export function qualityMetrics(profile: readonly RunProfileField[]): Record<string, unknown> | undefined {
  if (profile.length === 0) return undefined;
  const columnMetrics: Record<string, Record<string, JsonNumberText | undefined>> = {};
  for (const p of profile) {
    const numeric = p.total !== null;
    columnMetrics[p.field] = {
      nullCount: JsonNumberText.of(p.nullCount),
      count: JsonNumberText.of(String(BigInt(p.rowCount) - BigInt(p.nullCount))),
      ...(numeric
        ? { sum: JsonNumberText.of(p.total), min: JsonNumberText.of(p.minValue), max: JsonNumberText.of(p.maxValue) }
        : {}),
    };
  }
  return { rowCount: JsonNumberText.of(profile[0]!.rowCount), columnMetrics };
}

/** One assertion per check: its kind (`total` of `total:FIELD`), success, column, severity and values. */
export function qualityAssertions(checks: readonly RunCheck[]): Record<string, unknown> | undefined {
  if (checks.length === 0) return undefined;
  return {
    assertions: checks.map((c) => ({
      assertion: c.check.split(':')[0]!,
      success: c.passed,
      ...(c.field === null ? {} : { column: c.field }),
      severity: c.severity,
      name: c.check,
      description: c.message,
      ...(c.expected === null ? {} : { expected: c.expected }),
      ...(c.observed === null ? {} : { actual: c.observed }),
    })),
  };
}
