/**
 * The field catalogue's spellings in SQL: column lists the statements under sql/ name by `{{name}}`
 * placeholders. Rule: column names are trusted constants from src/fields.ts, never upstream input.
 */
import { DATA_FIELDS, DECIMAL_FIELDS, EXTRA_COLUMN, FIELDS, LATE_COLUMNS, SQL_TYPE, type Field } from '../fields.js';

type Fragment = (alias: string) => string;

const columnDdl = (f: Field, nullable: boolean) =>
  `${f.name} ${SQL_TYPE[f.kind]}${f.required && !nullable ? ' NOT NULL' : ''}`;
const list = (fields: readonly Field[], each: (f: Field) => string, separator = ', ') =>
  fields.map(each).join(separator);
const sqlString = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** For sql/load/*.sql (statements.ts renders them into every loaded statement). */
const STATEMENT_FRAGMENTS: Record<string, Fragment> = {
  /** `wpi, inventory_bulk_wine, ..., extra_fields`, or `s.wpi, ...` as {{s.data_columns}}. */
  data_columns: (a) =>
    withExtra(
      list(DATA_FIELDS, (f) => a + f.name),
      a + EXTRA_COLUMN,
    ),
  /**
   * The data columns as a change is judged: extra_fields as its text, because jsonb equality is
   * numeric ('1.0'::jsonb = '1.00'::jsonb) and the text keeps each number as sent.
   */
  compared_columns: (a) =>
    withExtra(
      list(DATA_FIELDS, (f) => a + f.name),
      `${a}${EXTRA_COLUMN}::text`,
    ),
  /**
   * Every field in catalogue order, then extra_fields (`id, wpi, ..., extra_fields`): the order both COPY writers write
   * a record in.
   */
  record_columns: (a) =>
    withExtra(
      list(FIELDS, (f) => a + f.name),
      a + EXTRA_COLUMN,
    ),
  /** The compared data columns but the late ones (LATE_COLUMNS): what must be equal for a backfill. */
  early_compared_columns: (a) =>
    list(
      DATA_FIELDS.filter((f) => !LATE_NAMES.has(f.name)),
      (f) => a + f.name,
    ) || 'NULL',
  /**
   * Per late column i (LATE_COLUMNS order), with the table as `t` and the record as `s`: equal, or
   * NULL in a row written by a run no later than $2[i], the last run before its migration.
   */
  late_backfillable: () =>
    LATE_COLUMNS.map(
      (c, i) =>
        `(t.${c.compared} IS NOT DISTINCT FROM s.${c.compared} OR (t.${c.name} IS NULL AND t.run_id <= ` +
        `($2::bigint[])[${i + 1}]))`,
    ).join('\n                   AND '),
  /** {{c.late_assignments}}: `extra_fields = c.extra_fields`, for each late column. */
  late_assignments: (a) => LATE_COLUMNS.map((c) => `${c.name} = ${a}${c.name}`).join(', '),
  /** One NULL per data column: a row that carries no values (a deletion). */
  data_nulls: () =>
    withExtra(
      list(DATA_FIELDS, () => 'NULL'),
      'NULL',
    ),
  /** {{c.data_assignments}}: `wpi = c.wpi, ..., extra_fields = c.extra_fields`. */
  data_assignments: (a) =>
    withExtra(
      list(DATA_FIELDS, (f) => `${f.name} = ${a}${f.name}`),
      `${EXTRA_COLUMN} = ${a}${EXTRA_COLUMN}`,
    ),
  /** Column definitions for CREATE TABLE, NOT NULL where the field is required. */
  data_columns_ddl: () =>
    withExtra(
      list(DATA_FIELDS, (f) => columnDdl(f, false), ',\n  '),
      `${EXTRA_COLUMN} jsonb`,
      ',\n  ',
    ),
  /** The same, every column nullable. */
  data_columns_ddl_nullable: () =>
    withExtra(
      list(DATA_FIELDS, (f) => columnDdl(f, true), ',\n  '),
      `${EXTRA_COLUMN} jsonb`,
      ',\n  ',
    ),
  /**
   * Per decimal column c, `count(*) FILTER (WHERE scale(c) > $1 AND abs(c) < $2)`, summed. This and
   * the next are what transform/bi-effect.ts computes per value in Node for a first load: change both.
   */
  decimals_rounded_count: () =>
    list(DECIMAL_FIELDS, (f) => `count(*) FILTER (WHERE scale(${f.name}) > $1 AND abs(${f.name}) < $2)`, '\n     + ') ||
    '0',
  /** Per decimal column c, `count(*) FILTER (WHERE abs(c) >= $2)`, summed. */
  decimals_overflow_count: () =>
    list(DECIMAL_FIELDS, (f) => `count(*) FILTER (WHERE abs(${f.name}) >= $2)`, '\n     + ') || '0',
};

