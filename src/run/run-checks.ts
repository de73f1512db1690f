/**
 * A run's profile and checks: the profile of what it would commit, computed in its transaction
 * after the changes (load/profile.ts), the checks made on it (checks/evaluate.ts), both stored in
 * the transaction of a run that commits, or after the rollback of a dry run or a refused one. An
 * error-level check that fails, and that no --accept-check lets through, refuses the run.
 */
import type { Config } from '../config.js';
import { checkNames, ruleFieldProblem, type CheckRule } from '../checks/checks-file.js';
import { DEFAULTS, evaluateChecks, refusalMessage, refusingChecks, type CheckResult } from '../checks/evaluate.js';
import type { Pool, PoolClient } from '../db/pool.js';
import { CheckFailedError, ConfigError } from '../errors.js';
import type { Logger } from '../log.js';
import { recentReceived, storeChecks } from '../load/checks-store.js';
import {
  baseProfile,
  profileAfterRun,
  profiledFields,
  storeProfile,
  type FieldProfile,
  type ProfileRun,
  type Queryable,
} from '../load/profile.js';
import type { PhaseTimer } from './phase-timer.js';

export class RunChecks {
  private profile: FieldProfile[] | undefined;
  private checks: CheckResult[] = [];
  private stored = false;

  private readonly accepted: string[];

  constructor(
    private readonly config: Config,
    private readonly runId: string,
    accepted: readonly string[],
  ) {
    this.accepted = [...accepted];
  }

  /** Checks a failure of which does not refuse this run (a schema change accepted for their field). */
  accept(names: readonly string[]): void {
    for (const name of names) if (!this.accepted.includes(name)) this.accepted.push(name);
  }

  /**
   * Profiles the run's result and checks it, on the run's connection inside its transaction.
   * `commits`: the run commits when this passes (not a dry run): the rows go into the transaction.
   * Throws CheckFailedError when an error-level check refuses the run.
   */
  async make(
    client: PoolClient,
    run: ProfileRun & { received: number; commits: boolean },
    phases: PhaseTimer,
    log: Logger,
  ): Promise<void> {
    const result = await phases.time('profile', profileAfterRun(client, run, log));
    this.profile = result.profile;
    log.info(
      { profileMethod: result.method, fullFields: result.fullFields, baseRun: run.baseRunId ?? null },
      `profile: ${result.method}` +
        (result.fullFields.length > 0 && result.method !== 'full'
          ? ` (${result.fullFields.join(', ')} aggregated in full)`
          : ''),
    );
    await phases.time('checks', async () => {
      if (this.config.checks.enabled) {
        const previous =
          run.baseRunId === undefined
            ? undefined
            : { runId: run.baseRunId, profile: await baseProfile(client, run.baseRunId, log) };
        this.checks = evaluateChecks(this.config.checks.rules, {
          received: run.received,
          recentReceived: await recentReceived(client, this.runId, DEFAULTS.volumeRuns, log),
          fields: new Map(result.fields.map((f) => [f.name, f.kind])),
          profile: result.profile,
          previous: previous?.profile.length ? previous : undefined,
          today: today(this.config.timezone),
        });
        for (const c of this.checks.filter((c) => !c.passed))
          log.warn(
            { check: c.check_name, severity: c.severity, observed: c.observed, expected: c.expected },
            `check failed (${c.severity}${this.accepted.includes(c.check_name) ? ', accepted' : ''}): ${c.message}`,
          );
      }
      const refusing = refusingChecks(this.checks, this.accepted);
      if (refusing.length > 0) throw new CheckFailedError(refusalMessage(refusing));
      if (run.commits) await this.store(client, log);
    });
  }

  /** After the rollback of a dry run or of a run a check refused: what it would have committed. */
  async storeOutside(pool: Pool, failure: unknown, dryRun: boolean): Promise<void> {
    if (this.stored || this.profile === undefined) return;
    if (!dryRun && !(failure instanceof CheckFailedError)) return;
    await this.store(pool);
  }

  private async store(db: Queryable, log?: Logger): Promise<void> {
    await storeProfile(db, this.runId, this.profile!, log);
    await storeChecks(db, this.runId, this.checks, log);
    this.stored = true;
  }

  /** Every check made (empty before, or with SYNC_CHECKS=off). */
  results(): CheckResult[] {
    return this.checks;
  }

  /** The checks that failed but let the run commit: warnings, and errors accepted with --accept-check. */
  warned(): CheckResult[] {
    return this.checks.filter((c) => !c.passed && (c.severity === 'warn' || this.accepted.includes(c.check_name)));
  }
}

/** Today in SYNC_TIMEZONE as YYYY-MM-DD (en-CA writes dates so), for `today` in a rule. */
function today(timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    new Date(),
  );
}

/**
 * Before a run is recorded: every rule of SYNC_CHECKS_FILE names a field the job profiles (the
 * catalogue's, or a kept field typed numeric or date); otherwise a configuration error (exit 2).
 */
export async function checkRuleFields(pool: Pool, config: Config): Promise<void> {
  const rules: readonly CheckRule[] = config.checks.rules;
  if (!config.checks.enabled || rules.length === 0) return;
  const fields = new Map((await profiledFields(pool)).map((f) => [f.name, f.kind]));
  for (const rule of rules) {
    const problem = ruleFieldProblem(rule, fields);
    if (problem !== undefined)
      throw new ConfigError(
        `SYNC_CHECKS_FILE: ${config.checks.file} line ${rule.line}, rule {${rule.label}} ` +
          `(${checkNames(rule).join(', ') || rule.kind}): ${problem}`,
      );
  }
}
