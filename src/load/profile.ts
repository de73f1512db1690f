/**
 * The run's exact profile (sync_run_profiles): per field, the live rows after the run, its nulls,
 * and for numeric fields the exact sum, for numeric and date fields the smallest and largest value
 * as stored. Always what an aggregate over the live table gives; how it is kept cheap without
 * reading every row is in docs/internals.md ("The run's profile").
 */
import type { QueryResult, QueryResultRow } from 'pg';
import type { PoolClient } from '../db/pool.js';
import { fillPlaceholders, loadStatements, timedQuery } from '../db/statements.js';
import { FIELDS } from '../fields.js';
import type { Logger } from '../log.js';
import {
  addDecimal,
  compareDecimal,
  formatDecimal,
  parseDecimal,
  subtractDecimal,
  type Decimal,
} from '../text/exact-decimal.js';
import type { ChangeCounts } from './apply.js';

const SQL = loadStatements('load/profile.sql', [
  'profiled_extras',
  'live_values',
  'replaced_values',
  'written_values',
  'base_profile',
  'store_profile',
]);

/** How a profiled field is aggregated: a sum for decimals, min and max for decimals and dates. */
export type ProfileKind = 'id' | 'text' | 'decimal' | 'date';

export interface ProfiledField {
  name: string;
  kind: ProfileKind;
  /** A member of extra_fields (its name is the upstream's), not a column. */
  extra: boolean;
}

/** One row of sync_run_profiles; counts and the total as text (exact). */
export interface FieldProfile {
  field: string;
  row_count: string;
  null_count: string;
  total: string | null;
  min_value: string | null;
  max_value: string | null;
}

/**
 * `carried`: the run changed no row, the base profile is the answer; `incremental`: the base
 * updated from the rows the run changed; `full`: an aggregate over every live row (for some or
 * all fields).
 */
export type ProfileMethod = 'carried' | 'incremental' | 'full';

export interface ProfileResult {
  fields: ProfiledField[];
  profile: FieldProfile[];
  method: ProfileMethod;
  /** Fields aggregated over every live row (all of them for `full`). */
  fullFields: string[];
}

/** The catalogue's fields, then the kept fields outside it that every value seen types numeric or date. */
export async function profiledFields(client: Queryable, log?: Logger): Promise<ProfiledField[]> {
  const catalogue: ProfiledField[] = FIELDS.map((f) => ({ name: f.name, kind: f.kind, extra: false }));
  const started = Date.now();
  const { rows } = await client.query<{ name: string; bi_kind: string }>(SQL.profiled_extras);
  log?.debug({ statement: 'profiled_extras', rows: rows.length, ms: Date.now() - started }, 'statement done');
  const extras = rows.map((r): ProfiledField => ({
    name: r.name,
    kind: r.bi_kind === 'number' ? 'decimal' : 'date',
    extra: true,
  }));
  return [...catalogue, ...extras];
}

/**
 * The {{values}} and {{aggregates}} of sql/load/profile.sql for `fields`, and the parameters they use
 * (extra members' names). Each value is computed once per row (v<i>), then aggregated.
 */
export function renderAggregates(fields: readonly ProfiledField[]): {
  values: string;
  aggregates: string;
  params: string[];
} {
  const params: string[] = [];
  const values = fields.map((f, i) => {
    if (!f.extra) return `t.${f.name} AS v${i}`; // catalogue names are checked SQL identifiers (fields.ts)
    params.push(f.name);
    const member = `t.extra_fields -> $${params.length}::text`;
    return f.kind === 'decimal'
      ? `CASE WHEN jsonb_typeof(${member}) = 'number' THEN (${member})::numeric END AS v${i}`
      : `CASE WHEN jsonb_typeof(${member}) = 'string' THEN sync_extra_date(${member} #>> '{}') END AS v${i}`;
  });
  const parts = fields.map((f, i) => {
    const e = `v.v${i}`;
    const out = [`count(*) FILTER (WHERE ${e} IS NULL) AS n${i}`];
    if (f.kind === 'decimal')
      out.push(`sum(${e})::text AS s${i}`, `min(${e})::text AS lo${i}`, `max(${e})::text AS hi${i}`);
    if (f.kind === 'date')
      out.push(`to_char(min(${e}), 'YYYY-MM-DD') AS lo${i}`, `to_char(max(${e}), 'YYYY-MM-DD') AS hi${i}`);
    return out.map((p) => `,\n       ${p}`).join('');
  });
  return { values: values.join(', '), aggregates: parts.join(''), params };
}

type Aggregate = Record<string, string | null>;
/** The run's connection (in its transaction) or the pool (after it). */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

