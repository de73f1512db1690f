/**
 * Where a run's time went: the wall time of each phase, stored with the run (sync_runs.phases) and
 * drawn on its status page. A list, not an object: jsonb would reorder an object's keys, and the
 * phases are read in the order they ran. The download overlaps the parse (the parse follows the
 * spool file), so the phases need not add up to the run's duration. A --from-file run has `read
 * file` (hashing it) and a replay `restore archive` where a download would be.
 */
export const PHASES = [
  'download',
  'read file',
  'restore archive',
  'read live rows',
  'parse and stage',
  'duplicates',
  'classify',
  'apply',
  'BI count',
  'new fields',
  'profile',
  'checks',
  'archive',
  'commit',
] as const;
export type Phase = (typeof PHASES)[number];

export interface PhaseTime {
  phase: Phase;
  ms: number;
}

export class PhaseTimer {
  private readonly times: PhaseTime[] = [];

  /** Times `work` as `phase` (added to an earlier time of the same phase, e.g. a retried parse). */
  async time<T>(phase: Phase, work: Promise<T> | (() => Promise<T>)): Promise<T> {
    const started = performance.now();
    this.add(phase, 0); // its place in the list is where it started
    try {
      return await (typeof work === 'function' ? work() : work);
    } finally {
      this.add(phase, performance.now() - started);
    }
  }

  private add(phase: Phase, ms: number): void {
    const known = this.times.find((t) => t.phase === phase);
    if (known) known.ms += ms;
    else this.times.push({ phase, ms });
  }

  /** Whole milliseconds, in the order the phases started; null when no phase ran. */
  toJSON(): PhaseTime[] | null {
    return this.times.length === 0 ? null : this.times.map(({ phase, ms }) => ({ phase, ms: Math.round(ms) }));
  }
}
