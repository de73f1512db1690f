/**
 * `schema --json` and `dbt-sources`: the relations the job owns, read from the connected database
 * (src/db/relations.ts) and written as JSON Schema or as a dbt properties file. Both only read:
 * no migration, no lock, so they work while a run holds the lock.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PROGRAM, SETTINGS, defineCommand, parseCommand } from './command-line.js';
import type { Io } from './io.js';
import { openJob, type Job } from '../job/job.js';
import { CronSchedule } from '../schedule/cron-schedule.js';
import { DEFAULT_STALE_AFTER_MS, type Config } from '../config.js';
import { durationMs } from '../settings/readers.js';
import { describeDatabase, type DatabaseDescription } from '../db/relations.js';
import { DBT_HEADER, dbtSources, formFor } from '../describe/dbt-sources.js';
import { toJsonSchema } from '../describe/json-schema.js';
import { ConfigError, UsageError } from '../errors.js';
import { staleRuleFromSchedule } from '../observe/page/freshness.js';
import { APP_VERSION } from '../io/paths.js';

const { SCHEMA_SETTINGS } = SETTINGS;

export const SCHEMA = defineCommand({
  name: 'schema',
  summary:
    'the tables and views the job owns, as JSON Schema (draft 2020-12): columns, types, nullability, keys, descriptions',
  flags: {
    json: { type: 'boolean', required: true, help: 'print the description as JSON Schema on stdout (the one format)' },
  },
  env: { needs: ['DATABASE_URL'], reads: [...SCHEMA_SETTINGS, 'LOG_LEVEL'] },
  notes:
    'One definition per relation under $defs, named schema.relation, read from the database itself: dbt-sources and the OpenLineage schema facets are built from the same description.',
});

export const DBT_SOURCES = defineCommand({
  name: 'dbt-sources',
  summary:
    'a dbt properties file (sources:) describing the BI views as they are in the database, with freshness read from the run audit',
  flags: {
    out: { type: 'string', value: 'FILE', help: 'write the file here (atomically) instead of stdout' },
    name: { type: 'string', value: 'N', default: 'wine_recon', help: 'the source name used in {{ source(N, ...) }}' },
    exact: { type: 'boolean', help: 'add a second source, N_exact, for the exact tables of SYNC_DB_SCHEMA' },
    'dbt-version': {
      type: 'string',
      value: 'V',
      default: '1.10',
      help: '1.10 or later: freshness under config: with loaded_at_query; 1.8 or 1.9: freshness: with loaded_at_field',
    },
    'error-after': {
      type: 'string',
      value: 'D',
      help: 'error_after as a length of time (90m, 52h, 3d); default twice warn_after',
    },
    force: { type: 'boolean', help: 'overwrite --out even when that file was not written by this command' },
  },
  env: {
    needs: ['DATABASE_URL'],
    reads: [...SCHEMA_SETTINGS, 'SYNC_STALE_AFTER', 'SYNC_SCHEDULE', 'SYNC_TIMEZONE', 'LOG_LEVEL'],
  },
  notes:
    "warn_after is SYNC_STALE_AFTER when set, else the schedule's rhythm as the status page reads it (the gap between two runs, plus as much again up to an hour). The same database gives the same bytes.",
});

export async function schemaCommand(args: string[], io: Io): Promise<number> {
  parseCommand(SCHEMA, args);
  return withDescription(io, async (_job, description) => {
    io.stdout.write(`${JSON.stringify(toJsonSchema(description, { name: PROGRAM, version: APP_VERSION }), null, 2)}\n`);
    return 0;
  });
}

export async function dbtSourcesCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(DBT_SOURCES, args);
  const form = formFor(flags['dbt-version']);
  if (form === undefined)
    throw new UsageError(
      `--dbt-version: must be a dbt version such as 1.9 or 1.10 (1.8 or later; got "${flags['dbt-version']}")`,
    );
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(flags.name))
    throw new UsageError(
      `--name: must be letters, digits and underscores, not starting with a digit (got "${flags.name}")`,
    );
  const errorAfter = flags['error-after'];
  const errorAfterMs = errorAfter === undefined ? undefined : durationMs(errorAfter);
  if (errorAfter !== undefined && errorAfterMs === undefined)
    throw new UsageError(
      `--error-after: must be a positive length of time such as 90m, 52h or 3d (got "${errorAfter}")`,
    );
  const out = flags.out;
  // Refused before the database is read: the mistake is the user's, and nothing is written.
  if (out !== undefined && flags.force !== true) await refuseForeignFile(out);
  return withDescription(io, async (job, description) => {
    if (description.bi.length === 0) {
      throw new ConfigError(
        `SYNC_BI_SCHEMA: the schema "${job.config.bi.schema}" has none of the BI views; run ` +
          `\`wine-recon-sync migrate\` with the same settings first (this command only reads)`,
      );
    }
    const warnAfterMs = warnAfter(job.config);
    const text = dbtSources(description, {
      name: flags.name,
      exact: flags.exact === true,
      form,
      warnAfterMs,
      errorAfterMs: errorAfterMs ?? 2 * warnAfterMs,
    });
    if (out === undefined) io.stdout.write(text);
    else {
      await writeAtomically(out, text);
      job.log.info(
        { file: out, relations: description.bi.length + (flags.exact === true ? description.data.length : 0) },
        'dbt sources written',
      );
    }
    return 0;
  });
}

async function withDescription(
  io: Io,
  work: (job: Job, description: DatabaseDescription) => Promise<number>,
): Promise<number> {
  const job = openJob(io, { api: false, database: true });
  try {
    const description = await describeDatabase(job.pool, { data: job.config.schema, bi: job.config.bi.schema });
    if (!description.data.some((r) => r.name === 'sync_runs')) {
      throw new ConfigError(
        `SYNC_DB_SCHEMA: the schema "${job.config.schema}" has no sync_runs table; run \`wine-recon-sync ` +
          `migrate\` first (this command only reads)`,
      );
    }
    return await work(job, description);
  } finally {
    await job.close();
  }
}

/** SYNC_STALE_AFTER, else the schedule's rhythm as the status page judges it (observe/page/freshness.ts), else 26 h. */
function warnAfter(config: Config): number {
  if (config.ui.staleAfterMs !== undefined) return config.ui.staleAfterMs;
  return (
    staleRuleFromSchedule(new CronSchedule(config.schedule, config.timezone).nextRuns(2, new Date()))?.ms ??
    DEFAULT_STALE_AFTER_MS
  );
}

/** An existing file whose first line is not ours is someone's own work: kept unless --force. */
async function refuseForeignFile(path: string): Promise<void> {
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw new UsageError(`--out: cannot read ${path} (${error.code ?? 'error'})`);
  });
  if (text !== undefined && !text.startsWith(DBT_HEADER)) {
    throw new UsageError(
      `--out: ${path} exists and was not written by dbt-sources (its first line is not "${DBT_HEADER} ` +
        `..."); choose another file, or add --force to overwrite it`,
    );
  }
}

/**
 * Written to a temporary file beside `path`, flushed, then renamed over it: a reader sees the old file or the new one.
 */
async function writeAtomically(path: string, text: string): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const file = await open(temporary, 'wx', 0o644);
    try {
      await file.writeFile(text);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new UsageError(`--out: cannot write ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}
