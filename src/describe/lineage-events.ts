/**
 * OpenLineage run events (spec 2-0-2) for a sync run: START, then one of COMPLETE, FAIL or ABORT.
 * The output datasets are named as OpenLineage names PostgreSQL tables (namespace
 * `postgres://host:port`, name `database.schema.table`), each with a `schema` facet built from the
 * one description (src/db/relations.ts), so the catalogue shows the columns the database has,
 * kept new fields included. Pure: the emitter (src/observe/lineage.ts) reads and sends.
 */
import type { RelationDescription } from '../db/relations.js';
import type { LineageRun } from '../load/lineage-runs.js';
import type { RunCheck, RunProfileField } from '../load/run-quality.js';
import { qualityAssertions, qualityMetrics } from './quality-facets.js';

export const SPEC_URL = 'https://openlineage.io/spec/2-0-2/OpenLineage.json';
const facetUrl = (version: string, name: string) =>
  `https://openlineage.io/spec/facets/${version}/${name}.json#/$defs/${name}`;
/** The facet schemas' versions, as test/fixtures/openlineage holds them. */
export const FACETS = {
  schema: facetUrl('1-2-0', 'SchemaDatasetFacet'),
  outputStatistics: facetUrl('1-0-2', 'OutputStatisticsOutputDatasetFacet'),
  errorMessage: facetUrl('1-0-1', 'ErrorMessageRunFacet'),
  parent: facetUrl('1-2-0', 'ParentRunFacet'),
  jobType: facetUrl('2-0-4', 'JobTypeJobFacet'),
  dataQualityMetrics: facetUrl('1-0-0', 'DataQualityMetricsDatasetFacet'),
  dataQualityAssertions: facetUrl('1-1-0', 'DataQualityAssertionsDatasetFacet'),
} as const;

/** The table whose profile the run checks: it carries the dataQualityMetrics facet. */
export const PROFILED_TABLE = 'bulk_wine_reconciliation';

/** A run's checks and profile (sync_run_checks, sync_run_profiles), for its end event. */
export interface RunQuality {
  checks: RunCheck[];
  profile: RunProfileField[];
}

/** The data the run writes, then the BI views over it: the outputs of every event. */
export const OUTPUT_RELATIONS = {
  data: ['bulk_wine_reconciliation', 'bulk_wine_reconciliation_history'],
  bi: ['reconciliation', 'reconciliation_history'],
} as const;

export type EventType = 'START' | 'COMPLETE' | 'FAIL' | 'ABORT';

export interface LineageContext {
  producer: string;
  job: { namespace: string; name: string };
  /** `postgres://host:port` and the database's name. */
  database: { namespace: string; name: string };
  /** The upstream listing, or null when the run's source cannot be named without a secret. */
  input: { namespace: string; name: string } | null;
  /** The output relations as the database describes them (OUTPUT_RELATIONS, those that exist). */
  outputs: RelationDescription[];
}

