/**
 * One sync run: lock -> audit row -> extract (spool the listing) -> transform + stage (COPY) ->
 * checks and guards -> apply -> archive -> commit, and the audit row finished whatever happens.
 * Everything a run changes in the data tables happens in ONE transaction.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Config } from './config.js';
import { runDeadline } from './deadline.js';
import { releaseRunLock, tryRunLock } from './db/lock.js';
import type { Pool, PoolClient } from './db/pool.js';
import {
  AbortedError,
  GuardError,
  LockHeldError,
  SyncError,
  describeError,
} from './errors.js';
import type { WineApi } from './extract/http/api.js';
import { checkDeletes, checkEnvelope, checkRejectRatio, integerText } from './guards.js';
import { spoolFault } from './extract/http/spool-fault.js';
import type { Logger } from './log.js';
import { applyChanges, classifyChanges, type ChangeCounts } from './load/apply.js';
import { carriedBiRounding, countBiRounding, describeBiRounding, type BiRounding } from './load/bi-rounding.js';
import {
  duplicateIdReject,
  finishRun,
  MAX_DUPLICATE_RAW_BYTES,
  insertRejects,
  markAbandoned,
  lastSuccess,
  startRun,
  type Reject,
  type RunCounts,
  type RunRow,
  type RunStatus,
  type Trigger,
} from './load/audit.js';
import { LockWaitWatch } from './load/lock-wait.js';
import { compressListing, findPayload, latestPayload, restorePayload, storePayload } from './load/payloads.js';
import { removeDuplicates, removeStagedPositions, stageRows } from './load/staging.js';
import { listingCopyLines, newTally, recordFastPaths, topReasons, type FastPaths, type ListingTally } from './pipeline.js';
import { UnchangedShortcut } from './unchanged/shortcut.js';
import {
  baselineOf,
  describeDisappeared,
  explainRejects,
  findDisappeared,
  newFields,
  schemaChangeRefusal,
  type Baseline,
} from './transform/schema-drift.js';
import type { FieldCounts } from './row.js';
import { APP_VERSION } from './version.js';

export type SyncSource = { kind: 'api' } | { kind: 'file'; path: string } | { kind: 'replay'; runId: string };

export interface SyncRequest {
  source: SyncSource;
  trigger: Trigger;
  dryRun?: boolean;
  allowMassDelete?: boolean;
  /** Load even when a field the last successful run had is gone (the schema-drift guard). */
  acceptSchemaChange?: boolean;
}

export interface SyncDeps {
  pool: Pool;
  log: Logger;
  /** Needed for API runs; the daemon keeps one so the token is reused between runs. */
  api?: WineApi;
  signal?: AbortSignal;
  tmpDir?: string;
  onProgress?: (progress: { received: number; bytes: number }) => void;
}

export interface SyncOutcome {
  run: RunRow;
  /** Most frequent reject reasons, for the human summary. */
  topReasons: Array<{ reason: string; count: number }>;
  /** Unknown fields the last successful run did not see (for the summary and notifications). */
  newFields: Array<{ name: string; count: number }>;
  /** What the BI views round or leave NULL, after a successful run. */
  bi?: BiRounding;
}

