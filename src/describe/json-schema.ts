/**
 * `schema --json`: the relations of the one description (src/db/relations.ts) as JSON Schema
 * draft 2020-12, one definition per relation under `$defs`, named `schema.relation`. A row is an
 * object of its columns; a nullable column also takes `null`. What JSON Schema has no word for
 * (the SQL type, keys, the column order) rides along in `x-` annotations, which validators ignore.
 */
import type { ColumnDescription, DatabaseDescription, RelationDescription } from '../db/relations.js';

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function toJsonSchema(
  description: DatabaseDescription,
  program: { name: string; version: string },
): Record<string, Json> {
  const defs: Record<string, Json> = {};
  for (const relation of [...description.data, ...description.bi])
    defs[`${relation.schema}.${relation.name}`] = relationSchema(relation);
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title: `${program.name}: tables and views of database ${description.database}`,
    description:
      `The relations ${program.name} owns, as the database describes them (columns in its ` +
      `order, types, nullability, keys and COMMENTs). One definition per relation; a row of it validates ` +
      `against its definition.`,
    'x-database': description.database,
    $defs: defs,
  };
}

function relationSchema(relation: RelationDescription): Json {
  const properties: Record<string, Json> = {};
  for (const column of relation.columns) properties[column.name] = columnSchema(column);
  return {
    title: `${relation.schema}.${relation.name}`,
    ...(relation.description === null ? {} : { description: relation.description }),
    type: 'object',
    properties,
    required: relation.columns.map((c) => c.name),
    additionalProperties: false,
    'x-kind': relation.kind,
    'x-column-order': relation.columns.map((c) => c.name),
    ...(relation.primaryKey === null ? {} : { 'x-primary-key': relation.primaryKey }),
    ...(relation.uniqueKeys.length === 0 ? {} : { 'x-unique': relation.uniqueKeys }),
    ...(relation.foreignKeys.length === 0
      ? {}
      : {
          'x-foreign-keys': relation.foreignKeys.map((f) => ({
            columns: f.columns,
            references: { relation: `${f.references.schema}.${f.references.relation}`, columns: f.references.columns },
          })),
        }),
  };
}

function columnSchema(column: ColumnDescription): Json {
  const value = valueSchema(column.baseType, column.elementType);
  const type = value.type;
  const withNull = column.nullable && typeof type === 'string' ? { ...value, type: [type, 'null'] } : value;
  return {
    ...withNull,
    ...(column.allowedValues === null
      ? {}
      : { enum: column.nullable ? [...column.allowedValues, null] : column.allowedValues }),
    ...(column.description === null ? {} : { description: column.description }),
    'x-sql-type': column.type,
    'x-nullable': column.nullable,
  };
}

/**
 * A value as PostgreSQL's JSON functions write it (to_json): numbers as JSON numbers with every
 * digit, timestamps and dates as ISO text, jsonb as itself (any JSON), bytea as `\x` hex text.
 */
function valueSchema(baseType: string, elementType: string | null): Record<string, Json> {
  if (elementType !== null) return { type: 'array', items: valueSchema(elementType, null) };
  switch (baseType) {
    case 'int2':
    case 'int4':
    case 'int8':
      return { type: 'integer' };
    case 'numeric':
    case 'float4':
    case 'float8':
      return { type: 'number' };
    case 'bool':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', format: 'date' };
    case 'timestamptz':
    case 'timestamp':
      return { type: 'string', format: 'date-time' };
    case 'uuid':
      return { type: 'string', format: 'uuid' };
    case 'bytea':
      return { type: 'string', pattern: '^\\\\x([0-9a-f]{2})*$' };
    case 'json':
    case 'jsonb':
      return {};
    default:
      return { type: 'string' };
  }
}
