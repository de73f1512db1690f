/**
 * The one line a terminal shows while a run goes (`run` on a TTY), redrawn in place. Anything
 * else written to the terminal clears it first (the logger's write hook calls clear()), so that
 * no log line is glued onto it.
 */
let shownOn: NodeJS.WritableStream | undefined;

export const terminalLine = {
  show(stream: NodeJS.WritableStream, text: string): void {
    stream.write(`\r\x1b[K${text}`);
    shownOn = stream;
  },
  /** Removes the line, if one is shown; the next show() draws it again. */
  clear(): void {
    if (shownOn === undefined) return;
    const stream = shownOn;
    shownOn = undefined;
    stream.write('\r\x1b[K');
  },
};