const LATE_NAMES: ReadonlySet<string> = new Set(LATE_COLUMNS.map((c) => c.name));

function withExtra(fields: string, extra: string, separator = ', '): string {
  return `${fields}${separator}${extra}`;
}

/**
 * For sql/bi/views.sql. Every field, in catalogue order; the BI views' own placeholders
 * ({{limit}}, {{scale}}, ...) in these fragments are filled after them (bi-views.ts).
 */
const BI_FRAGMENTS: Record<string, Fragment> = {
  /** The inner projection: decimals rounded half away from zero to S places, the others as they are. */
  bi_rounded_columns: () =>
    list(FIELDS, (f) => (f.kind === 'decimal' ? `round(${f.name}, {{scale}}) AS ${f.name}` : f.name), ',\n         '),
  /** The outer projection: rounded decimals that fit the BI type, cast to it; NULL when they cannot. */
  bi_typed_columns: () =>
    list(
      FIELDS,
      (f) =>
        f.kind === 'decimal'
          ? `CASE WHEN abs(${f.name}) < {{limit}} THEN ${f.name} END::{{bi_type}} AS ${f.name}`
          : f.name,
      ',\n       ',
    ),
  /** Elements of the overflow_columns array: the name of each decimal left NULL because it cannot fit. */
  bi_overflow_names: () =>
    list(DECIMAL_FIELDS, (f) => `CASE WHEN abs(${f.name}) >= {{limit}} THEN '${f.name}' END`, ',\n         ') ||
    'NULL::text',
  /** COMMENT ON COLUMN for each field of {{bi}}.reconciliation (its values: bulk_wine_reconciliation). */
  bi_live_field_comments: () => biFieldComments('reconciliation', 'bulk_wine_reconciliation'),
  /** The same for {{bi}}.reconciliation_history (its values: bulk_wine_reconciliation_history). */
  bi_history_field_comments: () => biFieldComments('reconciliation_history', 'bulk_wine_reconciliation_history'),
};

/** Each field's meaning (its catalogue entry), and how the BI view shows it. */
function biFieldComments(view: string, source: string): string {
  const comment = (f: Field) =>
    f.kind === 'decimal'
      ? `${f.meaning} Rounded half away from zero to {{scale}} decimal places, {{bi_type}}; NULL when it ` +
        `needs more than {{int_digits}} integer digits (see overflow_columns). Every digit: ` +
        `{{data_name}}.${source}.${f.name}.`
      : `${f.meaning} Same as in {{data_name}}.${source}.`;
  // {{data_name}} is filled later, already escaped for a string literal; the meaning is escaped here.
  return list(FIELDS, (f) => `COMMENT ON COLUMN {{bi}}.${view}.${f.name} IS ${sqlString(comment(f))};`, '\n');
}

const PLACEHOLDER = /\{\{(?:(\w+)\.)?(\w+)\}\}/g;

function render(sql: string, fragments: Record<string, Fragment>): string {
  return sql.replace(PLACEHOLDER, (whole, alias: string | undefined, name: string) => {
    const fragment = Object.hasOwn(fragments, name) ? fragments[name] : undefined;
    return fragment === undefined ? whole : fragment(alias === undefined ? '' : `${alias}.`);
  });
}

/** Renders the catalogue's column lists into a statement; other placeholders are left for the caller. */
export function renderFieldLists(sql: string): string {
  return render(sql, STATEMENT_FRAGMENTS);
}

/** Renders the catalogue's column lists into the BI views template; its settings placeholders are left. */
export function renderBiFieldLists(sql: string): string {
  return render(sql, BI_FRAGMENTS);
}