export async function runSync(config: Config, deps: SyncDeps, request: SyncRequest): Promise<SyncOutcome> {
  const { pool } = deps;
  const lockClient = await pool.connect();
  let broken = false;
  try {
    if (!(await tryRunLock(lockClient, config.schema))) {
      throw new LockHeldError(`another sync holds the lock for schema "${config.schema}"; this run was skipped`);
    }
    try {
      const abandoned = await markAbandoned(pool);
      if (abandoned.length > 0) deps.log.warn({ runs: abandoned }, 'marked runs left running by a dead process as abandoned');
      const source = await describeSource(deps, request.source);
      const runId = await startRun(pool, { trigger: request.trigger, dryRun: request.dryRun === true, appVersion: APP_VERSION, source });
      const log = deps.log.child({ runId: Number(runId) });
      log.info({ trigger: request.trigger, dryRun: request.dryRun === true, source }, 'sync started');
      const started = Date.now();
      const deadline = runDeadline(deps.signal ?? new AbortController().signal, config.runTimeoutMs);
      const { signal } = deadline;
      const run = new Run(config, { ...deps, log, signal }, request, runId, lockClient);
      let status: RunStatus = 'succeeded';
      let error: string | null = null;
      try {
        await run.execute();
      } catch (caught) {
        status = !deadline.expired && (signal.aborted || caught instanceof AbortedError) ? 'aborted' : 'failed';
        error = deadline.expired ? describeError(signal.reason) : status === 'aborted' ? new AbortedError().message : describeError(caught);
        broken = !(await rollback(lockClient));
        log.error({ err: deadline.expired ? signal.reason : caught }, `sync ${status}`);
      } finally {
        deadline.clear();
      }
      const row = await finishRun(pool, runId, {
        status,
        error,
        counts: run.counts(status),
        unknownFields: run.unknownFields(),
        fieldCounts: run.fieldCounts(),
        bi: status === 'succeeded' ? run.bi : undefined,
      });
      log.info({ status, ms: Date.now() - started, ...pickCounts(row) }, 'sync finished');
      return { run: row, topReasons: run.topReasons(), newFields: run.newFields(), bi: status === 'succeeded' ? run.bi : undefined };
    } finally {
      if (!broken) await releaseRunLock(lockClient, config.schema).catch(() => (broken = true));
    }
  } finally {
    // A connection in an unknown state is closed, not reused; closing also releases the lock.
    lockClient.release(broken ? new Error('discarding connection after a failed rollback') : undefined);
  }
}

class Run {
  private readonly tally: ListingTally = newTally();
  private duplicates = 0;
  private skipped = 0;
  private applied: ChangeCounts | undefined;
  bi: BiRounding | undefined;
  private tmp: string | undefined;
  private baseline: Baseline | undefined;

  constructor(
    private readonly config: Config,
    private readonly deps: SyncDeps & { signal: AbortSignal; log: Logger },
    private readonly request: SyncRequest,
    private readonly runId: string,
    private readonly client: PoolClient,
  ) {}

  async execute(): Promise<void> {
    const prefix = join(this.deps.tmpDir ?? tmpdir(), `wine-recon-sync-${this.runId}-`);
    this.tmp = await mkdtemp(prefix).catch((error: unknown) => {
      throw spoolFault(error, join(prefix, 'listing.json'), 0) ?? error;
    });
    const cancel = () => void this.cancelStatement();
    this.deps.signal.addEventListener('abort', cancel, { once: true });
    try {
      const listing = await this.extract();
      await this.load(listing);
    } finally {
      this.deps.signal.removeEventListener('abort', cancel);
      await rm(this.tmp, { recursive: true, force: true });
    }
  }

  /** The listing as a local file (downloaded, given, or restored from the archive) and its SHA-256. */
  private async extract(): Promise<{ path: string; sha256: string }> {
    const { source } = this.request;
    const log = this.deps.log.child({ step: 'extract' });
    const started = Date.now();
    let path: string;
    let sha256: string;
    if (source.kind === 'api') {
      if (!this.deps.api) throw new SyncError('CONFIG', 'API runs need WINE_API_BASE_URL and credentials', { exitCode: 2 });
      path = join(this.tmp!, 'listing.json');
      sha256 = (await this.deps.api.downloadListing(path, this.deps.signal)).sha256;
    } else {
      path = source.kind === 'file' ? resolve(source.path) : join(this.tmp!, 'listing.json');
      sha256 = source.kind === 'replay' ? await restorePayload(this.deps.pool, source.runId, path) : await sha256File(path, this.deps.signal);
    }
    log.info({ bytes: (await stat(path)).size, sha256, ms: Date.now() - started }, 'listing ready');
    return { path, sha256 };
  }

