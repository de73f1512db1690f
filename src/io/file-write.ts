/**
 * Files written whole. A write may take only part of what it is given (a disk filling up): the
 * rest is written again, so that the write that cannot take any fails with ENOSPC instead of the
 * file silently missing bytes. writeAll is that write; the listing's spool file and the live rows'
 * file call it at their own positions, and AppendFile builds on it.
 */
import { open, type FileHandle } from 'node:fs/promises';

/** Writes `chunks`, `size` bytes in all, at `position`; `onError` may name a failure better. */
export async function writeAll(
  file: FileHandle,
  chunks: Buffer[],
  position: number,
  size: number,
  onError?: (error: unknown, at: number) => unknown,
): Promise<void> {
  let rest = chunks;
  for (let at = 0; at < size;) {
    // Written as the chunks are (writev): copying them into one buffer first would be a copy of the
    // whole listing on the JavaScript thread.
    const { bytesWritten } = await file.writev(rest, position + at).catch((error: unknown) => {
      throw onError?.(error, position + at) ?? error;
    });
    at += bytesWritten;
    if (at < size) rest = unwritten(rest, bytesWritten);
  }
}

/** What is left of `chunks` after their first `written` bytes. */
function unwritten(chunks: Buffer[], written: number): Buffer[] {
  let skip = written;
  let first = 0;
  while (skip >= chunks[first]!.length) skip -= chunks[first++]!.length;
  return [chunks[first]!.subarray(skip), ...chunks.slice(first + 1)];
}

/**
 * A file written by appending, for data a run sets aside while it parses and reads back once
 * afterwards (a first load's fingerprints and its duplicate copies). Appends are queued without
 * waiting, from inside the parser's synchronous hooks; the caller writes them out at its own await
 * points (`flush`), so memory holds only what was queued since. The file is created on the first
 * flush that has something to write: most runs never set anything aside.
 */
export class AppendFile {
  /** Bytes appended so far (queued or written). */
  bytes = 0;
  private written = 0;
  private queued: Buffer[] = [];
  private queuedBytes = 0;
  private handle: FileHandle | undefined;

  constructor(readonly path: string) {}

  /** Bytes queued and not yet written. */
  get pending(): number {
    return this.queuedBytes;
  }

  append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.queued.push(chunk);
    this.queuedBytes += chunk.length;
    this.bytes += chunk.length;
  }

  /** Writes out what was queued. */
  async flush(): Promise<void> {
    if (this.queuedBytes === 0) return;
    const [chunks, size] = [this.queued, this.queuedBytes];
    this.queued = [];
    this.queuedBytes = 0;
    this.handle ??= await open(this.path, 'w');
    await writeAll(this.handle, chunks, this.written, size);
    this.written += size;
  }

  /** Closes the file without writing what is queued: the run failed, and its temp directory goes. */
  async discard(): Promise<void> {
    this.queued = [];
    this.queuedBytes = 0;
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }

  /** Writes out what was queued and closes the file; it can then be read. */
  async close(): Promise<void> {
    await this.flush();
    await this.handle?.close();
    this.handle = undefined;
  }
}
