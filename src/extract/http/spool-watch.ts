/**
 * The spool file as it grows: the download says what it has written, and a reader follows the file
 * behind it. Rule: a reader follows one attempt and stops with AttemptAbandoned as soon as that
 * attempt fails (docs/internals.md, Parsing while the download streams).
 */
import { open } from 'node:fs/promises';
import { AbortedError } from '../../errors.js';

const READ_BYTES = 256 * 1024;

/** Thrown by `follow` when the attempt it followed failed: what was read of it is void. */
export class AttemptAbandoned extends Error {
  constructor(readonly attempt: number) {
    super(`download attempt ${attempt} failed; its bytes are void`);
    this.name = 'AttemptAbandoned';
  }
}

type State = 'writing' | 'failed' | 'complete';

export class SpoolWatch {
  /** The attempt now in the file (0: none yet; the file may not exist). */
  private attempt = 0;
  /** Bytes of that attempt in the file, every one of them written (awaited) before it is counted. */
  private written = 0;
  private state: State = 'failed';
  /** The download's final failure: no attempt follows. */
  private failure: { error: unknown } | undefined;
  private waiters: Array<() => void> = [];

  constructor(readonly path: string) {}

  // The download's side.

  /**
   * A new attempt has emptied the file and writes it from its start. Called only after the
   * previous attempt was marked failed, so that no reader takes the new bytes for the old attempt's.
   */
  begin(): void {
    this.attempt++;
    this.written = 0;
    this.state = 'writing';
    this.wake();
  }

  /** `total` bytes of the current attempt are in the file. */
  wrote(total: number): void {
    this.written = total;
    this.wake();
  }

  /** The current attempt failed; another may follow. */
  attemptFailed(): void {
    if (this.state === 'writing') this.state = 'failed';
    this.wake();
  }

  /** The current attempt is the whole listing, checked (length) and in the file. */
  complete(): void {
    this.state = 'complete';
    this.wake();
  }

  /** The download gave up (or was stopped): no more attempts. */
  fail(error: unknown): void {
    if (this.state === 'writing') this.state = 'failed';
    this.failure ??= { error };
    this.wake();
  }

  // The reader's side.

  /** The download gave up or was stopped. */
  get gaveUp(): boolean {
    return this.failure !== undefined;
  }

  /**
   * The number of the next attempt that has begun writing after `after`; throws the download's
   * failure when it gave up first.
   */
  async nextAttempt(after: number, signal: AbortSignal): Promise<number> {
    for (;;) {
      if (this.failure) throw this.failure.error;
      // A failed attempt is skipped: the one after it (or the download's failure) is waited for.
      if (this.attempt > after && this.state !== 'failed') return this.attempt;
      await this.change(signal);
    }
  }

  /**
   * The bytes of attempt `attempt`, in order, as they are written; ends when the attempt is
   * complete. Throws AttemptAbandoned when it fails or is replaced, and the download's error
   * when it gives up.
   */
  async *follow(attempt: number, signal: AbortSignal): AsyncGenerator<Buffer> {
    const file = await open(this.path, 'r');
    try {
      let offset = 0;
      for (;;) {
        this.check(attempt);
        if (offset < this.written) {
          const buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, this.written - offset));
          const { bytesRead } = await file.read(buffer, 0, buffer.length, offset);
          // The file is rewritten only after its attempt was marked failed: an attempt still
          // current and not failed after the read was not rewritten during it.
          this.check(attempt);
          if (bytesRead === 0)
            throw new Error(`spool file ${this.path} is shorter than the ${this.written} bytes written to it`);
          offset += bytesRead;
          yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
          continue;
        }
        if (this.state === 'complete') return;
        await this.change(signal);
      }
    } finally {
      await file.close();
    }
  }

  private check(attempt: number): void {
    if (this.attempt !== attempt || this.state === 'failed') {
      if (this.failure && this.attempt === attempt) throw this.failure.error;
      throw new AttemptAbandoned(attempt);
    }
  }

  /** Resolves at the download's next step; rejects when `signal` aborts. */
  private change(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(new AbortedError());
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(new AbortedError());
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
