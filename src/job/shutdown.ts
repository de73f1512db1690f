/** How a long-running process (the daemon, `serve`, a run) stops: bounded, whatever its cleanup does. */

/** If cleanup hangs after a signal, exit anyway: an orchestrator expects the process gone. */
export function forceExitLater(ms: number): void {
  setTimeout(() => {
    process.stderr.write(`Error: shutdown took longer than ${ms / 1000} s; exiting\n`);
    process.exit(1);
  }, ms).unref();
}

/** Resolves with the first SIGTERM or SIGINT, listened for from this call on. */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}