export function lineageEvent(
  type: EventType,
  run: LineageRun,
  context: LineageContext,
  eventTime: string,
  quality: RunQuality = { checks: [], profile: [] },
): Record<string, unknown> {
  const facet = (url: string, fields: Record<string, unknown>) => ({
    _producer: context.producer,
    _schemaURL: url,
    ...fields,
  });
  const runFacets: Record<string, unknown> = {};
  if (run.firstAttemptRunId !== null) {
    runFacets.parent = facet(FACETS.parent, { run: { runId: run.firstAttemptRunId }, job: context.job });
  }
  if (type === 'FAIL' || (type === 'ABORT' && run.error !== null)) {
    runFacets.errorMessage = facet(FACETS.errorMessage, {
      message: run.error ?? 'the run failed',
      programmingLanguage: 'TypeScript',
    });
  }
  const written = type === 'COMPLETE' ? run.rowsWritten : null;
  // What the checks found: on a COMPLETE, and on the FAIL of a run an error-level check refused
  // (CHECK_FAILED; its profile is what it would have committed).
  const refused = quality.checks.some((c) => !c.passed && c.severity === 'error');
  const checked = type === 'COMPLETE' || (type === 'FAIL' && refused);
  const metrics = checked ? qualityMetrics(quality.profile) : undefined;
  const assertions = checked ? qualityAssertions(quality.checks) : undefined;
  return {
    eventType: type,
    eventTime,
    producer: context.producer,
    schemaURL: `${SPEC_URL}#/$defs/RunEvent`,
    run: { runId: run.runId, ...(Object.keys(runFacets).length > 0 ? { facets: runFacets } : {}) },
    job: {
      ...context.job,
      facets: {
        jobType: facet(FACETS.jobType, { processingType: 'BATCH', integration: 'WINE_RECON_SYNC', jobType: 'JOB' }),
      },
    },
    inputs:
      context.input === null
        ? []
        : [
            {
              ...context.input,
              ...(assertions === undefined
                ? {}
                : { inputFacets: { dataQualityAssertions: facet(FACETS.dataQualityAssertions, assertions) } }),
            },
          ],
    outputs: context.outputs.map((relation) => ({
      namespace: context.database.namespace,
      name: `${context.database.name}.${relation.schema}.${relation.name}`,
      facets: {
        schema: facet(FACETS.schema, {
          fields: relation.columns.map((c) => ({
            name: c.name,
            type: c.type,
            ...(c.description === null ? {} : { description: c.description }),
            ordinal_position: c.position,
          })),
        }),
        ...(metrics !== undefined && relation.kind === 'table' && relation.name === PROFILED_TABLE
          ? { dataQualityMetrics: facet(FACETS.dataQualityMetrics, metrics) }
          : {}),
      },
      // Rows the run changed in the table it writes; the views show them without being written.
      ...(written !== null && relation.kind === 'table'
        ? { outputFacets: { outputStatistics: facet(FACETS.outputStatistics, { rowCount: written }) } }
        : {}),
    })),
  };
}

/** The event that ends a run of this status. */
export function endEventType(status: LineageRun['status']): EventType | undefined {
  switch (status) {
    case 'succeeded':
      return 'COMPLETE';
    case 'failed':
      return 'FAIL';
    case 'aborted':
    case 'abandoned':
      return 'ABORT';
    case 'running':
      return undefined;
  }
}

/**
 * The run's input, from what sync_runs.source says: the listing URL as scheme://host:port and its
 * path (never its query or credentials), a listing file, or the archived payload of a replay.
 */
export function inputDataset(
  run: Pick<LineageRun, 'source' | 'trigger'>,
  database: LineageContext['database'],
  dataSchema: string,
  host: string,
): LineageContext['input'] {
  const source = run.source;
  if (source === null) return null;
  if (run.trigger === 'replay')
    return { namespace: database.namespace, name: `${database.name}.${dataSchema}.sync_payloads` };
  if (run.trigger === 'file') return { namespace: `file://${host}`, name: source };
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    return null;
  }
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return { namespace: `${url.protocol}//${url.hostname}:${port}`, name: url.pathname };
}

/** `postgres://host:port` of a libpq URL: its first host, port 5432 unless given; no user or password. */
export function postgresNamespace(databaseUrl: string): string {
  const afterScheme = databaseUrl.replace(/^postgres(ql)?:\/\//, '');
  const hostPart = afterScheme.slice(afterScheme.lastIndexOf('@', afterScheme.search(/[/?]|$/)) + 1).split(/[/?]/)[0]!;
  const first = hostPart.split(',')[0] ?? '';
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(first);
  const [host, port] = bracket
    ? [`[${bracket[1]}]`, bracket[2]]
    : [first.replace(/:\d*$/, ''), /:(\d+)$/.exec(first)?.[1]];
  return `postgres://${decodeURIComponent(host || 'localhost')}:${port ?? '5432'}`;
}
