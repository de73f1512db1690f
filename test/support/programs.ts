/** Tests that need an outside program: under CI=true a missing one fails; locally it skips, saying why. */
import { spawnSync } from 'node:child_process';
import { describe, it } from 'vitest';

/** True when `command args...` runs and exits 0. */
export function runs(command: string, args: string[] = ['--version']): boolean {
  const r = spawnSync(command, args, { stdio: 'ignore', timeout: 30_000 });
  return r.error === undefined && r.status === 0;
}

export function describeWith(what: string, available: boolean, name: string, body: () => void): void {
  if (available) {
    describe(name, body);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () =>
      it(`needs ${what}`, () => {
        throw new Error(`${what} is not available, and CI=true: install it (see .ci/run)`);
      }),
    );
    return;
  }
  console.warn(`\n*** SKIPPING "${name}": ${what} is not available on this machine (under CI=true this fails) ***\n`);
  describe.skip(name, body);
}
