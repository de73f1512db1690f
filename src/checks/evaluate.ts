/**
 * The checks of one run (sync_run_checks), from its profile and the runs before: the built-in
 * volume, total:<field> and nulls:<field>, as SYNC_CHECKS_FILE changes them, and the file's rules
 * on values. Pure: the run reads what it needs and stores what this returns. Why the defaults
 * are what they are: docs/checks.md.
 */
import {
  absDecimal,
  compareDecimal,
  divideToText,
  formatDecimal,
  multiplyDecimal,
  parseDecimal,
  subtractDecimal,
  type Decimal,
} from '../text/exact-decimal.js';
import type { FieldProfile } from '../load/profile.js';
import type { CheckRule, NullsRule, Severity, TotalRule, ValueRule, VolumeRule } from './checks-file.js';

/** The built-in thresholds (docs/checks.md says why). */
export const DEFAULTS = {
  volumeMaxChangePercent: '20',
  volumeRuns: 7,
  /** Fewer successful runs than this before: the volume has nothing steady to be compared with. */
  volumeMinRuns: 3,
  totalMaxChangePercent: '50',
  nullsMaxIncreasePoints: '10',
  /** A field null in at most this share (percent) of the live rows was "almost never null"... */
  nullsRarelyPercent: '5',
  /** ...and one null in more than this share now has stopped being filled: an error. */
  nullsMostPercent: '50',
} as const;

export interface CheckResult {
  check_name: string;
  field: string | null;
  severity: Severity;
  passed: boolean;
  observed: string | null;
  expected: string | null;
  message: string;
}

export interface CheckInput {
  /** Records the listing had (sync_runs.received). */
  received: number;
  /** Records received by the last successful runs that committed, newest first (at most 7 used). */
  recentReceived: readonly number[];
  /** Per profiled field, its kind. */
  fields: ReadonlyMap<string, 'id' | 'text' | 'decimal' | 'date'>;
  profile: readonly FieldProfile[];
  /** The last successful run's profile, when it has one. */
  previous: { runId: string; profile: readonly FieldProfile[] } | undefined;
  /** Today's date (SYNC_TIMEZONE), YYYY-MM-DD, for `today` in a rule. */
  today: string;
}

const dec = (text: string): Decimal => parseDecimal(text)!;
const HUNDRED = dec('100');

/** Every check of the run, built-ins first, then the file's rules in order. */
export function evaluateChecks(rules: readonly CheckRule[], input: CheckInput): CheckResult[] {
  const out: CheckResult[] = [];
  const volume = rules.find((r): r is VolumeRule => r.kind === 'volume');
  if (!volume?.off) out.push(volumeCheck(input, volume));
  const now = new Map(input.profile.map((p) => [p.field, p]));
  const before = new Map(input.previous?.profile.map((p) => [p.field, p]) ?? []);
  for (const [field, kind] of input.fields) {
    if (kind === 'decimal') {
      const rule = rules.find((r): r is TotalRule => r.kind === 'total' && r.field === field);
      if (!rule?.off) out.push(totalCheck(field, now.get(field), before.get(field), input.previous?.runId, rule));
    }
    if (kind === 'decimal' || kind === 'date') {
      const rule = rules.find((r): r is NullsRule => r.kind === 'nulls' && r.field === field);
      if (!rule?.off) out.push(nullsCheck(field, now.get(field), before.get(field), input.previous?.runId, rule));
    }
  }
  for (const rule of rules)
    if (rule.kind === 'value')
      out.push(...valueChecks(rule, now.get(rule.field), input.fields.get(rule.field), input.today));
  return out;
}

function percent(d: Decimal): string {
  return `${divideToText(d, { units: 1n, scale: 0 }, 1)}%`;
}

