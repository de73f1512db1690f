/**
 * The published JSON Schemas the tests hold outputs to (test/fixtures/*, each with its SOURCE.md),
 * compiled with ajv: dbt's properties-file schemas (draft-07), OpenLineage's event and facet
 * schemas (draft 2020-12) and the Compose Specification (draft-07). Formats are checked
 * (ajv-formats); keywords the schemas carry for editors (`example`, `markdownDescription`) are
 * allowed, not errors.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ROOT } from './harness.js';

// ajv-formats is CommonJS with its function as the default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void;

const FIXTURES = join(ROOT, 'test', 'fixtures');
const read = (path: string) => JSON.parse(readFileSync(join(FIXTURES, path), 'utf8')) as Record<string, unknown>;

/** A validator whose errors read as one message (for expect(...).toEqual([])). */
export interface Checker {
  (value: unknown): string[];
}

function checker(validate: ValidateFunction): Checker {
  return (value) =>
    validate(value)
      ? []
      : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

/** dbt's properties-file schema: `latest-fusion` (dbt 1.10+, Fusion) or `latest` (dbt Core 1.x). */
export function dbtPropertiesSchema(which: 'latest-fusion' | 'latest'): Checker {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  return checker(ajv.compile(read(`dbt-jsonschema/dbt_yml_files-${which}.json`)));
}

/** OpenLineage's RunEvent schema (2-0-2) and, by their $id, the facet schemas kept beside it. */
export function openLineage(): {
  event: Checker;
  facet: (file: string) => Checker;
  facetId: (file: string) => string;
  specVersion: string;
} {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const spec = read('openlineage/OpenLineage.json');
  ajv.addSchema(spec);
  const event = ajv.compile({ $ref: `${spec.$id as string}#/$defs/RunEvent` });
  return {
    event: checker(event),
    facet: (file) => {
      const schema = read(`openlineage/${file}`);
      if (ajv.getSchema(schema.$id as string) === undefined) ajv.addSchema(schema);
      return checker(ajv.getSchema(schema.$id as string)!);
    },
    /** The facet's `$id` with the pointer to its definition: what an event's `_schemaURL` must say. */
    facetId: (file) => `${read(`openlineage/${file}`).$id as string}#/$defs/${file.replace(/\.json$/, '')}`,
    specVersion: (spec.$id as string).split('/').at(-2)!,
  };
}

/** A JSON Schema 2020-12 document checked against its meta-schema. */
export function draft2020(): (schema: unknown) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  return (schema) =>
    ajv.validateSchema(schema as object) ? [] : (ajv.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

/** The Compose Specification's schema (compose-spec/compose-spec, schema/compose-spec.json). */
export function composeSpec(): Checker {
  const ajv = new Ajv({ strict: false, allErrors: true });
  const schema = read('compose-spec/compose-spec.json');
  delete schema.$schema; // "https://json-schema.org/draft-07/schema" without "#": draft-07 itself
  return checker(ajv.compile(schema));
}
