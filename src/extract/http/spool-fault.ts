/**
 * Errors of the local disk while spooling the listing. They are not upstream faults: another
 * attempt would fail the same way, so they end the run at once with one sentence naming the
 * directory an operator can act on (TMPDIR, the parent of the run's own spool directory).
 */
import { dirname } from 'node:path';
import { LocalDiskError } from '../../errors.js';

const LOCAL_CODES = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'ENOTDIR']);

/**
 * A LocalDiskError when `error` is a local disk refusal, else undefined. `file` is the spool file or directory being
 * made.
 */
export function spoolFault(error: unknown, file: string, bytesSoFar: number): LocalDiskError | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string' || !LOCAL_CODES.has(code)) return undefined;
  // The run spools into wine-recon-sync-<run>-XXXXXX under TMPDIR; that directory is gone by the time anyone reads the
  // error.
  const dir = dirname(dirname(file));
  const needed = bytesSoFar > 0 ? ` (${megabytes(bytesSoFar)} needed so far)` : '';
  const sentence = {
    ENOSPC: `no space left in ${dir} while spooling the listing${needed}`,
    EDQUOT: `disk quota exceeded in ${dir} while spooling the listing${needed}`,
    EROFS: `${dir} is read-only: cannot spool the listing there`,
    EACCES: `no permission to write in ${dir} while spooling the listing`,
    EPERM: `no permission to write in ${dir} while spooling the listing`,
    ENOTDIR: `${dir} is not a directory: cannot spool the listing there`,
  }[code];
  return new LocalDiskError(`${sentence}; set TMPDIR to a writable directory with room for the listing (${code})`, {
    cause: error,
  });
}

/**
 * A full disk met by another file of the run's own directory `dir` (a first load's fingerprints
 * and the rows it sets aside, the live rows past their cache), with or without a spooled listing.
 * Other codes pass: an unreadable --from-file listing is no fault of TMPDIR.
 */
export function runDirFault(error: unknown, dir: string): LocalDiskError | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code !== 'ENOSPC' && code !== 'EDQUOT') return undefined;
  const what = code === 'ENOSPC' ? 'no space left' : 'disk quota exceeded';
  return new LocalDiskError(
    `${what} in ${dirname(dir)} for the run's temporary files; set TMPDIR to a writable directory with ` +
      `room for them (${code})`,
    { cause: error },
  );
}

function megabytes(bytes: number): string {
  const mb = bytes / 2 ** 20;
  return mb >= 10 ? `${Math.round(mb)} MB` : `${mb.toFixed(1)} MB`;
}
