/**
 * The spool file written a batch at a time, one write in flight while the next batch gathers.
 * The body arrives in chunks of 16 to 64 KiB: a write per chunk is a round trip through libuv's
 * thread pool each, about 15,000 for a 240 MB listing, and awaiting each one holds the download
 * (and the decoder behind it) still meanwhile; that kept a download at twice the time of `curl`.
 * Batches of 1 MiB make that 240 round trips, and the download goes on while one is written.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { spoolFault } from './spool-fault.js';

const BATCH_BYTES = 1024 * 1024;

export class SpoolWriter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes handed to a write, awaited or not. */
  private handed = 0;
  private inFlight: Promise<void> | undefined;
  /** Bytes in the file, every one of them written (awaited). */
  written = 0;

  private constructor(
    private readonly file: FileHandle,
    private readonly path: string,
    private readonly onWritten?: (total: number) => void,
  ) {}

  /**
   * The spool file at `path` opened afresh (an earlier attempt's bytes dropped); a local disk
   * refusal names its directory. `onWritten` hears the total after each batch is in the file.
   */
  static async open(path: string, onWritten?: (total: number) => void): Promise<SpoolWriter> {
    const file = await open(path, 'w').catch((error: unknown) => {
      throw spoolFault(error, path, 0) ?? error;
    });
    return new SpoolWriter(file, path, onWritten);
  }

  /** Closes the file, once a write still in flight (a body that failed part way) is over. */
  async close(): Promise<void> {
    await this.inFlight?.catch(() => undefined);
    await this.file.close();
  }

  async write(chunk: Buffer): Promise<void> {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < BATCH_BYTES) return;
    // At most one batch in flight: a disk slower than the network holds the download back.
    await this.inFlight;
    this.inFlight = this.writeBatch();
    // Its failure is thrown by the next write or flush, which awaits it.
    this.inFlight.catch(() => undefined);
  }

  /** Writes what is pending and waits until every byte is in the file; called at the end of the body. */
  async flush(): Promise<void> {
    await this.inFlight;
    this.inFlight = undefined;
    if (this.pendingBytes > 0) await this.writeBatch();
  }

  private async writeBatch(): Promise<void> {
    // Written as the chunks are (writev): copying them into one buffer first was a copy of the
    // whole listing, about 40 ms of the JavaScript thread for 256 MB.
    let batch = this.pending;
    const size = this.pendingBytes;
    const start = this.handed;
    this.handed += size;
    this.pending = [];
    this.pendingBytes = 0;
    // A write may take only part of the batch (a disk nearly full): the rest is written again,
    // and the write that cannot take any fails with ENOSPC.
    for (let at = 0; at < size; ) {
      const { bytesWritten } = await this.file.writev(batch, start + at).catch((error: unknown) => {
        throw spoolFault(error, this.path, start + at) ?? error;
      });
      at += bytesWritten;
      if (at < size) batch = unwritten(batch, bytesWritten);
    }
    this.written = this.handed;
    this.onWritten?.(this.written);
  }
}

/** What is left of `chunks` after their first `written` bytes. */
function unwritten(chunks: Buffer[], written: number): Buffer[] {
  let skip = written;
  let first = 0;
  while (skip >= chunks[first]!.length) skip -= chunks[first++]!.length;
  return [chunks[first]!.subarray(skip), ...chunks.slice(first + 1)];
}
