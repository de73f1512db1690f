/**
 * The BI views' columns for extra fields, rendered into sql/bi/views.sql.
 * Rule: upstream names reach SQL only as literals PostgreSQL quoted, and every cast is guarded so
 * the views never error.
 */
import { quoteIdent } from './pool.js';

/** How the BI views show a field (sync_fields.bi_kind). */
export type BiKind = 'number' | 'date' | 'text' | 'boolean' | 'json';

/** An extra field that has a column, as sql/db/bi_views.sql extra_field_columns reads it. */
export interface ExtraFieldColumn {
  column_name: string;
  bi_kind: BiKind;
  first_run_id: string;
  /** The field name as a string literal, quoted by PostgreSQL. */
  key_literal: string;
  /** The column name as a string literal, quoted by PostgreSQL (for overflow_columns). */
  column_literal: string;
  /** The field name as JSON (quoted, escaped), for the column's comment. */
  name_json: string;
}

export interface BiShape {
  scale: number;
  biType: string;
  /** 10^(P-S) as a numeric literal. */
  limit: string;
  /** The data schema, quoted. */
  data: string;
  /** The data schema's name as in comments. */
  dataName: string;
}

/** The typed value of a column `x` (its jsonb value): NULL when it does not fit the kind. */
function typed(kind: BiKind, x: string, shape: BiShape): string {
  switch (kind) {
    case 'number':
      return (
        `CASE WHEN jsonb_typeof(${x}) = 'number' THEN CASE WHEN abs(round((${x})::numeric, ` +
        `${shape.scale})) < ${shape.limit} THEN round((${x})::numeric, ${shape.scale}) END END::${shape.biType}`
      );
    case 'date':
      return `CASE WHEN jsonb_typeof(${x}) = 'string' THEN ${shape.data}.sync_extra_date(${x} #>> '{}') END`;
    case 'boolean':
      return `CASE WHEN jsonb_typeof(${x}) = 'boolean' THEN (${x})::boolean END`;
    case 'text':
      return `${x} #>> '{}'`;
    case 'json':
      return `CASE WHEN jsonb_typeof(${x}) <> 'null' THEN (${x})::text END`;
  }
}

/** What the column's comment says of its type. */
function typeNote(kind: BiKind, shape: BiShape): string {
  switch (kind) {
    case 'number':
      return (
        `Its numbers rounded half away from zero to ${shape.scale} decimal places, ${shape.biType}; ` +
        `NULL when one needs more integer digits or is not a number (see overflow_columns).`
      );
    case 'date':
      return 'Its YYYY-MM-DD strings as dates; NULL when one names no date or is not a string (see overflow_columns).';
    case 'boolean':
      return 'Its true/false values; NULL when one is not a boolean (see overflow_columns).';
    case 'text':
      return 'Its strings as text.';
    case 'json':
      return 'Its values as JSON text (objects, arrays, or values of several kinds).';
  }
}

/** The comment of an extra field's column in `view`; quoted by PostgreSQL before it is rendered. */
export function extraFieldComment(c: ExtraFieldColumn, source: string, shape: BiShape): string {
  return (
    `New upstream field ${c.name_json}, not in this version's field catalogue; first seen by run ` +
    `${c.first_run_id}. ${typeNote(c.bi_kind, shape)} Exact value: ` +
    `${shape.dataName}.${source}.extra_fields->${c.name_json}.`
  );
}

/**
 * The fill values of sql/bi/views.sql's extra_* placeholders; `comments` are the quoted
 * comment literals, two per column (reconciliation's, then reconciliation_history's).
 */
export function extraFieldFragments(
  columns: readonly ExtraFieldColumn[],
  comments: readonly string[],
  shape: BiShape,
  bi: string,
): Record<string, string> {
  const each = (f: (c: ExtraFieldColumn, x: string, k: number) => string) =>
    columns.map((c, k) => f(c, quoteIdent(c.column_name), k)).join('');
  return {
    extra_values: each((c, x) => `,\n         extra_fields -> ${c.key_literal} AS ${x}`),
    extra_typed: each((c, x) => `,\n       ${typed(c.bi_kind, x, shape)} AS ${x}`),
    // A text or JSON column shows every value: only the other kinds can leave one out.
    extra_overflow: each((c, x) =>
      c.bi_kind === 'text' || c.bi_kind === 'json'
        ? ''
        : `,\n         CASE WHEN jsonb_typeof(${x}) <> 'null' AND (${typed(c.bi_kind, x, shape)}) IS NULL ` +
          `THEN ${c.column_literal} END`,
    ),
    extra_live_comments: each((_, x, k) => `\nCOMMENT ON COLUMN ${bi}.reconciliation.${x} IS ${comments[2 * k]!};`),
    extra_history_comments: each(
      (_, x, k) => `\nCOMMENT ON COLUMN ${bi}.reconciliation_history.${x} IS ${comments[2 * k + 1]!};`,
    ),
  };
}
