/**
 * The integration tests' one fixture: a simulator, a migrated schema of the test's own and a
 * temporary directory, opened before the tests of the file (or of the describe it is called in),
 * or afresh before each test, and closed after them. What it opened is closed in reverse order,
 * also when setting up failed halfway, and the in-process pools (harness.ts) with it.
 *
 * Hooks rather than vitest's `test.extend` fixtures: those reach a test only through its context
 * argument, so every test's signature and every helper of a file would have to take them, while
 * the tests here read the simulator and the schema from the file's scope, in helpers too.
 */
import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/server.js';
import { closeInProcessPools, createTestDb, syncEnv, tempDir, type TestDb } from './harness.js';

export interface SyncFixtureOptions {
  /** Start a simulator with these options (`{}`: its defaults); none when left out. */
  simulator?: SimulatorOptions;
  /** Create the schema (default true); false for a file that makes its own with `fixture.createDb`. */
  db?: boolean;
  /** Afresh for each test (beforeEach/afterEach) instead of once for all of them (beforeAll/afterAll). */
  each?: boolean;
  /** Added to `env` on every setup. */
  env?: Record<string, string>;
}

export interface SyncFixture {
  /** The simulator; only with the `simulator` option. */
  readonly sim: Simulator;
  /** The schema of one's own, migrated; dropped at teardown. */
  readonly db: TestDb;
  /** A temporary directory, removed at teardown. */
  readonly dir: string;
  /**
   * The CLI's environment for this simulator and schema (`syncEnv` and the `env` option): a new
   * object on each setup and after `restartSimulator`, which a test may change for the rest of it.
   */
  readonly env: Record<string, string>;
  /** `env` with `extra` on top, as a new object. */
  envWith(extra: Record<string, string>): Record<string, string>;
  /** Closes the simulator and starts another with these options; `env` then points to it. */
  restartSimulator(options: SimulatorOptions): Promise<Simulator>;
  /** Another migrated schema of one's own, dropped at teardown. */
  createDb(label: string): Promise<TestDb>;
  /** Runs `close` at teardown, before what was opened earlier is closed. */
  onTeardown(close: () => unknown): void;
}

/** Registers the hooks that open and close the fixture where it is called (a file or a describe). */
export function useSyncFixture(label: string, options: SyncFixtureOptions = {}): SyncFixture {
  let sim: Simulator | undefined;
  let db: TestDb | undefined;
  let dir: string | undefined;
  let env: Record<string, string> | undefined;
  let closers: Array<() => unknown> = [];

  const defer = (close: () => unknown) => void closers.push(close);
  const open = <T>(resource: T, close: (r: T) => unknown): T => {
    defer(() => close(resource));
    return resource;
  };
  const buildEnv = () => (env = db ? syncEnv(db, sim, options.env) : { ...options.env });
  const need = <T>(value: T | undefined, what: string, off: string | false = false): T => {
    if (value !== undefined) return value;
    throw new Error(`useSyncFixture('${label}'): no ${what}: ${off || 'it is there only in a test or a hook'}`);
  };
  const noSimulator = !options.simulator && 'the simulator option was not given';

  const setup = async () => {
    try {
      dir = open(await tempDir(), (d) => rm(d, { recursive: true, force: true }));
      if (options.db !== false) db = open(await createTestDb(label), (d) => d.close());
      defer(closeInProcessPools);
      if (options.simulator) {
        sim = await startSimulator(options.simulator);
        // The current one: restartSimulator replaces it.
        defer(() => sim?.close());
      }
      buildEnv();
    } catch (error) {
      await teardown().catch(() => undefined);
      throw error;
    }
  };

  /** Every closer runs, the latest first, even when one fails; the failures are thrown after. */
  const teardown = async () => {
    const pending = closers.reverse();
    closers = [];
    const failures: unknown[] = [];
    for (const close of pending) {
      try {
        await close();
      } catch (error) {
        failures.push(error);
      }
    }
    sim = db = dir = env = undefined;
    if (failures.length > 0)
      throw failures.length === 1
        ? failures[0]
        : new AggregateError(failures, `useSyncFixture('${label}'): ${failures.length} closers failed`);
  };

  if (options.each) {
    beforeEach(setup);
    afterEach(teardown);
  } else {
    beforeAll(setup);
    afterAll(teardown);
  }

  return {
    get sim() {
      return need(sim, 'simulator', noSimulator);
    },
    get db() {
      return need(db, 'database', options.db === false && 'db: false was given');
    },
    get dir() {
      return need(dir, 'directory');
    },
    get env() {
      return need(env, 'environment');
    },
    envWith: (extra) => ({ ...need(env, 'environment'), ...extra }),
    restartSimulator: async (simulatorOptions) => {
      const old = need(sim, 'simulator', noSimulator);
      sim = undefined;
      await old.close();
      sim = await startSimulator(simulatorOptions);
      buildEnv();
      return sim;
    },
    createDb: async (dbLabel) => open(await createTestDb(dbLabel), (d) => d.close()),
    onTeardown: defer,
  };
}
