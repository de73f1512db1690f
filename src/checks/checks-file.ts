/**
 * SYNC_CHECKS_FILE: a YAML list under `checks:` that changes the built-in checks' thresholds and
 * severities, turns them off, and adds rules on values (docs/checks.md). Read with YAML's
 * failsafe schema, so every scalar is its text as written: a bound such as 0.1 reaches the check
 * with its exact digits. A problem is reported with the file, the line and the rule.
 */
import { readFileSync } from 'node:fs';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Node, type Pair } from 'yaml';

export type Severity = 'warn' | 'error';

interface RuleBase {
  /** 1-based line of the rule in the file (0: built in). */
  line: number;
  /** The rule as the file gives it, for messages: `total: inventory_bulk_wine`. */
  label: string;
}

/** `{volume: true, max_change_percent, severity}`, or `{volume: false}`: off. */
export interface VolumeRule extends RuleBase {
  kind: 'volume';
  off: boolean;
  maxChangePercent?: string;
  severity?: Severity;
}

/** `{total: FIELD, max_change_percent, severity}` (`off: true`: no total check for FIELD). */
export interface TotalRule extends RuleBase {
  kind: 'total';
  field: string;
  off: boolean;
  maxChangePercent?: string;
  severity?: Severity;
}

/** `{nulls: FIELD, max_increase_points, severity}` (`off: true`: no nulls check for FIELD). */
export interface NullsRule extends RuleBase {
  kind: 'nulls';
  field: string;
  off: boolean;
  maxIncreasePoints?: string;
  severity?: Severity;
}

/** `{field, min?, max?, not_null?, severity}`: checks min:FIELD, max:FIELD, not_null:FIELD. */
export interface ValueRule extends RuleBase {
  kind: 'value';
  field: string;
  /** Exact decimal text, `YYYY-MM-DD`, or `today` (dates). */
  min?: string;
  max?: string;
  notNull: boolean;
  severity: Severity;
}

export type CheckRule = VolumeRule | TotalRule | NullsRule | ValueRule;

export interface ChecksSettings {
  /** SYNC_CHECKS: off skips every check (the profile is still written). */
  enabled: boolean;
  /** SYNC_CHECKS_FILE, when set. */
  file: string | undefined;
  rules: CheckRule[];
}

const DECIMAL = /^-?\d+(\.\d+)?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const KEYS: Record<CheckRule['kind'], readonly string[]> = {
  volume: ['volume', 'max_change_percent', 'severity'],
  total: ['total', 'max_change_percent', 'severity', 'off'],
  nulls: ['nulls', 'max_increase_points', 'severity', 'off'],
  value: ['field', 'min', 'max', 'not_null', 'severity'],
};

/** A problem of the file: its text names the variable, the file, the line and the rule. */
export class ChecksFileProblem extends Error {}

