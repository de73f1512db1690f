/**
 * The spool file written a batch at a time. The body arrives in chunks of 16 KiB (after gunzip)
 * or less: a write per chunk is a round trip through libuv's thread pool each, about 15,000 for a
 * 240 MB listing, which kept a download at twice the time of `curl`. A batch of 1 MiB makes that
 * 240; the bytes are in the page cache either way.
 */
import type { FileHandle } from 'node:fs/promises';
import { spoolFault } from './spool-fault.js';

const BATCH_BYTES = 1024 * 1024;

export class SpoolWriter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes in the file, every one of them written (awaited). */
  written = 0;

  /** `onWritten` hears the total after each batch is in the file. */
  constructor(
    private readonly file: FileHandle,
    private readonly path: string,
    private readonly onWritten?: (total: number) => void,
  ) {}

  async write(chunk: Buffer): Promise<void> {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= BATCH_BYTES) await this.flush();
  }

  /** Writes what is pending; called once more at the end of the body. */
  async flush(): Promise<void> {
    if (this.pendingBytes === 0) return;
    const batch = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    const total = this.written + this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    // A write may take only part of the batch (a disk nearly full): the rest is written again,
    // and the write that cannot take any fails with ENOSPC.
    for (let at = 0; at < batch.length; ) {
      const { bytesWritten } = await this.file.write(batch, at, batch.length - at).catch((error: unknown) => {
        throw spoolFault(error, this.path, this.written + at) ?? error;
      });
      at += bytesWritten;
    }
    this.written = total;
    this.onWritten?.(total);
  }
}
