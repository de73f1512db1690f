/**
 * Where `demo` writes, and how it names the commands it prints. It writes into a PostgreSQL it
 * starts itself, whose data lives in the user's data directory (never in the install directory,
 * which may be read-only), or into the database that `--database-url` names. A DATABASE_URL or
 * SYNC_DB_SCHEMA the shell holds is never taken on its own: it may well be production's.
 */
import { statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import { homedir } from 'node:os';
import { PACKAGE_ROOT } from '../io/paths.js';
import { loadDemoSettings } from '../config.js';

/** The settings that say which database and schema the job writes into. */
const DATABASE_SETTINGS = [
  'DATABASE_URL',
  'DATABASE_URL_FILE',
  'DATABASE_PASSWORD_FILE',
  'SYNC_DB_SCHEMA',
  'SYNC_BI_SCHEMA',
  'PGPASSWORD',
  'PGSSLMODE',
  'PGSSLROOTCERT',
  'PGSSLCERT',
  'PGSSLKEY',
] as const;

type Env = Record<string, string | undefined>;

/** The database settings that `env` holds (set and not blank), by name. */
export function heldDatabaseSettings(env: Env): string[] {
  return DATABASE_SETTINGS.filter((name) => (env[name] ?? '').trim() !== '');
}

/**
 * The job's environment for the demo, writing into `databaseUrl`: for its own embedded server,
 * without the shell's database settings; for the one --database-url `named`, with them but
 * DATABASE_URL_FILE (its password may come from DATABASE_PASSWORD_FILE or PGPASSWORD, which stay,
 * so that it need not show in `ps`).
 */
export function demoEnv(env: Env, databaseUrl: string, named: boolean): Env {
  const kept: Env = { ...env };
  for (const name of named ? ['DATABASE_URL_FILE'] : DATABASE_SETTINGS) delete kept[name];
  return { ...kept, DATABASE_URL: databaseUrl };
}

/**
 * The embedded server's data directory: DEMO_DATA_DIR, else `wine-recon-sync/postgres` in the XDG
 * data directory ($XDG_DATA_HOME, which the XDG spec says to ignore when relative, else
 * ~/.local/share). Its password file and the demo's log sit beside it.
 */
export function demoDataDir(env: Env): string {
  const chosen = loadDemoSettings(env).dataDir;
  if (chosen !== undefined) return chosen;
  const xdg = env.XDG_DATA_HOME?.trim();
  const home = env.HOME?.trim() || homedir();
  const dataHome = xdg && isAbsolute(xdg) ? xdg : join(home, '.local', 'share');
  return join(dataHome, 'wine-recon-sync', 'postgres');
}

/** The first folder above `path` that users other than its owner cannot enter, if any. */
export function closedToOthers(path: string): string | undefined {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    try {
      if ((statSync(dir).mode & 0o001) === 0) return dir;
    } catch {
      // Not made yet: the demo makes it, open to others when run as root.
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** Installed by npm (global or not): the package sits in a node_modules folder (`@scope/` aside). */
export const INSTALLED = [dirname(PACKAGE_ROOT), dirname(dirname(PACKAGE_ROOT))].some(
  (dir) => basename(dir) === 'node_modules',
);

/**
 * The program as the user types it: `wine-recon-sync` when installed; in a checkout, its
 * launcher, relative to the current directory (`./bin/wine-recon-sync` at the checkout's root).
 */
export function programWord(cwd = process.cwd()): string {
  if (INSTALLED) return 'wine-recon-sync';
  const launcher = join(PACKAGE_ROOT, 'bin', 'wine-recon-sync');
  const rel = relative(cwd, launcher);
  return rel.startsWith('..') || isAbsolute(rel) ? launcher : `./${rel}`;
}

/** How the demo is started again: `npm run demo` in a checkout, as docs/getting-started.md says. */
export function demoAgainWord(): string {
  return INSTALLED ? 'wine-recon-sync demo' : 'npm run demo';
}
