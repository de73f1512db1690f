/**
 * Where a run's listing comes from, checked before its run row is written: a --from-file that
 * cannot be read, or a --run with nothing to replay, is the user's mistake (exit 2), not a failed
 * run. No row in sync_runs, no failure alert, no webhook for a typo.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Pool } from '../db/pool.js';
import { SourceError } from '../errors.js';
import { loadStatements } from '../db/statements.js';

const SQL = loadStatements('load/listing_source.sql', ['replay_candidate']);

const FILE_PROBLEMS: Record<string, string> = {
  ENOENT: 'no such file',
  ENOTDIR: 'a part of the path is not a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
};

/** The absolute path of a readable regular file, or a SourceError naming the problem. */
export async function checkListingFile(path: string): Promise<string> {
  const absolute = resolve(path);
  const refuse = (problem: string, cause?: unknown) =>
    new SourceError(`cannot read --from-file ${absolute}: ${problem}; no run was recorded`, { cause });
  try {
    const info = await stat(absolute);
    if (info.isDirectory()) throw refuse('it is a directory, not a listing file');
    if (!info.isFile()) throw refuse('it is not a regular file');
    await access(absolute, constants.R_OK);
  } catch (error) {
    if (error instanceof SourceError) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? '';
    throw refuse(FILE_PROBLEMS[code] ?? `${(error as Error).message}`, error);
  }
  return absolute;
}

interface Candidate {
  id: string;
  status: string;
  dry_run: boolean;
  sha256: string | null;
  oldest_kept: string | null;
  archived_before: string | null;
}

/** The archived payload of `runId` (its SHA-256), or a SourceError saying why there is none. */
export async function checkReplaySource(pool: Pool, runId: string): Promise<{ runId: string; sha256: string }> {
  const { rows } = await pool.query<Candidate>(SQL.replay_candidate, [runId]);
  const run = rows[0];
  const refuse = (why: string) => new SourceError(`cannot replay run ${runId}: ${why}; no run was recorded`);
  if (!run) throw refuse('there is no such run in sync_runs (wine-recon-sync status lists them)');
  if (run.sha256 !== null) return { runId: String(run.id), sha256: run.sha256 };
  if (run.status !== 'succeeded')
    throw refuse(
      `it ${run.status === 'running' ? 'is still running' : run.status}, and only successful runs archive ` +
        `their listing`,
    );
  if (run.dry_run) throw refuse('it was a dry run, which archives nothing');
  if (run.oldest_kept === null)
    throw refuse('no payload is archived at all (SYNC_ARCHIVE_KEEP=0 turns the archive off)');
  if (BigInt(run.id) < BigInt(run.oldest_kept)) {
    throw refuse(
      `its payload was pruned: only the newest SYNC_ARCHIVE_KEEP payloads are kept, and the oldest still ` +
        `archived is run ${run.oldest_kept}'s`,
    );
  }
  throw refuse(
    `it archived no payload of its own, because its listing was identical to the newest archived one (run ` +
      `${run.archived_before}'s: replay --run ${run.archived_before}) or SYNC_ARCHIVE_KEEP was 0 then`,
  );
}
