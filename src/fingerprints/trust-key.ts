/**
 * The trust key: a digest of everything that shapes a stored row from a record's bytes. The whole
 * program (its code as it runs: dist/src when built, src/ under the tests), the SQL it runs, its
 * dependency lock, the fingerprint function, and the settings that change a row
 * (SYNC_EXTRA_FIELDS). Fingerprints are seeded with it, so after any deploy that changes one byte
 * of these, no stored fingerprint matches and the first run compares every record (the fair price
 * of a deploy); nothing has to remember to bump a version.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT, SQL_DIR } from '../io/paths.js';
import { FINGERPRINT_NAME } from './fingerprint.js';

export interface TrustKey {
  /** Hex digest, stored with the fingerprints so that a run can say "program changed". */
  key: string;
  /** The fingerprint seed: the digest's first 32 bits. */
  seed: number;
}

/** The program's code root: the folder above this module's folder (src/ or dist/src/). */
const CODE_ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/** Digest of the files under `roots` (names and bytes, in a stable order) and of `files`. */
export function trustKeyOf(roots: readonly string[], files: readonly string[]): TrustKey {
  const digest = createHash('sha256').update(FINGERPRINT_NAME);
  const add = (path: string, base: string) => digest.update(`\0${relative(base, path)}\0`).update(readFileSync(path));
  for (const root of roots) for (const path of listFiles(root)) add(path, root);
  for (const path of files) if (existsSync(path)) add(path, PACKAGE_ROOT);
  return keyOf(digest.digest('hex'));
}

/** A trust key from a hex digest: its first 128 bits, and the first 32 as the seed. */
function keyOf(hex: string): TrustKey {
  return { key: hex.slice(0, 32), seed: Number.parseInt(hex.slice(0, 8), 16) | 0 };
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  )) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

let program: string | undefined;
const cached = new Map<string, TrustKey>();

/**
 * This program's trust key, computed once (a few hundred small files, read on first use), with the
 * settings that shape a stored row from the same bytes: SYNC_EXTRA_FIELDS (a row loaded with
 * `drop` has no extra_fields, so its fingerprint must not vouch for it under `keep`, and back).
 */
export function programTrustKey(extraFields: 'keep' | 'drop' = 'keep'): TrustKey {
  program ??= trustKeyOf(
    [CODE_ROOT, SQL_DIR],
    [join(PACKAGE_ROOT, 'package.json'), join(PACKAGE_ROOT, 'package-lock.json')],
  ).key;
  let key = cached.get(extraFields);
  if (key === undefined)
    cached.set(
      extraFields,
      (key = keyOf(createHash('sha256').update(`${program}\0extra_fields=${extraFields}`).digest('hex'))),
    );
  return key;
}
