/** The field catalogue and what derives from it: one list, every consumer in step with it. */
import { describe, expect, it } from 'vitest';
import { columnProblem } from '../../src/db/catalogue-check.js';
import { loadStatements } from '../../src/db/statements.js';
import { renderBiViews } from '../../src/db/bi-views.js';
import {
  BI_PRECISION,
  DATA_COLUMNS,
  FIELDS,
  KNOWN_FIELDS,
  MAX_BI_SCALE,
  biDecimalType,
  checkBiScale,
} from '../../src/fields.js';
import { STAGING_COLUMNS } from '../../src/load/staging.js';
import { FieldCounter } from '../../src/transform/field-counts.js';
import { recordSchema } from '../../src/transform/record.js';
import { GUARDED_FIELDS } from '../../src/transform/schema-drift.js';

describe('the field catalogue', () => {
  it('lists each field once, the id first', () => {
    expect(new Set(KNOWN_FIELDS).size).toBe(FIELDS.length);
    expect(KNOWN_FIELDS[0]).toBe('id');
    expect(DATA_COLUMNS).toEqual(KNOWN_FIELDS.slice(1));
  });

  it('gives the zod schema, the staging columns and the drift guard their fields', () => {
    expect(Object.keys(recordSchema.shape)).toEqual(KNOWN_FIELDS);
    expect(STAGING_COLUMNS).toEqual([
      'position',
      ...KNOWN_FIELDS,
      'extra_fields',
      'raw_offset',
      'raw_length',
      'hash_hi',
      'hash_lo',
      'shape',
    ]);
    expect(GUARDED_FIELDS).toEqual(FIELDS.filter((f) => !f.required).map((f) => f.name));
  });

  it('the field counter counts every catalogue field by name, and nothing else as known', () => {
    const counter = new FieldCounter();
    counter.count({ ...Object.fromEntries(KNOWN_FIELDS.map((name) => [name, 'x'])), other: 1 });
    counter.count({ id: 1 });
    const counts = counter.toJSON();
    expect(Object.keys(counts.fields)).toEqual(KNOWN_FIELDS);
    for (const name of KNOWN_FIELDS)
      expect(counts.fields[name]).toEqual(name === 'id' ? { present: 2, non_null: 2 } : { present: 1, non_null: 1 });
    expect(counts.unknown).toEqual({ other: 1 });
  });

  it('renders its column lists into the runtime SQL: every data column, no placeholder left', () => {
    const apply = loadStatements('load/apply.sql', [
      'create_staging',
      'insert_all',
      'create_changes',
      'classify_changes',
      'insert_new',
      'close_versions',
      'update_changed',
    ]);
    for (const [name, sql] of Object.entries(apply)) {
      expect(sql, name).not.toContain('{{');
      for (const column of DATA_COLUMNS) expect(sql, `${name} names ${column}`).toContain(column);
    }
    const { count_bi_rounding } = loadStatements('load/bi.sql', ['count_bi_rounding']);
    for (const f of FIELDS) expect(count_bi_rounding.includes(`scale(${f.name})`)).toBe(f.kind === 'decimal');
    const views = renderBiViews('data', { schema: 'data_bi', scale: 4 });
    expect(views).not.toContain('{{');
    for (const f of FIELDS) expect(views.includes(`round(${f.name}, 4) AS ${f.name}`)).toBe(f.kind === 'decimal');
  });

  it('names a field that a migration has not added yet', () => {
    const field = { name: 'inventory_in_transit', kind: 'decimal', required: false, meaning: 'In transit.' } as const;
    expect(columnProblem(field, 'bulk_wine_reconciliation', undefined)).toBe(
      'inventory_in_transit has no column in bulk_wine_reconciliation (add a migration)',
    );
    expect(
      columnProblem(field, 'bulk_wine_reconciliation', {
        table_name: 'bulk_wine_reconciliation',
        column_name: field.name,
        type: 'numeric',
        not_null: false,
      }),
    ).toBeUndefined();
  });
});

describe('the BI decimal type', () => {
  it('is numeric(28, S) with S from 0 to 20, in one place', () => {
    expect([BI_PRECISION, MAX_BI_SCALE]).toEqual([28, 20]);
    expect(biDecimalType(0)).toBe('numeric(28,0)');
    expect(checkBiScale(20)).toBe(20);
    for (const bad of [21, -1, 1.5, Number.NaN]) expect(() => checkBiScale(bad)).toThrow(RangeError);
  });
});
