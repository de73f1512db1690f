/**
 * This build as another release would be: an older one is the same program with the migrations
 * after `lastMigration` left out (a rollback starts it against a schema the current one migrated:
 * what decides is which migrations it knows); a newer one has changes made to a copy (`patch`),
 * such as a field added to its catalogue with its migration.
 */
import { cp, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './harness.js';

export interface ReleaseCopy {
  dir: string;
  bin: string;
  close(): Promise<void>;
}

export async function releaseCopy(options: {
  version: string;
  lastMigration?: number;
  patch?: (dir: string) => Promise<void>;
}): Promise<ReleaseCopy> {
  const dir = await mkdtemp(join(tmpdir(), 'wrs-release-'));
  for (const part of ['dist', 'sql', 'bin']) await cp(join(ROOT, part), join(dir, part), { recursive: true });
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  await writeFile(join(dir, 'package.json'), JSON.stringify({ ...pkg, version: options.version }));
  const migrations = join(dir, 'sql', 'migrations');
  const last = options.lastMigration;
  if (last !== undefined)
    for (const file of await readdir(migrations))
      if (Number.parseInt(file, 10) > last) await rm(join(migrations, file));
  await options.patch?.(dir);
  return { dir, bin: join(dir, 'bin', 'wine-recon-sync'), close: () => rm(dir, { recursive: true, force: true }) };
}

/** The program with the migrations after `lastMigration` left out, and another version. */
export function olderRelease(lastMigration: number, version: string): Promise<ReleaseCopy> {
  return releaseCopy({ version, lastMigration });
}

export type OlderRelease = ReleaseCopy;