/** Reads and checks SYNC_CHECKS_FILE; throws ChecksFileProblem. */
export function readChecksFile(path: string): CheckRule[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ChecksFileProblem(
      `SYNC_CHECKS_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  return parseChecks(text, path);
}

/** The rules of a checks file's text (`path` for messages). */
export function parseChecks(text: string, path: string): CheckRule[] {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, schema: 'failsafe', prettyErrors: false, uniqueKeys: true });
  const at = (node: Node | Pair | null | undefined): number => {
    const range = (node as { range?: [number, number, number] } | null)?.range;
    return range ? lines.linePos(range[0]).line : 1;
  };
  const problem = (line: number, why: string, rule?: string) =>
    new ChecksFileProblem(`SYNC_CHECKS_FILE: ${path} line ${line}${rule ? `, rule {${rule}}` : ''}: ${why}`);
  const error = doc.errors[0];
  if (error) throw problem(error.linePos?.[0].line ?? 1, `not valid YAML: ${error.message.split('\n')[0]}`);
  const root = doc.contents;
  if (root === null) return [];
  if (!isMap(root)) throw problem(at(root), 'the file must be a mapping with a `checks:` list');
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : '';
    if (key !== 'checks') throw problem(at(pair.key), `unknown key "${key}": the file has only \`checks:\``);
  }
  const list: unknown = root.get('checks', true);
  if (list == null || (isScalar(list) && (list.value === '' || list.value === null))) return [];
  if (!isSeq(list)) throw problem(at(list as Node), '`checks:` must be a list of rules');
  const rules: CheckRule[] = [];
  const names = new Map<string, number>();
  for (const item of list.items) {
    const line = at(item as Node);
    if (!isMap(item))
      throw problem(
        line,
        'a rule must be a mapping such as {total: inventory_bulk_wine, max_change_percent: 50, severity: warn}',
      );
    const values = new Map<string, { text: string; line: number }>();
    for (const pair of item.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : '';
      if (!isScalar(pair.value)) throw problem(at(pair.key as Node), `"${key}" must be a single value`);
      values.set(key, { text: String(pair.value.value ?? '').trim(), line: at(pair.key as Node) });
    }
    const label = [...values].map(([k, v]) => `${k}: ${v.text}`).join(', ');
    const kind: CheckRule['kind'] | undefined = values.has('volume')
      ? 'volume'
      : values.has('total')
        ? 'total'
        : values.has('nulls')
          ? 'nulls'
          : values.has('field')
            ? 'value'
            : undefined;
    if (kind === undefined) throw problem(line, 'a rule names one of field, total, nulls or volume', label);
    for (const [key, v] of values)
      if (!KEYS[kind].includes(key))
        throw problem(
          v.line,
          `unknown key "${key}" (a ${kind === 'value' ? 'field' : kind} rule has ${KEYS[kind].join(', ')})`,
          label,
        );
    const fail = (key: string, why: string) => problem(values.get(key)?.line ?? line, why, label);
    const text = (key: string) => values.get(key)?.text;
    const flag = (key: string): boolean | undefined => {
      const v = text(key);
      if (v === undefined) return undefined;
      if (v === 'true' || v === 'false') return v === 'true';
      throw fail(key, `${key} must be true or false`);
    };
    const severity = (required: boolean): Severity | undefined => {
      const v = text('severity');
      if (v === undefined) {
        if (required) throw problem(line, 'severity is missing (warn or error)', label);
        return undefined;
      }
      if (v !== 'warn' && v !== 'error') throw fail('severity', `severity must be warn or error, not "${v}"`);
      return v;
    };
    const amount = (key: string, required: boolean): string | undefined => {
      const v = text(key);
      if (v === undefined) {
        if (required) throw problem(line, `${key} is missing`, label);
        return undefined;
      }
      if (!DECIMAL.test(v) || v.startsWith('-')) throw fail(key, `${key} must be a number of 0 or more, not "${v}"`);
      return v;
    };
    const field = (key: string): string => {
      const v = text(key);
      if (!v) throw fail(key, `${key} must name a field`);
      return v;
    };
    let rule: CheckRule;
    if (kind === 'volume') {
      const on = flag('volume')!;
      rule = on
        ? {
            kind,
            line,
            label,
            off: false,
            maxChangePercent: amount('max_change_percent', true),
            severity: severity(true),
          }
        : { kind, line, label, off: true };
    } else if (kind === 'total' || kind === 'nulls') {
      const off = flag('off') === true;
      const key = kind === 'total' ? 'max_change_percent' : 'max_increase_points';
      const limit = off ? undefined : amount(key, true);
      const base = { line, label, field: field(kind), off, severity: off ? undefined : severity(true) };
      rule =
        kind === 'total' ? { kind, ...base, maxChangePercent: limit } : { kind, ...base, maxIncreasePoints: limit };
    } else {
      const bound = (key: 'min' | 'max') => {
        const v = text(key);
        if (v === undefined) return undefined;
        if (!DECIMAL.test(v) && !DATE.test(v) && v !== 'today')
          throw fail(key, `${key} must be a number, a date YYYY-MM-DD or today, not "${v}"`);
        return v;
      };
      const min = bound('min');
      const max = bound('max');
      const notNull = flag('not_null') === true;
      if (min === undefined && max === undefined && !notNull)
        throw problem(line, 'a field rule needs min, max or not_null: true', label);
      rule = { kind, line, label, field: field('field'), min, max, notNull, severity: severity(true)! };
    }
    for (const name of checkNames(rule)) {
      const first = names.get(name);
      if (first !== undefined) throw problem(line, `check ${name} is already set on line ${first}`, label);
      names.set(name, line);
    }
    rules.push(rule);
  }
  return rules;
}

/** The check names a rule sets (sync_run_checks.check_name). */
export function checkNames(rule: CheckRule): string[] {
  switch (rule.kind) {
    case 'volume':
      return ['volume'];
    case 'total':
      return [`total:${rule.field}`];
    case 'nulls':
      return [`nulls:${rule.field}`];
    case 'value':
      return [
        ...(rule.min === undefined ? [] : [`min:${rule.field}`]),
        ...(rule.max === undefined ? [] : [`max:${rule.field}`]),
        ...(rule.notNull ? [`not_null:${rule.field}`] : []),
      ];
  }
}

/**
 * The rule's problem with the fields the job profiles (a catalogue field, or a kept field typed numeric or
 * date); undefined when none.
 */
export function ruleFieldProblem(
  rule: CheckRule,
  fields: ReadonlyMap<string, 'id' | 'text' | 'decimal' | 'date'>,
): string | undefined {
  if (rule.kind === 'volume') return undefined;
  const kind = fields.get(rule.field);
  if (kind === undefined)
    return `unknown field "${rule.field}" (not in the catalogue, nor a kept field typed numeric or date)`;
  if (rule.kind === 'total' && kind !== 'decimal') return `total needs a numeric field; ${rule.field} is ${kind}`;
  if (rule.kind === 'value') {
    for (const key of ['min', 'max'] as const) {
      const v = rule[key];
      if (v === undefined) continue;
      if (kind !== 'decimal' && kind !== 'date')
        return `${key} needs a numeric or date field; ${rule.field} is ${kind}`;
      if (kind === 'decimal' && !DECIMAL.test(v))
        return `${key} of numeric field ${rule.field} must be a number, not "${v}"`;
      if (kind === 'date' && !DATE.test(v) && v !== 'today')
        return `${key} of date field ${rule.field} must be YYYY-MM-DD or today, not "${v}"`;
    }
  }
  return undefined;
}
