/**
 * The one reading of SYNC_SCHEDULE in SYNC_TIMEZONE: config.ts checks it with this, the daemon
 * waits for its next slot with it, catch-up asks it for the slot before now, and the status page's
 * "late" rule measures its rhythm with it. One parser for all of them, so that they cannot disagree
 * on a DST day or on an odd expression.
 *
 * croner computes both the previous and the next slot, which node-cron cannot (it only fires
 * forwards): with it alone there is no reading of "the slot that was missed". The daemon fires its
 * ticks from these same computed times (daemon/daemon.ts) instead of keeping a second scheduler
 * beside it, which could read the expression differently from the one that answers "when was the
 * last slot".
 *
 * DST: a slot whose local time does not exist (02:30 on the spring-forward day in Europe/Paris)
 * runs at the first valid time after the gap (03:00); a slot whose local time occurs twice (02:30
 * on the fall-back day) runs once, at its first occurrence. Expressions that fire every few minutes
 * or hours keep their interval through both.
 *
 * croner's CommonJS build is required on first use: loadConfig is synchronous, and most commands
 * never read a schedule.
 */
import { createRequire } from 'node:module';
import type * as croner from 'croner';
import type { Cron as CronType } from 'croner';

let cronClass: typeof CronType | undefined;
function Cron(): typeof CronType {
  cronClass ??= (createRequire(import.meta.url)('croner') as typeof croner).Cron;
  return cronClass;
}

export class CronSchedule {
  private readonly cron: CronType;

  /** Throws on an expression that is not 5 fields, or 6 with seconds first. */
  constructor(
    readonly expression: string,
    readonly timezone: string,
  ) {
    // paused: this object only computes; domAndDow false: a day-of-month and a day-of-week both
    // given match either, as in Vixie cron and node-cron.
    this.cron = new (Cron())(expression, { timezone, paused: true, mode: '5-or-6-parts', domAndDow: false });
  }

  /** The first slot strictly after `after`; null when the expression never fires again. */
  next(after: Date): Date | null {
    return this.cron.nextRun(after);
  }

  /** The last slot strictly before `before`; null when there is none. */
  previous(before: Date): Date | null {
    return this.cron.previousRuns(1, before)[0] ?? null;
  }

  /** The next `n` slots after `after`. */
  nextRuns(n: number, after: Date): Date[] {
    return this.cron.nextRuns(n, after);
  }
}

/** Whether `expression` is a schedule the daemon can run (5 fields, or 6 with seconds first). */
export function isCronExpression(expression: string): boolean {
  try {
    new CronSchedule(expression, 'UTC');
    return true;
  } catch {
    return false;
  }
}
