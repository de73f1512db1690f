/** What people read on stdout: a run's summary and the table of recent runs, without control characters. */
import type { RunRow } from '../load/audit.js';
import { describeBiRounding, type BiRounding } from '../load/bi-rounding.js';
import { stripControls } from '../text/safe-text.js';
import { listNewFields, type NewField } from '../transform/schema-drift.js';

export function formatSummary(
  run: RunRow,
  topReasons: Array<{ reason: string; count: number }>,
  bi?: BiRounding,
  newFields: readonly NewField[] = [],
  checks: ReadonlyArray<{ check_name: string; severity: string; passed: boolean; message: string }> = [],
): string {
  const lines = [
    `run ${run.id} ${run.status}${run.dry_run ? ' (dry run: nothing committed)' : ''} in ${duration(run)} ` +
      `(${run.trigger})`,
    `  received ${n(run.received)}  rejected ${n(run.rejected)}  duplicates ${n(run.duplicates)}  bytes ` +
      `${n(run.bytes)}`,
    `  inserted ${n(run.inserted)}  updated ${n(run.updated)}  unchanged ${n(run.unchanged)}  deleted ` +
      `${n(run.deleted)}  restored ${n(run.restored)}`,
  ];
  if ((run.backfilled ?? 0) > 0) {
    lines.push(
      `  backfilled ${n(run.backfilled)}: rows filled in with what the release that wrote them could not ` +
        `store (no new version)`,
    );
  }
  if ((run.kept_on_reject ?? 0) > 0) {
    lines.push(
      `  kept ${n(run.kept_on_reject)}: live rows left as their last valid version because their record ` +
        `was rejected (rejected_in_run = ${run.id})`,
    );
  }
  if (topReasons.length > 0) {
    lines.push('  top reject reasons:');
    for (const r of topReasons) lines.push(`    ${String(r.count).padStart(6)}  ${r.reason}`);
  }
  for (const line of listNewFields(newFields)) lines.push(`  ${line}`);
  if (run.unknown_fields && run.unknown_fields.length > 0)
    lines.push(`  fields not in the catalogue: ${run.unknown_fields.join(', ')}`);
  const failed = checks.filter((c) => !c.passed);
  if (checks.length > 0) lines.push(`  checks: ${checks.length - failed.length} of ${checks.length} passed`);
  for (const c of failed) lines.push(`    ${c.severity}: ${c.message}`);
  const biWarning = bi && describeBiRounding(bi);
  if (biWarning) lines.push(`  warning: ${biWarning}`);
  if (run.error) lines.push(`  error: ${run.error}`);
  // Field names, reasons and errors come from the upstream: no ESC sequence reaches the terminal.
  return stripControls(lines.join('\n'));
}

/** A run's checks in a few words: `2 warn`, `1 error, 1 warn` (failed ones), `ok`, or `-` when none were made. */
export function checksCell(checks: ReadonlyArray<{ passed: boolean; severity: string }> | undefined): string {
  if (checks === undefined || checks.length === 0) return '-';
  const errors = checks.filter((c) => !c.passed && c.severity === 'error').length;
  const warns = checks.filter((c) => !c.passed && c.severity === 'warn').length;
  const parts = [...(errors > 0 ? [`${errors} error`] : []), ...(warns > 0 ? [`${warns} warn`] : [])];
  return parts.length === 0 ? 'ok' : parts.join(', ');
}

type Checks = ReadonlyMap<string, ReadonlyArray<{ passed: boolean; severity: string }>>;

/**
 * `attempts`: how many a chain may have (1 + SYNC_RUN_RETRY_DELAYS), as /healthz counts them. A run
 * of a chain (a retry, or one to be retried) shows `2 of 4 (retry of 17)`: 17 is the first attempt.
 */
const columns = (attempts: number): Array<[string, (r: RunRow, checks: Checks) => string]> => [
  ['id', (r) => String(r.id)],
  ['trigger', (r) => r.trigger],
  [
    'attempt',
    (r) =>
      r.retry_of === null && !r.retry_at
        ? String(r.attempt)
        : `${r.attempt} of ${attempts}${r.retry_of === null ? '' : ` (retry of ${r.retry_of})`}`,
  ],
  [
    'status',
    (r) =>
      r.status +
      (r.dry_run ? ' (dry)' : '') +
      (r.retry_at ? `, retry ${r.retry_at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}` : ''),
  ],
  ['started_at', (r) => r.started_at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')],
  ['duration', (r) => duration(r)],
  ['received', (r) => n(r.received)],
  ['rejected', (r) => n(r.rejected)],
  ['dup', (r) => n(r.duplicates)],
  ['inserted', (r) => n(r.inserted)],
  ['updated', (r) => n(r.updated)],
  ['unchanged', (r) => n(r.unchanged)],
  ['deleted', (r) => n(r.deleted)],
  ['restored', (r) => n(r.restored)],
  ['checks', (r, checks) => checksCell(checks.get(String(r.id)))],
  ['error', (r) => shortError(r.error)],
];

const ERROR_WIDTH = 80;

/** The table keeps one line per run: a long error is cut there, and `status --run ID` shows it whole. */
function shortError(error: string | null): string {
  const text = (error ?? '').replace(/\s+/g, ' ');
  return text.length <= ERROR_WIDTH ? text : `${text.slice(0, ERROR_WIDTH - 1)}… (status --run ID shows it all)`;
}

/** `status --run ID`: every column of one run, one per line; the error whole, as stored. */
export function formatRun(run: RunRow): string {
  const entries = Object.entries(run).filter(([key]) => key !== 'error');
  const width = Math.max(...entries.map(([key]) => key.length), 'error'.length);
  const show = (value: unknown) =>
    value === null || value === undefined ? '-' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  const lines = entries.map(([key, value]) => `${key.padEnd(width)}  ${show(value)}`);
  lines.push(
    `${'error'.padEnd(width)}  ${run.error === null ? '-' : run.error.replaceAll('\n', `\n${' '.repeat(width + 2)}`)}`,
  );
  return stripControls(lines.join('\n'));
}

export function formatRunsTable(runs: RunRow[], attempts: number, checks: Checks = new Map()): string {
  if (runs.length === 0) return 'no runs yet';
  const COLUMNS = columns(attempts);
  const cells = runs.map((r) => COLUMNS.map(([, get]) => stripControls(get(r, checks))));
  const widths = COLUMNS.map(([title], i) => Math.max(title.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(COLUMNS.map(([title]) => title)), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

function n(value: number | null): string {
  return value === null ? '-' : String(value);
}

function duration(run: RunRow): string {
  if (!run.finished_at) return '-';
  const ms = Date.parse(run.finished_at) - Date.parse(run.started_at);
  return ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${(ms / 1000).toFixed(1)} s`;
}
