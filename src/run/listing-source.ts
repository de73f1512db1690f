/**
 * Where a run's listing comes from, as the stage reads it: a file whole from the start (given with
 * --from-file, or restored from the archive for a replay), or a download followed as it is spooled
 * (extract/http/spool-watch.ts), so that the parse overlaps the network.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Pool } from '../db/pool.js';
import { SyncError } from '../errors.js';
import type { WineApi } from '../extract/http/api.js';
import { SpoolWatch } from '../extract/http/spool-watch.js';
import type { Logger } from '../log.js';
import { restorePayload } from '../load/payloads.js';
import type { SyncSource } from './request.js';

/** The listing as a local file (downloaded, given, or restored from the archive) and its SHA-256. */
export interface Listing {
  path: string;
  sha256: string;
  /** The downloaded body as it arrived, when it came gzip-coded: the archive ready-made. */
  gzip?: { path: string; size: number };
}

export interface ListingSource {
  /** The listing once whole, with its SHA-256 ('listing ready' in the log). */
  ready: Promise<Listing>;
  /** A file to parse at once; without it and without `watch`, `ready`'s (a replay's restored file). */
  path?: string;
  /** A download, to parse as it is spooled. */
  watch?: SpoolWatch;
  /** Stops the download, if any (the run failed before it ended). */
  stop(): void;
}

export interface SourceDeps {
  pool: Pool;
  api?: WineApi;
  signal: AbortSignal;
  log: Logger;
}

/**
 * Starts getting the listing into `dir` (a download, a restore) or hashing it (a given file);
 * returns at once. A download is spooled while the stage parses behind it, a given file hashed
 * while it is parsed.
 */
export function openListing(
  source: SyncSource,
  deps: SourceDeps,
  dir: string,
  options: { keepGzip: boolean },
): ListingSource {
  const { api, signal } = deps;
  const log = deps.log.child({ step: 'extract' });
  const started = Date.now();
  const ready = async (path: string, whole: Promise<Pick<Listing, 'sha256' | 'gzip'>>): Promise<Listing> => {
    const listing = { path, ...(await whole) };
    log.info({ bytes: (await stat(path)).size, sha256: listing.sha256, ms: Date.now() - started }, 'listing ready');
    return listing;
  };
  let result: ListingSource;
  if (source.kind === 'api') {
    if (!api) throw new SyncError('CONFIG', 'API runs need WINE_API_BASE_URL and credentials', { exitCode: 2 });
    const path = join(dir, 'listing.json');
    const watch = new SpoolWatch(path);
    const stopper = new AbortController();
    const keepGzipAt = options.keepGzip ? join(dir, 'listing.json.gz') : undefined;
    const download = api
      .downloadListing(path, AbortSignal.any([signal, stopper.signal]), { keepGzipAt, watch })
      .then(({ sha256, gzip }) => ({ sha256, ...(gzip ? { gzip } : {}) }));
    result = { ready: ready(path, download), watch, stop: () => stopper.abort() };
  } else if (source.kind === 'file') {
    const path = resolve(source.path);
    result = {
      ready: ready(
        path,
        sha256File(path, signal).then((sha256) => ({ sha256 })),
      ),
      path,
      stop: () => undefined,
    };
  } else {
    const path = join(dir, 'listing.json');
    result = {
      ready: ready(
        path,
        restorePayload(deps.pool, source.runId, path).then((sha256) => ({ sha256 })),
      ),
      stop: () => undefined,
    };
  }
  result.ready.catch(() => undefined); // awaited by the run; a failure surfaces there
  return result;
}

async function sha256File(path: string, signal: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024, signal }))
    hash.update(chunk as Buffer);
  return hash.digest('hex');
}
