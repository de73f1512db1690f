/**
 * The checks a run makes before it writes anything to the data tables: the envelope agrees with
 * itself, the reject ratio and the mass-delete ratio stay under their settings. Each throws the
 * error that fails the run, with a sentence a person can act on; none of them touches the database.
 */
import { GuardError, InvalidListingError } from '../errors.js';
import type { ListingEnvelope } from '../extract/json/listing-types.js';

export function checkEnvelope(envelope: ListingEnvelope): void {
  if (envelope.recordsType !== 'array') {
    throw new InvalidListingError(
      `listing has no "bulk_wine_reconciliation" array (found ${envelope.recordsType}; top-level keys: ` +
        `${envelope.topLevelKeys.join(', ') || 'none'}); nothing was loaded`,
    );
  }
  const count = integerText(envelope.scalars.count);
  const recordCount = integerText(envelope.scalars.recordCount);
  const length = String(envelope.recordCount);
  if (count !== length || recordCount !== length) {
    throw new InvalidListingError(
      `listing envelope disagrees with itself: count=${shown(envelope.scalars.count)}, ` +
        `recordCount=${shown(envelope.scalars.recordCount)}, array length=${length}; nothing was loaded`,
    );
  }
}

/** `why`: the top reasons and new fields, computed by the caller only when the guard trips. */
export function checkRejectRatio(
  tally: { received: number; rejected: number },
  maxRejectRatio: number,
  runId: string,
  why: () => string,
): void {
  const { received, rejected } = tally;
  if (received > 0 && rejected / received > maxRejectRatio) {
    throw new GuardError(
      'REJECT_THRESHOLD',
      `${rejected} of ${received} records rejected (${percent(rejected / received)}): ${why()}. Above ` +
        `SYNC_MAX_REJECT_RATIO=${maxRejectRatio}, so nothing was loaded (see sync_rejects for run ${runId})`,
    );
  }
}

export function checkDeletes(
  change: { deleted: number; liveBefore: number; validRecords: number },
  maxDeleteRatio: number,
  allowMassDelete: boolean,
): void {
  const { deleted, liveBefore } = change;
  if (deleted === 0 || allowMassDelete) return;
  const emptyListing = change.validRecords === 0;
  if (emptyListing || deleted / liveBefore > maxDeleteRatio) {
    throw new GuardError(
      'MASS_DELETE',
      `refusing to soft-delete ${deleted} of ${liveBefore} live rows ` +
        `(${percent(deleted / liveBefore)}${emptyListing ? ', the listing has no valid records' : ''}), ` +
        `above SYNC_MAX_DELETE_RATIO=${maxDeleteRatio}; nothing was changed. If the upstream really ` +
        `removed them, run again with --allow-mass-delete`,
    );
  }
}

/** A JSON integer as exact text ("12"), or undefined. */
export function integerText(value: unknown): string | undefined {
  return typeof value === 'string' && /^-?(0|[1-9]\d*)$/.test(value) && value.length <= 19 ? value : undefined;
}

/** An envelope value as sent: numbers arrive as their exact text. */
function shown(value: unknown): string {
  if (value === undefined) return '(missing)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}
