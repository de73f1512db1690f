/**
 * The large-listing check (`npm run bench -- --scale 10000000 --data-dir DIR`): `run --from-file`
 * of the reference listing and of one `scale / reference` times larger, each into an empty schema,
 * then `replay --run` of the large one. Passes when the large run succeeds, takes at most 1.1 ×
 * the size ratio × the reference time (11× for 10M against 1M), peaks at most 1.3 × the
 * reference RSS, and its replay succeeds.
 */
import type pg from 'pg';
import { listingFiles, type ListingFiles } from './listing-files.js';
import { measureSync, runCli, type SyncMeasure } from './sync-runner.js';

export interface ScaleResult {
  ok: boolean;
  reference: SyncMeasure;
  large: SyncMeasure;
  replay: SyncMeasure;
  lines: string[];
}

export async function scaleCheck(options: {
  records: number;
  reference: ListingFiles;
  dataDir: string;
  env: Record<string, string>;
  admin: pg.Client;
  log: (m: string) => void;
}): Promise<ScaleResult> {
  const { admin, env, log } = options;
  const large = await listingFiles(options.dataDir, options.records, 'base', { gzip: false, log });
  const fresh = async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${env.SYNC_DB_SCHEMA}" CASCADE`);
    const migrated = await runCli(['migrate'], env);
    if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  };
  const measure = async (name: string, args: string[]) => {
    const m = await measureSync(name, args, env, admin);
    log(`${name}: ${m.seconds.toFixed(1)} s, ${m.maxRssMb?.toFixed(0)} MB RSS, ${m.status} ${JSON.stringify(m.counts)}\n  ${JSON.stringify(m.stepsMs)}`);
    return m;
  };
  await fresh();
  const reference = await measure(`run --from-file, ${options.reference.records} records`, ['run', '--from-file', options.reference.json]);
  await fresh();
  const big = await measure(`run --from-file, ${options.records} records`, ['run', '--from-file', large.json]);
  const replay = await measure(`replay --run ${big.runId}`, ['replay', '--run', String(big.runId)]);
  await admin.query(`DROP SCHEMA IF EXISTS "${env.SYNC_DB_SCHEMA}" CASCADE`);

  const size = options.records / options.reference.records;
  const timeRatio = big.seconds / reference.seconds;
  const rssRatio = (big.maxRssMb ?? Infinity) / (reference.maxRssMb ?? 0);
  const checks = {
    [`${options.records} records loaded`]: big.status === 'succeeded' && big.counts.inserted === large.rows,
    [`time <= ${(1.1 * size).toFixed(1)}x the reference (${timeRatio.toFixed(2)}x)`]: timeRatio <= 1.1 * size,
    [`peak RSS <= 1.3x the reference (${rssRatio.toFixed(2)}x)`]: rssRatio <= 1.3,
    'replay succeeded': replay.status === 'succeeded' && replay.counts.unchanged === large.rows,
  };
  const f = (m: SyncMeasure) => `${m.seconds.toFixed(1)} s, ${m.maxRssMb?.toFixed(0)} MB peak RSS, ${m.status}`;
  return {
    ok: Object.values(checks).every(Boolean),
    reference,
    large: big,
    replay,
    lines: [
      `scale check: ${reference.name}: ${f(reference)}`,
      `scale check: ${big.name}: ${f(big)}`,
      `scale check: ${replay.name}: ${f(replay)}`,
      ...Object.entries(checks).map(([name, ok]) => `${ok ? 'met   ' : 'MISSED'} ${name}`),
    ],
  };
}
