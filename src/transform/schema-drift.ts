/**
 * Upstream schema drift: a listing's field counts against those of the last successful run.
 * A renamed or emptied optional field would otherwise load as NULL on every row, silently; here it
 * is named, with the new field that probably replaced it. Pure: the caller reads and writes runs.
 */
import { isKnownField, OPTIONAL_FIELDS, type FieldCounts, type KnownField } from '../fields.js';
import { shownName } from './field-name.js';

/** What the last successful (non-dry) run saw. */
export interface Baseline {
  runId: string;
  /** Null for a run recorded before field counts existed: nothing to compare shares with. */
  counts: FieldCounts | null;
  /** Its extra field names (from the counts, or sync_runs.unknown_fields for an older run). */
  unknownNames: ReadonlySet<string>;
}

/** The baseline from a sync_runs row; a run from before field counts has only its unknown_fields. */
export function baselineOf(
  run: { id: string; field_counts: FieldCounts | null; unknown_fields: string[] | null } | undefined,
): Baseline | undefined {
  if (!run) return undefined;
  const names = run.field_counts ? Object.keys(run.field_counts.unknown ?? {}) : (run.unknown_fields ?? []);
  // A run of an older version stored a long name whole: compared as it is shown now (field-name.ts).
  return { runId: run.id, counts: run.field_counts, unknownNames: new Set(names.map(shownName)) };
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
  /** A field of the catalogue, or a new field the baseline kept in extra_fields. */
  field: string;
  /** missing: no record has the key; empty: some have it, none with a value. */
  kind: 'missing' | 'empty';
  /** Share of the baseline's records that had it (missing) or had a value (empty). */
  before: number;
  /** Share of this listing's records that have the key (0 when missing). */
  presentNow: number;
  /** New extra fields with a similar count, most similar first. */
  renames: Array<{ name: string; count: number }>;
}

/**
 * The guarded fields that disappeared since the baseline; empty on a first run or an empty listing.
 * With `extraFields` (SYNC_EXTRA_FIELDS=keep), the fields outside the catalogue are guarded too:
 * one that the baseline saw in at least half its records must not vanish silently either.
 */
