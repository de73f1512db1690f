/**
 * The one reading of SYNC_SCHEDULE in SYNC_TIMEZONE, for config, the daemon, catch-up and the page.
 * Rule: nothing else parses the expression, so that they cannot disagree on a DST day.
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
