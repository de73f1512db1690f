/**
 * Outside programs the driver tests need (a JVM with pgjdbc, python3 with pyodbc + psqlODBC, with
 * psycopg2). A missing one fails the test under CI=true; on a developer's machine the suite is
 * skipped with a visible message saying what to install.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'vitest';

export const PGJDBC_JAR = '/usr/share/java/postgresql.jar';

/** `describe` when `missing` is undefined; otherwise a failing test under CI, a loud skip elsewhere. */
export function describeWithDriver(name: string, missing: string | undefined, body: () => void): void {
  if (missing === undefined) {
    describe(name, body);
  } else if (process.env.CI === 'true') {
    describe(name, () =>
      it(`needs ${name}`, () => {
        throw new Error(`${name}: ${missing} (CI=true: a missing driver is a failure)`);
      }),
    );
  } else {
    process.stderr.write(`\n*** SKIPPED "${name}": ${missing} ***\n\n`);
    describe.skip(name, body);
  }
}

/** Why pgjdbc cannot run here, or undefined. */
export function missingJdbc(): string | undefined {
  if (!existsSync(PGJDBC_JAR)) return `${PGJDBC_JAR} not found: apt-get install libpostgresql-jdbc-java`;
  try {
    execFileSync('java', ['-version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'no java on PATH: apt-get install default-jre-headless';
  }
}

/**
 * The first python3 that can import `module` (and pass `check`): Debian's python3-* packages live
 * in /usr/bin/python3, which a pyenv or venv python3 earlier on PATH does not see.
 */
export function findPython(
  module: string,
  check = '',
  install = `python3-${module}`,
): { python: string } | { missing: string } {
  for (const python of ['/usr/bin/python3', 'python3']) {
    try {
      execFileSync(python, ['-c', `import ${module}\n${check}`], { stdio: 'ignore' });
      return { python };
    } catch {
      // try the next one
    }
  }
  return {
    missing: `no python3 can import ${module}${check ? ' with the driver registered' : ''}: apt-get install ${install}`,
  };
}

/** Runs a program to completion; rejects with its stderr when it exits non-zero. */
export function runProgram(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 180_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} exited ${code ?? signal}:\n${stderr}`));
    });
  });
}
