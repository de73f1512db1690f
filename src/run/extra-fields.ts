/**
 * One run's fields outside the catalogue (SYNC_EXTRA_FIELDS=keep): recorded in sync_fields in the
 * run's transaction (load/extra-fields.ts), described with where they are for the warning,
 * the summary and the webhook, and, after the commit, the BI views rendered again when sync_fields
 * changed them (db/bi-views.ts refreshBiViews).
 */
import type { Config } from '../config.js';
import { refreshBiViews } from '../db/bi-views.js';
import type { Pool, PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import { recordExtraFields, type KeptField } from '../load/extra-fields.js';
import { kindNames } from '../transform/extra-fields.js';
import type { FieldCounter } from '../transform/field-counts.js';
import type { NewField } from '../transform/schema-drift.js';

export class RunExtraFields {
  /** Where the run kept each field, once recorded; undefined before, with drop, or after a failure. */
  private kept: Map<string, KeptField> | undefined;

  constructor(private readonly config: Config) {}

  /**
   * Records the listing's extra fields in the run's transaction. True when the run kept any, so
   * that the BI views may need rendering again after the commit: a new column or type, or an
   * earlier refresh that failed (refreshBiViews does nothing when they are current).
   */
  async record(client: PoolClient, runId: string, counted: FieldCounter): Promise<boolean> {
    if (this.config.extraFields !== 'keep') return false;
    const seen = counted.unknownFields().map((f) => ({ ...f, kinds: kindNames(f.kinds) }));
    this.kept = await recordExtraFields(client, runId, seen);
    return this.kept.size > 0;
  }

  /** The run failed: nothing it recorded stays. */
  forget(): void {
    this.kept = undefined;
  }

  /** `found`, each with where this run kept it (once recorded). */
  describe(found: NewField[]): NewField[] {
    const bi = this.config.bi.schema;
    return found.map((f) => {
      const kept = this.kept?.get(f.name);
      return kept === undefined
        ? f
        : {
            ...f,
            kept: { shownAs: kept.column === null ? null : `${bi}.reconciliation.${kept.column}`, note: kept.note },
          };
    });
  }

  /** After the commit: the BI views with the new columns. A failure is a warning: the data is in. */
  async refreshViews(pool: Pool, log: Logger): Promise<void> {
    try {
      if (await refreshBiViews(pool, this.config.schema, this.config.bi))
        log.info({ biSchema: this.config.bi.schema }, 'BI views rendered again with the new fields');
    } catch (error) {
      log.warn(
        { err: error },
        `the BI views were not rendered again with the new fields (the next start or run will): ` +
          `${(error as Error).message}`,
      );
    }
  }
}