async function aggregate(
  client: PoolClient,
  statement: 'live_values' | 'replaced_values' | 'written_values',
  fields: readonly ProfiledField[],
  log?: Logger,
): Promise<Aggregate> {
  const { values, aggregates, params } = renderAggregates(fields);
  const sql = fillPlaceholders(SQL[statement], { values, aggregates }, `sql/load/profile.sql ${statement}`);
  return (await timedQuery<Aggregate>(client, `profile ${statement}`, sql, params, log)).rows[0]!;
}

/** The profile of `fields` from an aggregate row (`live_values`). */
function fromAggregate(fields: readonly ProfiledField[], a: Aggregate): FieldProfile[] {
  return fields.map((f, i) => ({
    field: f.name,
    row_count: a.c!,
    null_count: a[`n${i}`]!,
    total: f.kind === 'decimal' ? canonicalTotal(a[`s${i}`] ?? null) : null,
    min_value: a[`lo${i}`] ?? null,
    max_value: a[`hi${i}`] ?? null,
  }));
}

/** A sum's text without trailing zeros (its value, as sum() gives it: null when no value is). */
function canonicalTotal(sum: string | null): string | null {
  if (sum === null) return null;
  const d = parseDecimal(sum);
  return d === undefined ? sum : formatDecimal(d);
}

/** Every field aggregated over every live row. */
export async function fullProfile(
  client: PoolClient,
  fields: readonly ProfiledField[],
  log?: Logger,
): Promise<FieldProfile[]> {
  if (fields.length === 0) return [];
  return fromAggregate(fields, await aggregate(client, 'live_values', fields, log));
}

export async function baseProfile(client: PoolClient, runId: string, log?: Logger): Promise<FieldProfile[]> {
  return (await timedQuery<FieldProfile>(client, 'base_profile', SQL.base_profile, [runId], log)).rows;
}

export interface ProfileRun {
  /** The last successful run that committed: its stored profile is the starting point. */
  baseRunId: string | undefined;
  /**
   * The live rows are provably as runs left them (fingerprints/shortcut.ts tableAsRunsLeftIt) and the
   * run wrote nothing but classified changes (no first load, no backfill).
   */
  trusted: boolean;
  changes: Pick<ChangeCounts, 'liveBefore' | 'inserted' | 'updated' | 'deleted' | 'restored'>;
}

/**
 * The profile after the run's changes, inside its transaction. From the base run's profile when it
 * still describes the live rows as this run found them (trusted, as many rows as it says), carried
 * or updated from the changed rows; any field without a trusted base is aggregated in full.
 */
export async function profileAfterRun(client: PoolClient, run: ProfileRun, log?: Logger): Promise<ProfileResult> {
  const fields = await profiledFields(client, log);
  const all = async (): Promise<ProfileResult> => ({
    fields,
    profile: await fullProfile(client, fields, log),
    method: 'full',
    fullFields: fields.map((f) => f.name),
  });
  if (!run.trusted || run.baseRunId === undefined) return all();
  const base = new Map((await baseProfile(client, run.baseRunId, log)).map((p) => [p.field, p]));
  const live = String(run.changes.liveBefore);
  const based = fields.filter((f) => base.get(f.name)?.row_count === live);
  const fresh = fields.filter((f) => !based.includes(f));
  const { inserted, updated, deleted, restored } = run.changes;
  let profile: Map<string, FieldProfile>;
  let method: ProfileMethod;
  let recompute: ProfiledField[] = [];
  if (inserted + updated + deleted + restored === 0) {
    profile = new Map(based.map((f) => [f.name, base.get(f.name)!]));
    method = 'carried';
  } else {
    const replaced = await aggregate(client, 'replaced_values', based, log);
    const written = await aggregate(client, 'written_values', based, log);
    if (Number(replaced.c) !== updated + deleted || Number(written.c) !== inserted + updated + restored) {
      log?.warn(
        { replaced: replaced.c, written: written.c, changes: run.changes },
        'profile: the changed rows did not add up; aggregated in full',
      );
      return all();
    }
    const updatedProfile = combine(based, base, replaced, written);
    if (updatedProfile === undefined) return all();
    profile = updatedProfile.profile;
    recompute = updatedProfile.recompute;
    method = 'incremental';
  }
  const again = [...fresh, ...recompute];
  for (const p of await fullProfile(client, again, log)) profile.set(p.field, p);
  const result = fields.map((f) => profile.get(f.name)!);
  if (method === 'carried' && again.length > 0) method = 'incremental';
  return {
    fields,
    profile: result,
    method: again.length === fields.length ? 'full' : method,
    fullFields: again.map((f) => f.name),
  };
}

