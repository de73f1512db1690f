/**
 * The reject reasons of one listing, counted for the summary, the webhook and the reject-ratio guard.
 * Rule: bounded whatever the listing (MAX_REASONS reasons of MAX_REASON_CHARS characters).
 */
import { shownName } from '../transform/field-name.js';

/** Distinct reasons counted one by one. */
export const MAX_REASONS = 100;
/** A reason's message is cut to this many characters (its path is a field name as shown: field-name.ts). */
export const MAX_REASON_CHARS = 200;
export const OTHER_REASONS = `other reasons (past the first ${MAX_REASONS} distinct ones)`;

export class RejectReasons {
  /** Per field path, per message (cut before any quoted value): how many errors. */
  private readonly counts = new Map<string, Map<string, number>>();
  private distinct = 0;
  /** Errors whose reason was first met when MAX_REASONS were counted already. */
  private others = 0;

  /** One error of a rejected record. Keyed by the error's own strings: no string built per record. */
  count(path: string, message: string): void {
    if (path.length > MAX_REASON_CHARS) path = shownName(path);
    const quote = message.indexOf('"');
    let key = quote < 0 ? message : message.slice(0, quote).trim();
    if (key.length > MAX_REASON_CHARS) key = `${key.slice(0, MAX_REASON_CHARS)}…`;
    let messages = this.counts.get(path);
    const before = messages?.get(key);
    if (before !== undefined) {
      messages!.set(key, before + 1);
      return;
    }
    if (this.distinct >= MAX_REASONS) {
      this.others++;
      return;
    }
    if (messages === undefined) this.counts.set(path, (messages = new Map()));
    messages.set(key, 1);
    this.distinct++;
  }

  /**
   * The most frequent reasons ("path: message"), most frequent first; "other reasons" among them when there are any.
   */
  top(limit: number): Array<{ reason: string; count: number }> {
    const all = this.entries();
    if (this.others > 0) all.push({ reason: OTHER_REASONS, count: this.others });
    return all.sort((a, b) => b.count - a.count).slice(0, limit);
  }

  /** Every reason counted one by one, in the order first met. */
  entries(): Array<{ reason: string; count: number }> {
    const all: Array<{ reason: string; count: number }> = [];
    for (const [path, messages] of this.counts) {
      for (const [message, count] of messages) all.push({ reason: path ? `${path}: ${message}` : message, count });
    }
    return all;
  }

  /** Errors counted under "other reasons". */
  get otherCount(): number {
    return this.others;
  }
}
