/**
 * Duplicate ids: the last valid copy wins. Earlier copies of a live id were settled by the
 * unchanged-record shortcut (staged ones are removed here; skipped ones are read back from the
 * listing), those of new ids by the SQL pass; all go to sync_rejects. A first load settles only the
 * ids its bitmap saw twice (or could not hold), and COPYs its fingerprints here (first-load.ts).
 */
import type { Pool, PoolClient } from '../db/pool.js';
import { readRecords } from '../extract/json/record-locate.js';
import type { Logger } from '../log.js';
import { duplicateIdReject, insertRejects, MAX_DUPLICATE_RAW_BYTES } from '../load/audit.js';
import { removeDuplicates, removeStagedPositions } from '../load/staging.js';
import type { Settled } from '../fingerprints/shortcut.js';
import type { FirstLoad } from './first-load.js';
import type { FastPaths } from './pipeline.js';

export interface DuplicateSettling {
  /** The run's connection, in its transaction. */
  client: PoolClient;
  pool: Pool;
  runId: string;
  /** A first load's writer; undefined on the staging path. */
  firstLoad: FirstLoad | undefined;
  /** The parse saw an id twice, or one its bitmap could not hold: the SQL pass must look. */
  maybeDuplicates: boolean;
  /** The spooled listing, to read the earlier copies' raw text back from. */
  listingPath: string;
  fast: FastPaths;
  settled: Pick<Settled, 'stagedLosers' | 'skippedLosers'>;
  log: Logger;
}

type Loser = { position: number; id: string; place: { offset: number; skip: number } };

/** Settles every earlier copy of an id and stores it as a reject; returns how many there were. */
export async function settleDuplicates(s: DuplicateSettling): Promise<number> {
  const losers = s.firstLoad
    ? (await s.firstLoad.settle(s.client, s.runId, s.log)).map(({ position, id, offset }) => ({
        position,
        id,
        place: offset === undefined ? s.fast.checkpoints.place(position) : { offset, skip: 0 },
      }))
    : await stagedLosers(s);
  if (losers.length === 0) return 0;
  const raw = await readRecords(
    s.listingPath,
    losers.map((l) => l.place),
    MAX_DUPLICATE_RAW_BYTES,
  );
  await insertRejects(
    s.pool,
    s.runId,
    losers.map((l, k) => duplicateIdReject(l.position, l.id, raw[k]!.bytes.toString('utf8'))),
  );
  return losers.length;
}

/** The staging path's earlier copies: of live ids, settled by the shortcut; of new ids, by the SQL pass. */
async function stagedLosers({ client, maybeDuplicates, fast, settled, log }: DuplicateSettling): Promise<Loser[]> {
  const staged = [...(await removeStagedPositions(client, settled.stagedLosers))];
  if (maybeDuplicates) staged.push(...(await removeDuplicates(client, log)));
  return [
    ...settled.skippedLosers.map(({ position, id }) => ({ position, id, place: fast.checkpoints.place(position) })),
    ...staged.map((row) => ({
      position: Number(row.position),
      id: row.record_id,
      place: { offset: Number(row.raw_offset), skip: 0 },
    })),
  ];
}
