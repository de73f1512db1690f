import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root, found from this module whether it runs from src/ (tests) or dist/src/ (built). */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'sql'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the wine-recon-sync package root (package.json beside sql/)');
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = findRoot();
export const SQL_DIR = join(PACKAGE_ROOT, 'sql');
/** The program's version, from its package.json: written into every sync_runs row. */
export const APP_VERSION: string = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')).version;
