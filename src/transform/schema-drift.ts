/**
 * Upstream schema drift: a listing's field counts against those of the last successful run.
 * A renamed or emptied optional field would otherwise load as NULL on every row, silently; here it
 * is named, with the new field that probably replaced it. Pure: the caller reads and writes runs.
 */
import { OPTIONAL_FIELDS, type FieldCounts, type KnownField } from '../fields.js';

/** What the last successful (non-dry) run saw. */
export interface Baseline {
  runId: string;
  /** Null for a run recorded before field counts existed: nothing to compare shares with. */
  counts: FieldCounts | null;
  /** Its unknown field names (from the counts, or sync_runs.unknown_fields for an older run). */
  unknownNames: ReadonlySet<string>;
}

/** The baseline from a sync_runs row; a run from before field counts has only its unknown_fields. */
export function baselineOf(run: { id: string; field_counts: FieldCounts | null; unknown_fields: string[] | null } | undefined): Baseline | undefined {
  if (!run) return undefined;
  const names = run.field_counts ? Object.keys(run.field_counts.unknown ?? {}) : (run.unknown_fields ?? []);
  return { runId: run.id, counts: run.field_counts, unknownNames: new Set(names) };
}

/**
 * Only optional fields can be blanked silently: a record without id or wpi is rejected, and the
 * reject-ratio guard explains that (see explainRejects).
 */
export const GUARDED_FIELDS: readonly KnownField[] = OPTIONAL_FIELDS;

/** A field the last run saw in at least this share of its records is expected to stay. */
const EXPECTED_SHARE = 0.5;
/** A new field is a likely rename when its share now is within this factor of the old field's share. */
const SIMILAR = 1.25;

export interface Disappeared {
  field: KnownField;
  /** missing: no record has the key; empty: some have it, none with a value. */
  kind: 'missing' | 'empty';
  /** Share of the baseline's records that had it (missing) or had a value (empty). */
  before: number;
  /** Share of this listing's records that have the key (0 when missing). */
  presentNow: number;
  /** New unknown fields with a similar count, most similar first. */
  renames: Array<{ name: string; count: number }>;
}

/** The guarded fields that disappeared since the baseline; empty on a first run or an empty listing. */
export function findDisappeared(baseline: Baseline | undefined, now: FieldCounts): Disappeared[] {
  const before = baseline?.counts;
  if (!before || !(before.records > 0) || now.records === 0) return [];
  const found: Disappeared[] = [];
  for (const field of GUARDED_FIELDS) {
    const was = before.fields?.[field];
    const is = now.fields[field];
    if (!was) continue;
    const presentBefore = was.present / before.records;
    const valuedBefore = was.non_null / before.records;
    let kind: Disappeared['kind'] | undefined;
    let share = 0;
    if (is.present === 0 && presentBefore >= EXPECTED_SHARE) [kind, share] = ['missing', presentBefore];
    else if (is.non_null === 0 && valuedBefore >= EXPECTED_SHARE) [kind, share] = ['empty', valuedBefore];
    if (kind === undefined) continue;
    found.push({ field, kind, before: share, presentNow: is.present / now.records, renames: similarNewFields(baseline!, now, share) });
  }
  return found;
}

function similarNewFields(baseline: Baseline, now: FieldCounts, share: number): Array<{ name: string; count: number }> {
  return newFields(baseline, now)
    .filter(({ count }) => {
      const ratio = count / now.records / share;
      return ratio >= 1 / SIMILAR && ratio <= SIMILAR;
    })
    .sort((a, b) => Math.abs(a.count / now.records - share) - Math.abs(b.count / now.records - share))
    .slice(0, 3);
}

/** Unknown fields of this listing that the baseline did not see (all of them on a first run), most frequent first. */
export function newFields(baseline: Baseline | undefined, now: FieldCounts): Array<{ name: string; count: number }> {
  return Object.entries(now.unknown)
    .filter(([name]) => !baseline?.unknownNames.has(name))
    .map(([name, count]) => ({ name, count }))
    .sort((a, b) => b.count - a.count || (a.name < b.name ? -1 : 1));
}

/**
 * E.g. "inventory_sales is missing from all 3016 records (present in 100% of run 41's); a new field
 * inventorySales appeared in 3016 records — the upstream may have renamed it".
 */
export function describeDisappeared(found: readonly Disappeared[], baselineRunId: string, records: number): string {
  const parts = found.map((d) => {
    const what =
      d.kind === 'missing'
        ? `${d.field} is missing from all ${records} records (present in ${share(d.before)} of run ${baselineRunId}'s)`
        : `${d.field} has no value in any of the ${records} records (present in ${share(d.presentNow)}, but null or empty; it had a value in ${share(d.before)} of run ${baselineRunId}'s)`;
    if (d.renames.length === 0) return what;
    if (d.renames.length === 1) return `${what}; a new field ${d.renames[0]!.name} appeared in ${d.renames[0]!.count} records — the upstream may have renamed it`;
    return `${what}; new fields ${listCounts(d.renames)} appeared with a similar count — the upstream may have renamed it`;
  });
  return parts.join('; ');
}

/** The guard's error: what changed, that nothing was loaded, and how to accept the change. */
export function schemaChangeRefusal(description: string): string {
  return `${description}. Nothing was loaded. If the change is intended, run again with --accept-schema-change.`;
}

/**
 * Why a listing was rejected, for the reject-ratio guard: "id: required (3016); new fields in
 * this listing: record_id (3016)".
 */
export function explainRejects(reasons: ReadonlyArray<{ reason: string; count: number }>, added: ReadonlyArray<{ name: string; count: number }>): string {
  const parts = reasons.map((r) => `${r.reason} (${r.count})`);
  if (added.length > 0) parts.push(`new fields in this listing: ${listCounts(added.slice(0, 5))}${added.length > 5 ? ` and ${added.length - 5} more` : ''}`);
  return parts.join('; ');
}

function listCounts(items: ReadonlyArray<{ name: string; count: number }>): string {
  return items.map((i) => `${i.name} (${i.count})`).join(', ');
}

/** 1 -> "100%", 0.995 -> "99.5%": never rounds up to a whole 100%. */
export function share(ratio: number): string {
  const tenths = Math.floor(ratio * 1000 + 1e-9) / 10;
  return Number.isInteger(tenths) ? `${tenths}%` : `${tenths.toFixed(1)}%`;
}
