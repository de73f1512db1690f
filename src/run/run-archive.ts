/**
 * A run's archive of its listing (sync_payloads): the upstream's own gzip body when it sent one
 * (nothing to compress); otherwise the listing compressed on libuv's thread pool while it is
 * parsed and applied, stopped if the run fails. The same listing as the newest archived one is
 * not stored again: re-runs write no payload WAL.
 */
import { join } from 'node:path';
import type { Pool, PoolClient } from '../db/pool.js';
import type { Logger } from '../log.js';
import { compressListing, latestPayload, storePayload, upstreamGzip, type CompressedListing } from '../load/payloads.js';
import type { Listing } from './listing-source.js';

export class RunArchive {
  private constructor(
    private readonly compressed: Promise<CompressedListing>,
    private readonly stopper?: AbortController,
  ) {}

  /** Begins the archive of `listing` (compressed into `dir` when needed); undefined when it is the newest archived one. */
  static async start(pool: Pool, { path, sha256, gzip }: Listing, dir: string, log: Logger): Promise<RunArchive | undefined> {
    const latest = await latestPayload(pool);
    if (latest?.sha256 === sha256) {
      log.info({ archivedBy: Number(latest.runId) }, 'listing identical to the newest archived one; not archived again');
      return undefined;
    }
    if (gzip) return new RunArchive(Promise.resolve(upstreamGzip(gzip)));
    const stopper = new AbortController();
    const compressed = compressListing(path, join(dir, 'listing.json.archive'), stopper.signal);
    compressed.catch(() => undefined); // awaited in store(); a failure surfaces there
    return new RunArchive(compressed, stopper);
  }

  /** Stores it as the run's payload, in the run's transaction, and keeps only the newest `keep`. */
  async store(client: PoolClient, payload: { runId: string; sha256: string; bytes: number; keep: number }, log: Logger): Promise<void> {
    await storePayload(client, { ...payload, compressed: this.compressed }, log);
  }

  /** The run failed: the compression stops, and has stopped before the temp dir is removed. */
  async stop(): Promise<void> {
    this.stopper?.abort();
    await this.compressed.catch(() => undefined);
  }
}