function volumeCheck(input: CheckInput, rule: VolumeRule | undefined): CheckResult {
  const severity = rule?.severity ?? 'warn';
  const limit = dec(rule?.maxChangePercent ?? DEFAULTS.volumeMaxChangePercent);
  const runs = input.recentReceived.slice(0, DEFAULTS.volumeRuns);
  const observed = String(input.received);
  const base = { check_name: 'volume', field: null, severity, observed };
  if (runs.length < DEFAULTS.volumeMinRuns)
    return {
      ...base,
      passed: true,
      expected: null,
      message:
        `volume: ${observed} records received; fewer than ${DEFAULTS.volumeMinRuns} successful runs before, ` +
        'nothing to compare with yet',
    };
  const sorted = [...runs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  // The median as an exact decimal: the middle count, or half the sum of the two middle ones.
  const median: Decimal =
    sorted.length % 2 === 1
      ? { units: BigInt(sorted[mid]!), scale: 0 }
      : { units: (BigInt(sorted[mid - 1]!) + BigInt(sorted[mid]!)) * 5n, scale: 1 };
  const medianText = formatDecimal(median);
  const change = subtractDecimal({ units: BigInt(input.received), scale: 0 }, median);
  const expected = `${medianText} ± ${formatDecimal(limit)}% (median of the last ${runs.length} successful runs)`;
  const passed =
    median.units === 0n
      ? input.received === 0
      : compareDecimal(multiplyDecimal(absDecimal(change), HUNDRED), multiplyDecimal(limit, median)) <= 0;
  const how =
    median.units === 0n ? 'from none' : `${signed(percent(divideRatio(change, median)))} from the median ${medianText}`;
  return {
    ...base,
    passed,
    expected,
    message:
      `volume: ${observed} records received, ${how} of the last ${runs.length} successful runs ` +
      `(at most ±${formatDecimal(limit)}% allowed)`,
  };
}

/** a / b * 100 as a decimal with 1 fractional digit. */
function divideRatio(a: Decimal, b: Decimal): Decimal {
  return dec(divideToText(multiplyDecimal(a, HUNDRED), b, 1));
}

function signed(text: string): string {
  return text.startsWith('-') ? text : `+${text}`;
}

function totalCheck(
  field: string,
  now: FieldProfile | undefined,
  before: FieldProfile | undefined,
  runId: string | undefined,
  rule: TotalRule | undefined,
): CheckResult {
  const severity = rule?.severity ?? 'warn';
  const limit = dec(rule?.maxChangePercent ?? DEFAULTS.totalMaxChangePercent);
  const name = `total:${field}`;
  const observed = now?.total ?? null;
  const base = { check_name: name, field, severity, observed };
  const was = before?.total == null ? undefined : parseDecimal(before.total);
  const is = observed === null ? dec('0') : parseDecimal(observed);
  const earlier = runId === undefined ? 'no earlier profile' : `run ${runId} had ${before?.total ?? 'no'} total`;
  if (was === undefined || was.units === 0n || is === undefined)
    return {
      ...base,
      passed: true,
      expected: null,
      message: `${name}: total ${observed ?? 'none'}; ${earlier}, nothing to compare with`,
    };
  const change = subtractDecimal(is, was);
  const passed =
    compareDecimal(multiplyDecimal(absDecimal(change), HUNDRED), multiplyDecimal(limit, absDecimal(was))) <= 0;
  return {
    ...base,
    passed,
    expected: `${before!.total} ± ${formatDecimal(limit)}% (run ${runId})`,
    message:
      `${name}: total ${observed ?? 'none'} is ${signed(percent(divideRatio(change, absDecimal(was))))} ` +
      `from ${before!.total} in run ${runId} (at most ±${formatDecimal(limit)}% allowed)`,
  };
}

function nullsCheck(
  field: string,
  now: FieldProfile | undefined,
  before: FieldProfile | undefined,
  runId: string | undefined,
  rule: NullsRule | undefined,
): CheckResult {
  const name = `nulls:${field}`;
  const limit = dec(rule?.maxIncreasePoints ?? DEFAULTS.nullsMaxIncreasePoints);
  const rows = BigInt(now?.row_count ?? '0');
  const nulls = BigInt(now?.null_count ?? '0');
  const share = (n: bigint, r: bigint) =>
    r === 0n ? '0%' : percent(divideRatio({ units: n, scale: 0 }, { units: r, scale: 0 }));
  const observed = `${share(nulls, rows)} (${nulls} of ${rows} live rows)`;
  const riseSeverity = rule?.severity ?? 'warn';
  if (before === undefined || BigInt(before.row_count) === 0n || rows === 0n)
    return {
      check_name: name,
      field,
      severity: riseSeverity,
      passed: true,
      observed,
      expected: null,
      message: `nulls:${field}: null in ${observed}; no earlier profile to compare with`,
    };
  const r0 = BigInt(before.row_count);
  const n0 = BigInt(before.null_count);
  const wasShare = share(n0, r0);
  // (n/r - n0/r0) * 100 > limit, without division: (n*r0 - n0*r) * 100 > limit * r0 * r.
  const rise = multiplyDecimal({ units: nulls * r0 - n0 * rows, scale: 0 }, HUNDRED);
  const rose = compareDecimal(rise, multiplyDecimal(limit, { units: r0 * rows, scale: 0 })) > 0;
  // Almost never null (at most 1%) before, null in most live rows (over 50%) now: the upstream stopped filling it.
  const rarely =
    compareDecimal(
      { units: n0 * 100n, scale: 0 },
      multiplyDecimal(dec(DEFAULTS.nullsRarelyPercent), { units: r0, scale: 0 }),
    ) <= 0;
  const most =
    compareDecimal(
      { units: nulls * 100n, scale: 0 },
      multiplyDecimal(dec(DEFAULTS.nullsMostPercent), { units: rows, scale: 0 }),
    ) > 0;
  const stopped = rarely && most;
  const severity: Severity = stopped ? 'error' : riseSeverity;
  const expected = `at most ${formatDecimal(limit)} points above ${wasShare} (run ${runId})`;
  const why = stopped
    ? `; it was null in at most ${DEFAULTS.nullsRarelyPercent}% of them and is now null in most: ` +
      'the upstream stopped filling it'
    : '';
  return {
    check_name: name,
    field,
    severity,
    passed: !rose && !stopped,
    observed,
    expected,
    message:
      `nulls:${field}: null in ${observed}, was ${wasShare} in run ${runId} ` +
      `(a rise of at most ${formatDecimal(limit)} points allowed)${why}`,
  };
}

function valueChecks(
  rule: ValueRule,
  now: FieldProfile | undefined,
  kind: 'id' | 'text' | 'decimal' | 'date' | undefined,
  today: string,
): CheckResult[] {
  const out: CheckResult[] = [];
  const { field, severity } = rule;
  const order = (a: string, b: string) =>
    kind === 'decimal'
      ? compareDecimal(parseDecimal(a) ?? dec('0'), parseDecimal(b) ?? dec('0'))
      : a < b
        ? -1
        : a > b
          ? 1
          : 0;
  for (const key of ['min', 'max'] as const) {
    const bound = rule[key] === 'today' ? today : rule[key];
    if (bound === undefined) continue;
    const observed = key === 'min' ? (now?.min_value ?? null) : (now?.max_value ?? null);
    const passed = observed === null || (key === 'min' ? order(observed, bound) >= 0 : order(observed, bound) <= 0);
    const expected = `${key === 'min' ? '>=' : '<='} ${bound}${rule[key] === 'today' ? ' (today)' : ''}`;
    out.push({
      check_name: `${key}:${field}`,
      field,
      severity,
      passed,
      observed,
      expected,
      message:
        `${key}:${field}: the ${key === 'min' ? 'smallest' : 'largest'} live value is ${observed ?? 'none'}, ` +
        `expected ${expected}`,
    });
  }
  if (rule.notNull) {
    const observed = now?.null_count ?? '0';
    out.push({
      check_name: `not_null:${field}`,
      field,
      severity,
      passed: observed === '0',
      observed,
      expected: '0',
      message: `not_null:${field}: ${observed} live row${observed === '1' ? ' has' : 's have'} no value, expected none`,
    });
  }
  return out;
}

/** The failed checks that refuse the run: error severity, not accepted by --accept-check. */
export function refusingChecks(checks: readonly CheckResult[], accepted: readonly string[]): CheckResult[] {
  return checks.filter((c) => !c.passed && c.severity === 'error' && !accepted.includes(c.check_name));
}

/** The refusal's message (sync_runs.error): each check with its field, observed and expected values. */
export function refusalMessage(refusing: readonly CheckResult[]): string {
  const each = refusing.map((c) => `check ${c.check_name} failed (error): ${c.message}`);
  const accept = refusing.map((c) => `--accept-check ${c.check_name}`).join(' ');
  return `${each.join('; ')}. Nothing was loaded. If the data is right, run again with ${accept}`;
}
