/**
 * Moved to the field catalogue (src/fields.ts). This re-export keeps modules that other branches
 * are changing (run/run.ts) compiling until they import fields.ts themselves.
 */
export { DATA_COLUMNS, KNOWN_FIELDS, type FieldCounts, type KnownField, type Row } from './fields.js';