/**
 * The base profile plus what the run wrote, less what it replaced. A minimum (maximum) that a
 * replaced value held may be gone: unless a written value is as small (large), that field is
 * aggregated again (`recompute`). Undefined when a value is not a plain decimal (NaN, Infinity
 * written by hand): the caller aggregates in full.
 */
function combine(
  fields: readonly ProfiledField[],
  base: ReadonlyMap<string, FieldProfile>,
  replaced: Aggregate,
  written: Aggregate,
): { profile: Map<string, FieldProfile>; recompute: ProfiledField[] } | undefined {
  const profile = new Map<string, FieldProfile>();
  const recompute: ProfiledField[] = [];
  const rows = BigInt(base.get(fields[0]?.name ?? '')?.row_count ?? '0') - BigInt(replaced.c!) + BigInt(written.c!);
  for (const [i, f] of fields.entries()) {
    const b = base.get(f.name)!;
    const nulls = BigInt(b.null_count) - BigInt(replaced[`n${i}`]!) + BigInt(written[`n${i}`]!);
    const next: FieldProfile = {
      field: f.name,
      row_count: String(rows),
      null_count: String(nulls),
      total: null,
      min_value: null,
      max_value: null,
    };
    if (f.kind === 'decimal') {
      const parts = [b.total ?? '0', replaced[`s${i}`] ?? '0', written[`s${i}`] ?? '0'].map(parseDecimal);
      if (parts.some((p) => p === undefined)) return undefined;
      const [t, r, w] = parts as Decimal[];
      next.total = nulls === rows ? null : formatDecimal(addDecimal(subtractDecimal(t!, r!), w!));
    }
    if (f.kind === 'decimal' || f.kind === 'date') {
      const compare = f.kind === 'decimal' ? decimalOrder : dateOrder;
      const lo = extreme(b.min_value, replaced[`lo${i}`] ?? null, written[`lo${i}`] ?? null, compare);
      const hi = extreme(b.max_value, replaced[`hi${i}`] ?? null, written[`hi${i}`] ?? null, (x, y) => {
        const c = compare(x, y);
        return c === undefined ? undefined : -c;
      });
      if (lo === 'invalid' || hi === 'invalid') return undefined;
      if (lo === 'again' || hi === 'again') recompute.push(f);
      else {
        next.min_value = lo;
        next.max_value = hi;
      }
    }
    profile.set(f.name, next);
  }
  return { profile, recompute };
}

type Order = (a: string, b: string) => number | undefined;

function decimalOrder(a: string, b: string): number | undefined {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  return x === undefined || y === undefined ? undefined : compareDecimal(x, y);
}

/** YYYY-MM-DD (to_char): in text order for years 0001-9999; another length is not compared. */
function dateOrder(a: string, b: string): number | undefined {
  if (a.length !== 10 || b.length !== 10) return undefined;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The smallest value (by `order`) after replacing values whose smallest is `gone` and writing
 * values whose smallest is `added`, from the smallest before, `was`; `again` when it cannot be
 * known without reading the rows (the smallest was replaced, and nothing written is as small).
 */
function extreme(
  was: string | null,
  gone: string | null,
  added: string | null,
  order: Order,
): string | null | 'again' | 'invalid' {
  if (gone !== null && was !== null) {
    const c = order(gone, was);
    if (c === undefined) return 'invalid';
    if (c <= 0) {
      if (added === null) return 'again';
      const d = order(added, was);
      if (d === undefined) return 'invalid';
      return d <= 0 ? added : 'again';
    }
  } else if (gone !== null) return 'again'; // a value was replaced that the base did not know: not trusted
  if (was === null) return added;
  if (added === null) return was;
  const c = order(added, was);
  if (c === undefined) return 'invalid';
  return c < 0 ? added : was;
}

/** Stores the profile of `runId` on `client` (the run's transaction, or after its rollback). */
export async function storeProfile(
  client: Queryable,
  runId: string,
  profile: readonly FieldProfile[],
  log?: Logger,
): Promise<void> {
  if (profile.length === 0) return;
  const started = Date.now();
  await client.query(SQL.store_profile, [
    runId,
    profile.map((p) => p.field),
    profile.map((p) => p.row_count),
    profile.map((p) => p.null_count),
    profile.map((p) => p.total),
    profile.map((p) => p.min_value),
    profile.map((p) => p.max_value),
  ]);
  log?.debug({ statement: 'store_profile', rows: profile.length, ms: Date.now() - started }, 'statement done');
}
