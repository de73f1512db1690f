/**
 * One run's work, in named phases, all in ONE transaction on the run's connection:
 * extract -> begin -> prepare the shortcut -> stage -> guard -> settle duplicates -> classify and
 * apply -> count BI rounding -> new fields -> profile and checks -> archive -> commit. runSync (sync.ts)
 * adds lock and audit.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { cancelStatement, type RunLock } from '../db/lock.js';
import type { PoolClient } from '../db/pool.js';
import { GuardError } from '../errors.js';
import { runDirFault, spoolFault } from '../extract/http/spool-fault.js';
import type { Logger } from '../log.js';
import { applyChanges, classifyChanges, keepRejected, type ChangeCounts } from '../load/apply.js';
import { deleteRejects, insertRejects, lastSuccess, type RunCounts, type RunStatus } from '../load/audit.js';
import { countRunBiRounding, type BiRounding } from '../load/bi-rounding.js';
import { LockWaitWatch } from '../load/lock-wait.js';
import { stageRows } from '../load/staging.js';
import type { FieldCounts } from '../fields.js';
import {
  baselineOf,
  describeDisappeared,
  explainRejects,
  findDisappeared,
  listNewFields,
  newFields,
  schemaChangeRefusal,
  type Baseline,
  type NewField,
} from '../transform/schema-drift.js';
import { UnchangedShortcut } from '../fingerprints/shortcut.js';
import { programTrustKey } from '../fingerprints/trust-key.js';
import { FirstLoad } from './first-load.js';
import { checkDeletes, checkEnvelope, checkRejectRatio, integerText } from './guards.js';
import { settleDuplicates } from './duplicates.js';
import { openListing, type ListingSource } from './listing-source.js';
import { RunExtraFields } from './extra-fields.js';
import { RunArchive } from './run-archive.js';
import { RunChecks } from './run-checks.js';
import { PhaseTimer } from './phase-timer.js';
import {
  fileChunks,
  listingCopyLines,
  newTally,
  recordFastPaths,
  topReasons,
  type FastPaths,
  type ListingTally,
} from './pipeline.js';
import { idleTimeoutMs, type SyncDeps, type SyncRequest } from './request.js';

export class Run {
  private tally: ListingTally = newTally();
  private duplicates = 0;
  private skipped = 0;
  private applied: ChangeCounts | undefined;
  /** Live rows kept as their last valid version: their record was rejected (keepRejected). */
  private kept = 0;
  bi: BiRounding | undefined;
  private tmp: string | undefined;
  private baseline: Baseline | undefined;
  /** A first load: rows COPYed straight into the table (first-load.ts); undefined on the staging path. */
  private firstLoad: FirstLoad | undefined;
  /** The listing's fields outside the catalogue: where the run kept them. */
  private readonly extraFields: RunExtraFields;
  /** Who blocks any of the run's connections, should a lock wait time out (SYNC_LOCK_TIMEOUT_MS). */
  private readonly lockWait: LockWaitWatch;
  /** Each phase's wall time, stored with the run (sync_runs.phases). */
  readonly phases = new PhaseTimer();
  /** The run's profile and its checks (run-checks.ts). */
  readonly checks: RunChecks;

  constructor(
    private readonly config: Config,
    private readonly deps: SyncDeps & { signal: AbortSignal; log: Logger },
    private readonly request: SyncRequest,
    private readonly runId: string,
    private readonly client: PoolClient,
    /** Held by sync.ts for the whole run; checked before the run commits. */
    private readonly lock: Pick<RunLock, 'check'>,
  ) {
    this.extraFields = new RunExtraFields(config);
    this.checks = new RunChecks(config, runId, request.acceptChecks ?? []);
    this.lockWait = new LockWaitWatch(deps.pool, config.lockTimeoutMs);
  }

  async execute(): Promise<void> {
    const prefix = join(this.deps.tmpDir ?? tmpdir(), `wine-recon-sync-${this.runId}-`);
    this.tmp = await mkdtemp(prefix).catch((error: unknown) => {
      throw spoolFault(error, join(prefix, 'listing.json'), 0) ?? error;
    });
    const cancel = () => void this.cancelStatement();
    this.deps.signal.addEventListener('abort', cancel, { once: true });
    const { lockWait } = this;
    lockWait.start();
    // The live rows are read while the download starts. A re-sync's parse needs them (its record
    // hook decides with them): it follows the read as it follows the spool file.
    const log = this.deps.log.child({ step: 'load' });
    const shortcut = UnchangedShortcut.prepare(
      this.deps.pool,
      this.deps.signal,
      { dir: this.tmp, log, onConnection: (pid) => lockWait.watch(pid) },
      programTrustKey(this.config.extraFields),
    );
    shortcut.catch(() => undefined); // awaited in load(); a failure surfaces there
    let source: ListingSource | undefined;
    try {
      // The upstream's gzip body is kept only when the run may archive: otherwise it is written for nothing.
      source = openListing(this.request.source, this.deps, this.tmp, { keepGzip: this.archives() });
      await this.load(source, shortcut);
    } catch (error) {
      throw runDirFault(error, this.tmp) ?? error;
    } finally {
      lockWait.stop();
      this.deps.signal.removeEventListener('abort', cancel);
      source?.stop();
      await source?.ready.catch(() => undefined); // the spool file closed before the temp dir is removed
      // Its connection back in the pool before the run ends, its file closed before the temp dir goes.
      await (await shortcut.catch(() => undefined))?.close();
      // A first load's files, if the run stopped while writing them.
      await this.firstLoad?.discard().catch(() => undefined);
      await rm(this.tmp, { recursive: true, force: true });
    }
  }

  /**
   * Everything after the download starts, in the run's one transaction; rolled back on any
   * failure. With a download, the transaction is open while the listing streams in: a slow
   * upstream holds it open longer (the data tables are only read until the changes are applied),
   * within SYNC_RUN_TIMEOUT_MS.
   */
  private async load(source: ListingSource, reading: Promise<UnchangedShortcut>): Promise<void> {
    const { lockWait } = this;
    const log = this.deps.log.child({ step: 'load' });
    const last = await lastSuccess(this.deps.pool);
    this.baseline = baselineOf(last);
    // Written beside the run, on a connection of its own (run-archive.ts), watched for lock waits
    // like the run's; the upstream's own gzip once `mayArchive` says this is a re-sync, or the parse is over.
    let mayArchive!: () => void;
    const gate = new Promise<void>((resolve) => (mayArchive = resolve));
    const { pool } = this.deps;
    const archiving = source.ready.then((listing) =>
      this.archives()
        ? RunArchive.start(
            pool,
            { runId: this.runId, listing, dir: this.tmp!, lockTimeoutMs: this.config.lockTimeoutMs, gate },
            log,
            (pid) => lockWait.watch(pid),
          )
        : undefined,
    );
    archiving.catch(() => undefined); // awaited below; a failure surfaces there
    try {
      const t = this.phases;
      const kind = this.request.source.kind;
      // These two only time their phase: the promises themselves are awaited below, where a failure surfaces.
      void t
        .time(kind === 'api' ? 'download' : kind === 'file' ? 'read file' : 'restore archive', source.ready)
        .catch(() => undefined);
      await this.begin();
      const shortcut = await reading;
      void t.time('read live rows', shortcut.read).catch(() => undefined);
      const fast = await t.time('parse and stage', this.stage(source, shortcut, log, mayArchive).finally(mayArchive));
      const listing = await source.ready;
      const archive = await archiving;
      this.guard(log);
      const started = Date.now();
      const settled = await shortcut.settle();
      shortcut.report(log);
      this.duplicates = await t.time(
        'duplicates',
        settleDuplicates({
          client: this.client,
          pool: this.deps.pool,
          runId: this.runId,
          firstLoad: this.firstLoad,
          maybeDuplicates: this.tally.maybeDuplicates,
          listingPath: listing.path,
          fast,
          settled,
          log,
        }),
      );
      const counts = await this.classifyAndApply(shortcut, settled.missing, log);
      log.info(
        { ...counts, duplicates: this.duplicates, skippedUnchanged: shortcut.skipped, ms: Date.now() - started },
        'changes applied',
      );
      this.bi = await t.time(
        'BI count',
        countRunBiRounding(
          this.client,
          {
            runId: this.runId,
            scale: this.config.bi.scale,
            last,
            changes: counts,
            asRunsLeftIt: shortcut.tableAsRunsLeftIt,
            written: this.firstLoad?.biRounding,
          },
          log,
        ),
      );
      const keptFields = await t.time(
        'new fields',
        this.extraFields.record(this.client, this.runId, this.tally.fields),
      );
      this.warnNewFields(log);
      await this.checks.make(
        this.client,
        {
          baseRunId: last?.id,
          // The live rows provably as runs left them, and changed by this run only through its classified changes.
          trusted: shortcut.tableAsRunsLeftIt && !counts.initialLoad && counts.backfilled === 0,
          changes: counts,
          received: this.tally.received,
          commits: !this.request.dryRun,
        },
        t,
        log,
      );
      if (archive) await t.time('archive', archive.store(this.client, this.config.archiveKeep, log));
      await t.time('commit', this.commit());
      if (keptFields && !this.request.dryRun) await this.extraFields.refreshViews(this.deps.pool, log);
    } catch (error) {
      this.applied = undefined;
      this.extraFields.forget();
      source.stop();
      await (await archiving.catch(() => undefined))?.stop();
      throw lockWait.explain(error);
    }
  }

  /** Whether the run stores its listing (sync_payloads): not a dry run, nor with SYNC_ARCHIVE_KEEP=0. */
  private archives(): boolean {
    return !this.request.dryRun && this.config.archiveKeep > 0;
  }

  /** The run's transaction, with SYNC_LOCK_TIMEOUT_MS; its server process watched for lock waits. */
  private async begin(): Promise<void> {
    this.lockWait.watch(
      await this.deps.pool.begin(this.client, {
        lockTimeoutMs: this.config.lockTimeoutMs,
        idleTimeoutMs: idleTimeoutMs(this.config),
      }),
    );
  }

  /**
   * The listing parsed and checked record by record, the changed records COPYed into staging (a
   * first load's: into the table). A download is parsed as it is spooled, one attempt at a time:
   * when an attempt fails part way, what was made of it is forgotten and the parse starts over
   * with the next attempt.
   */
  private async stage(
    source: ListingSource,
    shortcut: UnchangedShortcut,
    log: Logger,
    reSync: () => void,
  ): Promise<FastPaths> {
    const { deps, runId } = this;
    const { watch } = source;
    const started = Date.now();
    let attempt = 0;
    try {
      for (;;) {
        let chunks: AsyncIterable<Buffer>;
        if (watch) {
          attempt = await watch.nextAttempt(attempt, deps.signal);
          chunks = watch.follow(attempt, deps.signal);
        } else chunks = fileChunks(source.path ?? (await source.ready).path, deps.signal);
        // Into a table with no row at all, rows go straight into it; the shortcut already knows when there is no live
        // one.
        const extras = this.config.extraFields === 'keep';
        if (await shortcut.isEmpty()) {
          this.firstLoad = await FirstLoad.open(
            this.client,
            { runId, ids: this.tally.ids, dir: this.tmp!, biScale: this.config.bi.scale, extras },
            log,
          );
        } else reSync();
        const fast = recordFastPaths(this.tally, shortcut, { firstLoad: this.firstLoad, extras });
        const lines = listingCopyLines({
          chunks,
          tally: this.tally,
          writeRejects: (rejects) => insertRejects(deps.pool, runId, rejects),
          onProgress: (t) => deps.onProgress?.({ received: t.received, bytes: t.bytes }),
          signal: deps.signal,
          fast,
          extras,
        });
        await (this.firstLoad
          ? this.firstLoad.copyRows(this.client, lines, deps.signal)
          : stageRows(this.client, lines, deps.signal));
        if (!this.tally.abandoned) {
          log.info(
            {
              received: this.tally.received,
              rejected: this.tally.rejected,
              unchangedSkipped: shortcut.skipped,
              unread: shortcut.skippedUnread,
              firstLoad: this.firstLoad !== undefined,
              ms: Date.now() - started,
            },
            'listing parsed and staged',
          );
          return fast;
        }
        log.info(
          { attempt, bytes: this.tally.bytes, received: this.tally.received },
          'download attempt failed part way; its records are forgotten and the parse starts over',
        );
        await this.forgetAttempt(shortcut, { again: true });
      }
    } catch (error) {
      if (!watch?.gaveUp) throw error;
      // The download failed: nothing of its attempts counts, and the error is the download's own
      // (the run's rollback takes what was staged).
      await this.forgetAttempt(shortcut, { again: false }).catch(() => undefined);
      await source.ready;
      throw error;
    }
  }

  /**
   * Everything the parse made of a download attempt that failed part way: the counts, the id
   * bitmap, the shortcut's marks, a first load's files, and, when the parse starts `again`, every
   * row staged or COPYed into the table (by rolling the transaction back and beginning another);
   * then the rejects stored so far.
   * Those are stored as parsing goes, not held back until the download ends: up to 10,000 of them
   * with their raw text would be a lot of memory to hold, and a retry is rare enough that deleting
   * them is the cheaper side. The run lock is another connection's (sync.ts): it stays held.
   */
  private async forgetAttempt(shortcut: UnchangedShortcut, { again }: { again: boolean }): Promise<void> {
    this.tally = newTally();
    shortcut.reset();
    await this.firstLoad?.discard();
    this.firstLoad = undefined;
    if (again) {
      await this.client.query('ROLLBACK');
      await this.begin();
    }
    await deleteRejects(this.deps.pool, this.runId);
  }

  /** The whole-listing checks, before anything is written: envelope, reject ratio, schema drift. */
  private guard(log: Logger): void {
    checkEnvelope(this.tally.envelope!);
    checkRejectRatio(this.tally, this.config.maxRejectRatio, this.runId, () =>
      explainRejects(topReasons(this.tally, 3), this.newFields()),
    );
    this.checkSchemaDrift(log);
  }

  /**
   * What the listing changes, checked against the mass-delete guard, then applied; the
   * fingerprints of what was written stored. A live id the listing had no valid record of is
   * deleted, unless the listing had a record of it that was rejected: then its row is kept.
   */
  private async classifyAndApply(shortcut: UnchangedShortcut, lacking: string[], log: Logger): Promise<ChangeCounts> {
    const { client, config, runId } = this;
    const { firstLoad } = this;
    const { rejected: kept, others: missing } = this.tally.rejectedIds.split(lacking);
    // A first load wrote its rows and their fingerprints already (stage, settleDuplicates).
    const counts: ChangeCounts = firstLoad
      ? {
          initialLoad: true,
          liveBefore: 0,
          inserted: this.staged(),
          updated: 0,
          restored: 0,
          deleted: 0,
          backfilled: 0,
        }
      : await this.phases.time(
          'classify',
          classifyChanges(
            client,
            {
              staged: this.staged(),
              compared: this.staged() - shortcut.skipped,
              liveBefore: shortcut.liveBefore,
              missing,
            },
            log,
          ),
        );
    checkDeletes(
      {
        deleted: counts.deleted,
        liveBefore: counts.liveBefore,
        validRecords: this.tally.received - this.tally.rejected,
      },
      config.maxDeleteRatio,
      this.request.allowMassDelete === true,
    );
    if (!firstLoad) await this.phases.time('apply', applyChanges(client, runId, counts, log));
    if (counts.backfilled > 0) {
      const n = counts.backfilled;
      log.info(
        { backfilled: n },
        `${n} row${n === 1 ? '' : 's'} filled in with what the release that wrote ` +
          `${n === 1 ? 'it' : 'them'} could not store (extra_fields): no new version, changed_at and run_id kept`,
      );
    }
    await shortcut.save(client, { runId, initialLoad: counts.initialLoad, copied: firstLoad !== undefined }, log);
    this.kept = await keepRejected(client, runId, kept, log);
    if (this.kept > 0)
      log.warn(
        { keptOnReject: this.kept },
        `${this.kept} live row${this.kept === 1 ? '' : 's'} kept as their last valid version: their record ` +
          `was rejected (see sync_rejects); marked with rejected_in_run`,
      );
    this.applied = counts;
    this.skipped = shortcut.skipped;
    return counts;
  }

  /**
   * A dry run rolls everything back: it reports what a run would do. A run whose lock went with
   * its connection (a pooler or server restart) does not commit: another run may be going.
   */
  private async commit(): Promise<void> {
    if (!this.request.dryRun) await this.lock.check();
    await this.client.query(this.request.dryRun ? 'ROLLBACK' : 'COMMIT');
  }

  /** The fields no earlier successful run saw, announced once with where they are. */
  private warnNewFields(log: Logger): void {
    const added = this.newFields();
    if (added.length > 0)
      log.warn({ newFields: added.map((f) => f.name).slice(0, 100) }, listNewFields(added).join('; '));
  }

  /** Before anything is written: a field the last successful run had must not silently become NULL everywhere. */
  private checkSchemaDrift(log: Logger): void {
    const extraFields = this.config.extraFields === 'keep';
    const found = findDisappeared(this.baseline, this.tally.fields.toJSON(), { extraFields });
    if (found.length === 0) return;
    const changes = describeDisappeared(found, this.baseline!.runId, this.tally.fields.records);
    if (!this.request.acceptSchemaChange)
      throw new GuardError('SCHEMA_CHANGE', schemaChangeRefusal(changes, found, { extraFields }));
    log.warn({ fields: found.map((d) => d.field) }, `schema change accepted (--accept-schema-change): ${changes}`);
    // Accepting that a field is gone accepts that it is now null: its nulls check does not refuse the run.
    this.checks.accept(found.map((d) => `nulls:${d.field}`));
  }

  /** On abort, stop whatever statement the run's connection is executing. */
  private async cancelStatement(): Promise<void> {
    await cancelStatement(this.deps.pool, this.client);
  }

  counts(status: RunStatus): RunCounts {
    const t = this.tally;
    const e = t.envelope;
    const applied = status === 'succeeded' ? this.applied : undefined;
    const changed = applied ? applied.inserted + applied.updated + applied.restored + applied.backfilled : 0;
    return {
      reported_count: integerText(e?.scalars.count) ?? null,
      reported_record_count: integerText(e?.scalars.recordCount) ?? null,
      received: t.received,
      rejected: t.rejected,
      duplicates: this.duplicates,
      inserted: applied?.inserted ?? 0,
      updated: applied?.updated ?? 0,
      restored: applied?.restored ?? 0,
      deleted: applied?.deleted ?? 0,
      unchanged: applied ? this.staged() - changed : 0,
      skipped_unchanged: applied ? this.skipped : 0,
      kept_on_reject: applied ? this.kept : 0,
      backfilled: applied?.backfilled ?? 0,
      bytes: t.bytes,
    };
  }

  /** Records in the staging table: valid, and the last of their id. */
  private staged(): number {
    return this.tally.received - this.tally.rejected - this.duplicates;
  }

  unknownFields(): string[] {
    return this.tally.fields.unknownNames();
  }

  /** Null when the listing was not read to its end. */
  fieldCounts(): FieldCounts | null {
    return this.tally.envelope ? this.tally.fields.toJSON() : null;
  }

  /** Fields no earlier successful run saw; with where this run kept them, once it recorded them. */
  newFields(): NewField[] {
    return this.tally.envelope ? this.extraFields.describe(newFields(this.baseline, this.tally.fields.toJSON())) : [];
  }

  topReasons(): Array<{ reason: string; count: number }> {
    return topReasons(this.tally, 5);
  }
}
