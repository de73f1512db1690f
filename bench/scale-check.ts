/**
 * The large-listing check (`npm run bench -- --runs 0 --scale 10000000`): the first load of the
 * reference listing (`--records`, 1M by default) with `run --from-file` into an empty schema, then
 * `replay --run` of that run (its archived listing loaded again: an unchanged re-sync); the same
 * for the large listing (`--scale` records). The verdicts (report.ts judgeScale) compare the two:
 * the large first load's time (≤ 1.1 × the size ratio × the reference's: 11× for 10M against 1M)
 * and peak RSS (≤ 1.3×), and the large replay's peak RSS (≤ 250 MB and ≤ 1.3× the reference
 * replay's). The large listing is generated once into --data-dir, like the others, without gzip.
 */
import type pg from 'pg';
import { listingFiles, type ListingFiles } from './listing-files.js';
import { judgeScale, scaleTargetLines, type ScaleVerdicts } from './report.js';
import { freshSchema, measureSync, notMeasured, type SyncMeasure } from './sync-runner.js';

/**
 * Replay loads a run's archived payload, so the archive must be on (SYNC_ARCHIVE_KEEP=0 turns it
 * off). One payload kept is enough: each run is replayed before the next, in a schema of its own.
 */
const ARCHIVE_KEEP = '1';

export interface ScaleResult extends ScaleVerdicts {
  ok: boolean;
  /** Records of the reference and of the large listing. */
  records: { reference: number; large: number };
  reference: SyncMeasure;
  referenceReplay: SyncMeasure;
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
  const { admin, log } = options;
  const env: Record<string, string> = { ...options.env, SYNC_ARCHIVE_KEEP: ARCHIVE_KEEP };
  const large = await listingFiles(options.dataDir, options.records, 'base', { gzip: false, log });
  const measure = async (name: string, args: string[]) => {
    const m = await measureSync(name, args, env, admin);
    log(
      `${name}: ${m.seconds.toFixed(1)} s, ${m.maxRssMb?.toFixed(0)} MB RSS, ${m.status} ${JSON.stringify(m.counts)}` +
        `\n  ${JSON.stringify(m.stepsMs)}`,
    );
    return m;
  };
  /** First load into an empty schema, then the replay of its archive into the same schema. */
  const loadAndReplay = async (listing: ListingFiles) => {
    await freshSchema(admin, env);
    const load = await measure(`run --from-file, ${listing.records} records`, ['run', '--from-file', listing.json]);
    // A failed run archives nothing: its replay would be refused (exit 2, no run row), so skip it.
    const replay =
      load.status === 'succeeded'
        ? await measure(`replay --run ${load.runId}, ${listing.records} records`, [
            'replay',
            '--run',
            String(load.runId),
          ])
        : notMeasured('replay of a failed run');
    return { load, replay };
  };
  const reference = await loadAndReplay(options.reference);
  const big = await loadAndReplay(large);
  await admin.query(`DROP SCHEMA IF EXISTS "${env.SYNC_DB_SCHEMA}" CASCADE`);

  const verdicts = judgeScale({
    reference: { records: options.reference.records, rows: options.reference.rows, ...reference },
    large: { records: large.records, rows: large.rows, ...big },
  });
  const row = (what: string, m: SyncMeasure) => {
    const seconds = Number.isFinite(m.seconds) ? m.seconds.toFixed(2) : '-';
    const counts = ['received', 'inserted', 'unchanged'].map((k) => m.counts[k] ?? '-').join(' / ');
    return `| ${what} | ${m.name} | ${seconds} | ${m.maxRssMb?.toFixed(0) ?? '-'} | ${m.status} | ${counts} |`;
  };
  return {
    ok: Object.values(verdicts.targets).every(Boolean),
    records: { reference: options.reference.records, large: large.records },
    reference: reference.load,
    referenceReplay: reference.replay,
    large: big.load,
    replay: big.replay,
    ...verdicts,
    lines: [
      `scale check: ${large.records} records against ${options.reference.records} (${verdicts.ratios.size}x)` +
        `, each a first load into an empty schema` +
        `, then the replay of its archive (an unchanged re-sync)`,
      '| measurement | command | wall s | peak RSS MB | status | received / inserted / unchanged |',
      '|---|---|---:|---:|---|---|',
      row('reference first load', reference.load),
      row('reference replay', reference.replay),
      row('large first load', big.load),
      row('large replay', big.replay),
      ...scaleTargetLines(verdicts),
    ],
  };
}
