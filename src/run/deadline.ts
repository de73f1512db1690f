/** SYNC_RUN_TIMEOUT_MS: a signal that aborts when the caller's does (SIGTERM) or when the run has taken too long. */
import { RunTimeoutError } from '../errors.js';

export interface Deadline {
  signal: AbortSignal;
  /** True when the time limit, not the caller, aborted the signal. */
  readonly expired: boolean;
  clear(): void;
}

export function runDeadline(parent: AbortSignal, limitMs: number): Deadline {
  const controller = new AbortController();
  let expired = false;
  const onParent = () => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener('abort', onParent, { once: true });
  const timer = setTimeout(() => {
    expired = !controller.signal.aborted;
    controller.abort(new RunTimeoutError(limitMs));
  }, limitMs);
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    clear() {
      clearTimeout(timer);
      parent.removeEventListener('abort', onParent);
    },
  };
}