export function findDisappeared(
  baseline: Baseline | undefined,
  now: FieldCounts,
  { extraFields = false } = {},
): Disappeared[] {
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
    found.push({
      field,
      kind,
      before: share,
      presentNow: is.present / now.records,
      renames: similarNewFields(baseline, now, share),
    });
  }
  // A listing that named too many extra fields to count them all proves no absence.
  if (!extraFields || now.unknown_truncated) return found;
  for (const [field, count] of Object.entries(before.unknown ?? {})) {
    const share = count / before.records;
    if (share < EXPECTED_SHARE || Object.hasOwn(now.unknown, shownName(field))) continue;
    // A kept field that this release added to the catalogue (docs/internals.md, "Adding a field"):
    // present among the known fields now, not gone.
    if (isKnownField(field) && (now.fields[field as KnownField]?.present ?? 0) > 0) continue;
    found.push({
      field,
      kind: 'missing',
      before: share,
      presentNow: 0,
      renames: similarNewFields(baseline, now, share),
    });
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

/** An upstream field no earlier successful run saw, the records carrying it, and where its values are. */
export interface NewField {
  name: string;
  count: number;
  /** Set when its values are kept in extra_fields (SYNC_EXTRA_FIELDS=keep, the run succeeded). */
  kept?: {
    /** Its column in the BI views, e.g. `bi.reconciliation.inventory_in_transit`; null when none. */
    shownAs: string | null;
    /** Why it has no column. */
    note: string | null;
  };
}

/**
 * "new field inventoryInTransit in 3016 records: kept in extra_fields, shown as
 * bi.reconciliation.inventory_in_transit" (or "kept in extra_fields only (why)", or "not loaded").
 * The name is as the field counter keeps it: a long one already shortened (field-name.ts).
 */
export function describeNewField(f: NewField): string {
  const name = shownName(f.name);
  const where =
    f.kept === undefined
      ? 'not loaded'
      : f.kept.shownAs !== null
        ? `kept in extra_fields, shown as ${f.kept.shownAs}`
        : `kept in extra_fields only${f.kept.note === null ? '' : ` (${f.kept.note})`}`;
  return `new field ${name} in ${f.count} records: ${where}`;
}

/** New fields named one by one in a warning; the rest are counted. */
const LISTED = 10;

/** The lines that announce new fields: the first LISTED of them, then how many more there are. */
export function listNewFields(fields: readonly NewField[]): string[] {
  const lines = fields.slice(0, LISTED).map(describeNewField);
  const rest = fields.slice(LISTED);
  if (rest.length === 0) return lines;
  // The fields not named may be the ones without a column (the cap): say so, and why.
  const only = rest.filter((f) => f.kept !== undefined && f.kept.shownAs === null);
  const why = [...new Set(only.map((f) => f.kept!.note).filter((n) => n !== null))];
  lines.push(
    `and ${rest.length} more new fields${
      only.length === 0
        ? ''
        : `,
      ${only.length} of them kept in extra_fields only (${why.join('; ')})`
    }`,
  );
  return lines;
}

/** Unknown fields of this listing that the baseline did not see (all of them on a first run), most frequent first. */
export function newFields(baseline: Baseline | undefined, now: FieldCounts): NewField[] {
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
        : `${d.field} has no value in any of the ${records} records (present in ${share(d.presentNow)}, ` +
          `but null or empty; it had a value in ${share(d.before)} of run ${baselineRunId}'s)`;
    if (d.renames.length === 0) return what;
    if (d.renames.length === 1)
      return (
        `${what}; a new field ${d.renames[0]!.name} appeared in ${d.renames[0]!.count} records — the ` +
        `upstream may have renamed it`
      );
    return (
      `${what}; new fields ${listCounts(d.renames)} appeared with a similar count — the upstream may ` +
      `have renamed it`
    );
  });
  return parts.join('; ');
}

/**
 * The guard's error: what changed, that nothing was loaded, and how to accept the change; with
 * `extraFields`, what accepting it does to the fields: a field of the catalogue loads as NULL, and
 * the values of a new field (a likely rename) are kept in extra_fields.
 */
export function schemaChangeRefusal(
  description: string,
  found: readonly Disappeared[] = [],
  { extraFields = false } = {},
): string {
  const accept = 'If the change is intended, run again with --accept-schema-change';
  if (!extraFields) return `${description}. Nothing was loaded. ${accept}.`;
  const known = found.filter((d) => (GUARDED_FIELDS as readonly string[]).includes(d.field)).map((d) => d.field);
  const renames = [...new Set(found.flatMap((d) => d.renames.map((r) => r.name)))];
  const effects = [
    ...(known.length > 0 ? [`${known.join(', ')} then ${known.length === 1 ? 'loads' : 'load'} as NULL`] : []),
    ...(renames.length > 0 ? [`the values of ${renames.join(', ')} are kept in extra_fields`] : []),
  ];
  return `${description}. Nothing was loaded. ${accept}${effects.length > 0 ? `: ${effects.join(', and ')}` : ''}.`;
}

/**
 * Why a listing was rejected, for the reject-ratio guard: "id: required (3016); new fields in
 * this listing: record_id (3016)".
 */
export function explainRejects(
  reasons: ReadonlyArray<{ reason: string; count: number }>,
  added: ReadonlyArray<{ name: string; count: number }>,
): string {
  const parts = reasons.map((r) => `${r.reason} (${r.count})`);
  if (added.length > 0)
    parts.push(
      `new fields in this listing: ${listCounts(added.slice(0, 5))}` +
        `${added.length > 5 ? ` and ${added.length - 5} more` : ''}`,
    );
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
