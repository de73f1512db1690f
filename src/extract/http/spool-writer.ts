/**
 * The spool file written a batch at a time, one write in flight while the next batch gathers.
 * The body arrives in chunks of 16 to 64 KiB: a write per chunk is a round trip through libuv's
 * thread pool each, and awaiting each one holds the download (and the decoder behind it) still
 * meanwhile. Batches of 1 MiB make far fewer round trips, and the download goes on while one is
 * written.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { writeAll } from '../../io/file-write.js';
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
    const batch = this.pending;
    const size = this.pendingBytes;
    const start = this.handed;
    this.handed += size;
    this.pending = [];
    this.pendingBytes = 0;
    await writeAll(this.file, batch, start, size, (error, at) => spoolFault(error, this.path, at));
    this.written = this.handed;
    this.onWritten?.(this.written);
  }
}
