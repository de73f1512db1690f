/**
 * Chunks written whole at a position. A write may take only part of them (a disk filling up):
 * the rest is written again, so that the write that cannot take any fails with ENOSPC instead of
 * the file silently missing bytes.
 */
import type { FileHandle } from 'node:fs/promises';

/** Writes `chunks`, `size` bytes in all, at `position`; `onError` may name a failure better. */
export async function writeAll(file: FileHandle, chunks: Buffer[], position: number, size: number, onError?: (error: unknown, at: number) => unknown): Promise<void> {
  let rest = chunks;
  for (let at = 0; at < size; ) {
    // Written as the chunks are (writev): copying them into one buffer first was a copy of the
    // whole listing, about 40 ms of the JavaScript thread for 256 MB.
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