  private async load({ path, sha256 }: { path: string; sha256: string }): Promise<void> {
    const { client, config, runId, deps } = this;
    const log = deps.log.child({ step: 'load' });
    const archive = !this.request.dryRun && config.archiveKeep > 0 && !(await this.alreadyArchived(sha256, log));
    let started = Date.now();
    const last = await lastSuccess(deps.pool);
    this.baseline = baselineOf(last);
    const lockWait = new LockWaitWatch(deps.pool, backendPid(client), config.lockTimeoutMs);
    // The archive is compressed on libuv's thread pool while the listing is parsed and applied;
    // stopped if the run fails.
    const stopArchive = new AbortController();
    const compressed = archive ? compressListing(path, join(this.tmp!, 'listing.json.archive'), stopArchive.signal) : undefined;
    compressed?.catch(() => undefined); // awaited below; a failure surfaces there
    try {
      await client.query('BEGIN');
      await client.query("SELECT set_config('lock_timeout', $1, true)", [String(config.lockTimeoutMs)]);
      lockWait.start();
      const shortcut = await UnchangedShortcut.prepare(client, log);
      const why = shortcut.explain();
      if (why) log.info({ liveRows: shortcut.liveBefore }, why);
      const fast = recordFastPaths(this.tally, shortcut);
      const lines = listingCopyLines({
        path,
        tally: this.tally,
        writeRejects: (rejects) => insertRejects(deps.pool, runId, rejects),
        onProgress: (t) => deps.onProgress?.({ received: t.received, bytes: t.bytes }),
        signal: deps.signal,
        fast,
      });
      await stageRows(client, lines, deps.signal);
      log.info(
        { received: this.tally.received, rejected: this.tally.rejected, unchangedSkipped: shortcut.skipped, ms: Date.now() - started },
        'listing parsed and staged',
      );
      checkEnvelope(this.tally.envelope!);
      this.warnNewFields(log);
      checkRejectRatio(this.tally, config.maxRejectRatio, runId, () => explainRejects(topReasons(this.tally, 3), this.newFields()));
      this.checkSchemaDrift(log);

      started = Date.now();
      const settled = shortcut.settle();
      await this.settleDuplicates(path, fast, settled, log);
      const counts = await classifyChanges(client, { staged: this.staged(), liveBefore: shortcut.liveBefore, missing: settled.missing }, log);
      checkDeletes(
        { deleted: counts.deleted, liveBefore: counts.liveBefore, validRecords: this.tally.received - this.tally.rejected },
        config.maxDeleteRatio,
        this.request.allowMassDelete === true,
      );
      await applyChanges(client, runId, counts, log);
      await shortcut.save(client, { runId, initialLoad: counts.initialLoad }, log);
      this.applied = counts;
      this.skipped = shortcut.skipped;
      log.info({ ...counts, duplicates: this.duplicates, skippedUnchanged: shortcut.skipped, ms: Date.now() - started }, 'changes applied');
      this.bi = await this.biRounding(last, counts, shortcut.tableAsRunsLeftIt);
      const biWarning = describeBiRounding(this.bi);
      if (biWarning) log.warn({ ...this.bi, countedBy: this.biCountedBy }, biWarning);

      if (compressed) {
        await storePayload(client, { runId, sha256, bytes: this.tally.bytes, compressed, keep: config.archiveKeep }, log);
      }
      await client.query(this.request.dryRun ? 'ROLLBACK' : 'COMMIT');
    } catch (error) {
      this.applied = undefined;
      stopArchive.abort();
      await compressed?.catch(() => undefined); // let it stop before the temp dir is removed
      throw lockWait.explain(error);
    } finally {
      lockWait.stop();
    }
  }

  private biCountedBy: number | undefined;

  /**
   * What the BI views round, after the changes. A re-sync that changed no row carries the last
   * successful run's count forward, when the table is provably as that run left it: every live row
   * is the version a run's fingerprint vouches for, none was removed, and as many are live.
   */
  private async biRounding(last: Awaited<ReturnType<typeof lastSuccess>>, counts: ChangeCounts, asRunsLeftIt: boolean): Promise<BiRounding> {
    const noRowChanged = counts.inserted + counts.updated + counts.deleted + counts.restored === 0;
    const sameRows = asRunsLeftIt && noRowChanged && last?.live_after != null && counts.liveBefore === Number(last.live_after);
    const carried = sameRows ? carriedBiRounding(last, this.config.bi.scale) : undefined;
    this.biCountedBy = carried ? Number(last!.id) : Number(this.runId);
    return carried ?? (await countBiRounding(this.client, this.config.bi.scale));
  }

  /**
   * Duplicate ids: the last valid copy wins. Earlier copies of a live id were settled by the
   * shortcut (staged ones are removed here; skipped ones are read back from the listing), those
   * of new ids by the SQL pass; all go to sync_rejects.
   */
  private async settleDuplicates(path: string, fast: FastPaths, settled: { stagedLosers: number[]; skippedLosers: Array<{ position: number; id: string }> }, log: Logger): Promise<void> {
    const { client, deps, runId } = this;
    const duplicates = [...(await removeStagedPositions(client, settled.stagedLosers))];
    if (this.tally.maybeDuplicates) duplicates.push(...(await removeDuplicates(client, log)));
    const skipped: Reject[] = [];
    for (const { position, id } of settled.skippedLosers) {
      const found = await fast.checkpoints.read(path, position, MAX_DUPLICATE_RAW_BYTES);
      skipped.push(duplicateIdReject(position, id, found.bytes.toString('utf8')));
    }
    this.duplicates = duplicates.length + skipped.length;
    if (this.duplicates > 0) await insertRejects(deps.pool, runId, [...skipped, ...(await duplicateRejects(path, duplicates))]);
  }

