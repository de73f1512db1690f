/**
 * A run's archive of its listing (sync_payloads), written beside the run on a connection and in a
 * transaction of its own. Rule: it commits just before the run's, and a failed run removes it.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { cancelStatement } from '../db/lock.js';
import type { Pool, PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import {
  compressListing,
  dropPayload,
  latestPayload,
  prunePayloads,
  upstreamGzip,
  writePayload,
  type CompressedListing,
} from '../load/payloads.js';
import type { Listing } from './listing-source.js';

export class RunArchive {
  private client: PoolClient | undefined;
  private committed = false;
  private stopped = false;
  /** The payload's row and chunks, written (not committed yet). */
  private written: Promise<void> = Promise.resolve();

  private constructor(
    private readonly pool: Pool,
    private readonly runId: string,
    private readonly stopper?: AbortController,
  ) {}

  /**
   * Begins the archive of `listing` (compressed into `dir` when needed) and its writing, on a
   * connection of its own; undefined when it is the newest archived one. `onConnection` is given
   * the server process of its transaction (to watch it for lock waits).
   *
   * A listing to compress starts at once, beside the rest of the parse. The upstream's own gzip
   * (nothing to compress) waits for `gate`: the run opens it as soon as it knows it is a re-sync,
   * whose parse leaves the server idle (stored after the parse, beside the apply, it made re-syncs
   * longer), and a first load when its parse is over: its parse and COPY keep both cores busy.
   */
  static async start(
    pool: Pool,
    {
      runId,
      listing,
      dir,
      lockTimeoutMs,
      gate,
    }: { runId: string; listing: Listing; dir: string; lockTimeoutMs: number; gate?: Promise<void> },
    log: Logger,
    onConnection?: (pid: number) => void,
  ): Promise<RunArchive | undefined> {
    if (listing.gzip) await gate;
    const latest = await latestPayload(pool);
    if (latest?.sha256 === listing.sha256) {
      log.info(
        { archivedBy: Number(latest.runId) },
        'listing identical to the newest archived one; not archived again',
      );
      return undefined;
    }
    const stopper = listing.gzip ? undefined : new AbortController();
    const compressed: Promise<CompressedListing> = listing.gzip
      ? Promise.resolve(upstreamGzip(listing.gzip))
      : compressListing(listing.path, join(dir, 'listing.json.archive'), stopper!.signal);
    compressed.catch(() => undefined); // awaited in write(); a failure surfaces there
    const archive = new RunArchive(pool, runId, stopper);
    archive.written = archive.write(listing, compressed, lockTimeoutMs, log, onConnection);
    archive.written.catch(() => undefined); // awaited in store(); a failure surfaces there
    return archive;
  }

  /**
   * Once written, commits the payload and prunes the older ones in the run's transaction, which
   * the caller commits next.
   */
  async store(run: PoolClient, keep: number, log: Logger): Promise<void> {
    const started = Date.now();
    await this.written;
    // How long the run waited for its payload: the part of the archive still on the critical path.
    log.debug({ statement: 'archive_wait', ms: Date.now() - started }, 'statement done');
    await this.client!.query('COMMIT');
    this.committed = true;
    this.release();
    await prunePayloads(run, keep);
  }

  /** The run failed: the compression stops, the payload is rolled back (or deleted, if committed). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopper?.abort();
    if (this.client) await cancelStatement(this.pool, this.client); // a COPY in flight
    await this.written.catch(() => undefined);
    if (this.client) {
      const failed = await this.client.query('ROLLBACK').then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      this.release(failed);
    }
    if (this.committed) await dropPayload(this.pool, this.runId).catch(() => undefined);
  }

  private async write(
    listing: Listing,
    compressed: Promise<CompressedListing>,
    lockTimeoutMs: number,
    log: Logger,
    onConnection?: (pid: number) => void,
  ): Promise<void> {
    const client = (this.client = await this.pool.connect());
    try {
      // Stopped while waiting for the connection: nothing to write (a COPY in flight is cancelled instead).
      if (this.stopped) throw new Error('the run failed before its archive was written');
      onConnection?.(await this.pool.begin(client, { lockTimeoutMs }));
      const bytes = (await stat(listing.path)).size;
      await writePayload(client, { runId: this.runId, sha256: listing.sha256, bytes, compressed }, log);
    } catch (error) {
      const failed = await client.query('ROLLBACK').then(
        () => undefined,
        (rollbackError: unknown) => rollbackError as Error,
      );
      this.release(failed);
      throw error;
    }
  }

  /** The connection back to the pool; closed instead when its state is unknown (a failed rollback). */
  private release(broken?: Error): void {
    this.client?.release(broken);
    this.client = undefined;
  }
}
