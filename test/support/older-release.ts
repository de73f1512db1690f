/**
 * This build as an older release would be: the same program with the migrations after `lastMigration`
 * left out and another version in package.json. A rollback is that program started against a
 * schema the current one migrated. (The code of an older release is not needed for that: what
 * decides is which migrations it knows.)
 */
import { cp, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './harness.js';

export interface OlderRelease {
  bin: string;
  close(): Promise<void>;
}

export async function olderRelease(lastMigration: number, version: string): Promise<OlderRelease> {
  const dir = await mkdtemp(join(tmpdir(), 'wrs-older-release-'));
  for (const part of ['dist', 'sql', 'bin']) await cp(join(ROOT, part), join(dir, part), { recursive: true });
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  await writeFile(join(dir, 'package.json'), JSON.stringify({ ...pkg, version }));
  const migrations = join(dir, 'sql', 'migrations');
  for (const file of await readdir(migrations)) if (Number.parseInt(file, 10) > lastMigration) await rm(join(migrations, file));
  return { bin: join(dir, 'bin', 'wine-recon-sync'), close: () => rm(dir, { recursive: true, force: true }) };
}