  /** The same listing as the newest archived one is not stored again: re-runs write no payload WAL. */
  private async alreadyArchived(sha256: string, log: Logger): Promise<boolean> {
    const latest = await latestPayload(this.deps.pool);
    if (latest?.sha256 !== sha256) return false;
    log.info({ archivedBy: Number(latest.runId) }, 'listing identical to the newest archived one; not archived again');
    return true;
  }

  private warnNewFields(log: Logger): void {
    const added = this.newFields();
    if (added.length > 0) log.warn({ newFields: added }, `new fields in the listing, not loaded: ${added.map((f) => f.name).join(', ')}`);
  }

  /** Before anything is written: a field the last successful run had must not silently become NULL everywhere. */
  private checkSchemaDrift(log: Logger): void {
    const found = findDisappeared(this.baseline, this.tally.fields.toJSON());
    if (found.length === 0) return;
    const changes = describeDisappeared(found, this.baseline!.runId, this.tally.fields.records);
    if (!this.request.acceptSchemaChange) throw new GuardError('SCHEMA_CHANGE', schemaChangeRefusal(changes));
    log.warn({ fields: found.map((d) => d.field) }, `schema change accepted (--accept-schema-change): ${changes}`);
  }

  /** On abort, stop whatever statement the run's connection is executing. */
  private async cancelStatement(): Promise<void> {
    const pid = backendPid(this.client);
    if (pid) await this.deps.pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
  }

  counts(status: RunStatus): RunCounts {
    const t = this.tally;
    const e = t.envelope;
    const applied = status === 'succeeded' ? this.applied : undefined;
    const changed = applied ? applied.inserted + applied.updated + applied.restored : 0;
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

  newFields(): Array<{ name: string; count: number }> {
    return this.tally.envelope ? newFields(this.baseline, this.tally.fields.toJSON()) : [];
  }

  topReasons(): Array<{ reason: string; count: number }> {
    return topReasons(this.tally, 5);
  }
}

async function describeSource(deps: SyncDeps, source: SyncSource): Promise<string> {
  if (source.kind === 'file') return resolve(source.path);
  if (source.kind === 'api') return deps.api?.listingUrl ?? 'api';
  const payload = await findPayload(deps.pool, source.runId);
  if (!payload) {
    throw new SyncError('NOT_FOUND', `run ${source.runId} has no archived payload (only the newest SYNC_ARCHIVE_KEEP are kept; see sync_payloads)`, {
      exitCode: 2,
    });
  }
  return `replay of run ${payload.runId} (sha256 ${payload.sha256})`;
}

/** Earlier copies of duplicate ids, with their raw text read back from the spooled listing. */
async function duplicateRejects(path: string, rows: Awaited<ReturnType<typeof removeDuplicates>>): Promise<Reject[]> {
  const file = await open(path, 'r');
  try {
    const out: Reject[] = [];
    for (const row of rows) {
      const length = Math.min(row.raw_length, MAX_DUPLICATE_RAW_BYTES);
      const buffer = Buffer.alloc(length);
      await file.read(buffer, 0, length, Number(row.raw_offset));
      out.push(duplicateIdReject(row.position, row.record_id, buffer.toString('utf8')));
    }
    return out;
  } finally {
    await file.close();
  }
}

async function sha256File(path: string, signal: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024, signal })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The server process of a connection (pg keeps it from the BackendKeyData message). */
function backendPid(client: PoolClient): number {
  return (client as unknown as { processID?: number }).processID ?? 0;
}

async function rollback(client: PoolClient): Promise<boolean> {
  try {
    await client.query('ROLLBACK');
    return true;
  } catch {
    return false;
  }
}

function pickCounts(row: RunRow): Record<string, number | null> {
  const { received, rejected, duplicates, inserted, updated, unchanged, deleted, restored } = row;
  return { received, rejected, duplicates, inserted, updated, unchanged, deleted, restored };
}

