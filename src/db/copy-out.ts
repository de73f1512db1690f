/**
 * `COPY ... TO STDOUT` read straight off the connection, CopyData payloads handed to a sink as byte
 * ranges of the socket's chunks. Rule: the socket's data listener is always given back to pg.
 */
import type { Readable } from 'node:stream';
import type { Connection } from 'pg';

/** Where the payloads go. */
export interface CopyOutSink {
  /**
   * The next `b[start, end)` of the COPY's data, in order (a message's payload, or the part of it
   * in this chunk). Copy what is kept: the chunk is the socket's.
   */
  data(b: Buffer, start: number, end: number): void;
  /** After each chunk: a promise when the reading must wait (its sink is writing), else undefined. */
  drain(): Promise<void> | undefined;
}

// Backend message types (protocol-message-formats).
const COPY_DATA = 0x64; // 'd'
const COPY_OUT_RESPONSE = 0x48; // 'H'
const ERROR_RESPONSE = 0x45; // 'E'
const NOTICE_RESPONSE = 0x4e; // 'N'
const PARAMETER_STATUS = 0x53; // 'S'
const NOTIFICATION_RESPONSE = 0x41; // 'A'

/** The connection's socket (net or TLS), read in paused mode. */
type Socket = Readable;

export class CopyOut {
  /** Rows the server reported (CommandComplete), once `done` resolved. */
  rowCount = 0;
  /** Resolves once the statement is over (ReadyForQuery); rejects with its error. */
  readonly done: Promise<number>;
  private resolve!: (rows: number) => void;
  private reject!: (error: unknown) => void;
  private failure: unknown;

  private socket: Socket | undefined;
  private parserListener: ((chunk: Buffer) => void) | undefined;
  /** A message header split across chunks (at most 4 of its 5 bytes). */
  private header = Buffer.alloc(0);
  /** Bytes of the current message's payload still to come (0: a header is next). */
  private left = 0;
  private code = 0;
  private waiting = false;
  private readonly readable = () => this.forward();

  constructor(
    readonly text: string,
    private readonly sink: CopyOutSink,
  ) {
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.done.catch(() => undefined); // the caller awaits it
  }

  /**
   * pg: the statement's turn. An error returned (not thrown) is handed to handleError by pg, which goes on with its
   * queue.
   */
  submit(connection: Connection): Error | undefined {
    const socket = (connection as unknown as { stream: Socket }).stream;
    const listeners = socket.listeners('data');
    if (listeners.length !== 1)
      return new Error(`COPY TO: expected the connection's one data listener, found ${listeners.length}`);
    this.socket = socket;
    this.parserListener = listeners[0] as (chunk: Buffer) => void;
    socket.removeListener('data', this.parserListener);
    socket.pause();
    socket.on('readable', this.readable);
    connection.query(this.text);
    this.forward();
    return undefined;
  }

  /** pg: the statement failed (an ErrorResponse, given back to its parser) or the connection did. */
  handleError(error: unknown): void {
    this.failure ??= error;
    // A connection lost while attached: nothing will follow.
    if (this.socket !== undefined) this.detach(Buffer.alloc(0));
    this.reject(error);
  }

  handleCommandComplete(message: { text?: string }): void {
    const match = /COPY (\d+)/.exec(message.text ?? '');
    if (match) this.rowCount = Number(match[1]);
  }

  handleReadyForQuery(): void {
    if (this.failure !== undefined) this.reject(this.failure);
    else this.resolve(this.rowCount);
  }

  private forward(): void {
    const socket = this.socket;
    let chunk: Buffer | null;
    while (!this.waiting && this.socket !== undefined && (chunk = socket!.read() as Buffer | null) !== null) {
      const rest = this.parse(chunk);
      if (rest !== undefined) {
        this.detach(rest);
        return;
      }
      const wait = this.failure === undefined ? this.sink.drain() : undefined;
      if (wait !== undefined) {
        this.waiting = true;
        wait.then(
          () => {
            this.waiting = false;
            this.forward();
          },
          (error: unknown) => {
            this.failure ??= error;
            this.waiting = false;
            this.forward();
          },
        );
      }
    }
  }

  /**
   * Takes the chunk's messages; returns what follows CopyDone or starts at an ErrorResponse (to give back), else
   * undefined.
   */
  private parse(chunk: Buffer): Buffer | undefined {
    let b = chunk;
    let i = 0;
    if (this.header.length > 0) {
      b = Buffer.concat([this.header, chunk]);
      this.header = Buffer.alloc(0);
    }
    const end = b.length;
    while (i < end) {
      if (this.left === 0) {
        const code = b[i]!;
        if (code === ERROR_RESPONSE) return b.subarray(i);
        if (end - i < 5) {
          this.header = Buffer.from(b.subarray(i));
          return undefined;
        }
        this.code = code;
        this.left = b.readUInt32BE(i + 1) - 4;
        i += 5;
        if (this.left === 0 && this.ended()) return b.subarray(i);
        continue;
      }
      const n = Math.min(this.left, end - i);
      if (this.code === COPY_DATA && this.failure === undefined) this.give(b, i, i + n);
      this.left -= n;
      i += n;
      if (this.left === 0 && this.ended()) return b.subarray(i);
    }
    return undefined;
  }

  /**
   * Hands data to the sink. Once it fails, the rest of the COPY is read and dropped (the caller
   * may cancel it), and `done` rejects with the sink's error when pg has seen the statement end.
   */
  private give(b: Buffer, start: number, end: number): void {
    try {
      this.sink.data(b, start, end);
    } catch (error) {
      this.failure = error;
    }
  }

  /** After a whole message: whether the COPY is over (CopyDone, or a message that is not part of it). */
  private ended(): boolean {
    // CopyDone (or anything else) ends it; these may come in its course.
    const code = this.code;
    return !(
      code === COPY_DATA ||
      code === COPY_OUT_RESPONSE ||
      code === NOTICE_RESPONSE ||
      code === PARAMETER_STATUS ||
      code === NOTIFICATION_RESPONSE
    );
  }

  private detach(rest: Buffer): void {
    const socket = this.socket!;
    const listener = this.parserListener!;
    this.socket = undefined;
    socket.removeListener('readable', this.readable);
    socket.on('data', listener);
    if (rest.length > 0) listener(rest);
    // Resumed after this turn, as pg-copy-streams does: the parser's handling may pause it meanwhile.
    process.nextTick(() => socket.resume());
  }
}
