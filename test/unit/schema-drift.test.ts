import { describe, expect, it } from 'vitest';
import { FieldCounter, MAX_EXTRA_FIELDS, type FieldCounts } from '../../src/transform/field-counts.js';
import {
  describeDisappeared,
  explainRejects,
  findDisappeared,
  newFields,
  share,
  type Baseline,
} from '../../src/transform/schema-drift.js';

const full = {
  id: '1',
  wpi: 'W',
  inventory_bulk_wine: '1',
  inventory_finished_goods: '2',
  inventory_sales: '3',
  vintage_forecast: '4',
  vintage_make: '5',
  first_sale: '2020-01-01',
};

function counts(records: object[]): FieldCounts {
  const counter = new FieldCounter();
  for (const r of records) counter.count(r);
  return counter.toJSON();
}
const baseline = (records: object[], runId = '41'): Baseline => {
  const c = counts(records);
  return { runId, counts: c, unknownNames: new Set(Object.keys(c.unknown)) };
};
const times = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));

describe('FieldCounter', () => {
  it('counts presence and values per known field, and each unknown field', () => {
    const c = counts([
      full,
      { ...full, inventory_sales: null, first_sale: '' },
      { id: '3', wpi: 'W', colour: 'red' },
      { id: '4', wpi: 'W', colour: 'red', __proto__x: 1 },
    ]);
    expect(c.records).toBe(4);
    expect(c.fields.id).toEqual({ present: 4, non_null: 4 });
    expect(c.fields.inventory_sales).toEqual({ present: 2, non_null: 1 });
    expect(c.fields.first_sale).toEqual({ present: 2, non_null: 1 });
    expect({ ...c.unknown }).toEqual({ colour: 2, __proto__x: 1 });
  });

  it('keeps a field named __proto__ as a plain name', () => {
    const c = counts([JSON.parse('{"id":"1","__proto__":"x"}') as object]);
    expect(Object.keys(c.unknown)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(c)).unknown).toEqual(JSON.parse('{"__proto__":1}'));
  });

  it('names at most MAX_EXTRA_FIELDS unknown fields and says so', () => {
    const counter = new FieldCounter();
    for (let i = 0; i < MAX_EXTRA_FIELDS + 5; i++) counter.count({ [`f${i}`]: 1 });
    const c = counter.toJSON();
    expect(Object.keys(c.unknown)).toHaveLength(MAX_EXTRA_FIELDS);
    expect(c.unknown_truncated).toBe(true);
  });
});

describe('findDisappeared', () => {
  const before = baseline(times(100, () => full));

  it('never trips on a first run or an empty listing', () => {
    expect(findDisappeared(undefined, counts([{ id: '1', wpi: 'W' }]))).toEqual([]);
    expect(findDisappeared(before, counts([]))).toEqual([]);
  });

  it('names a field that is gone from every record, with the new field of a similar count', () => {
    const now = counts(
      times(90, () => ({ ...full, inventory_sales: undefined, inventorySales: '3', note: 'x' })).map(
        ({ inventory_sales: _, ...r }) => r,
      ),
    );
    const found = findDisappeared(before, now);
    expect(found).toEqual([
      {
        field: 'inventory_sales',
        kind: 'missing',
        before: 1,
        presentNow: 0,
        renames: [
          { name: 'inventorySales', count: 90 },
          { name: 'note', count: 90 },
        ],
      },
    ]);
    expect(describeDisappeared(found, '41', 90)).toBe(
      "inventory_sales is missing from all 90 records (present in 100% of run 41's); new fields inventorySales (90), note (90) appeared with a similar count — the upstream may have renamed it",
    );
  });

  it('a new field with a very different count is not offered as a rename', () => {
    const now = counts([...times(99, () => ({ id: '1', wpi: 'W', first_sale: null })), { id: '1', wpi: 'W', rare: 1 }]);
    const found = findDisappeared(before, now).find((d) => d.field === 'inventory_sales');
    expect(found?.renames).toEqual([]);
    expect(describeDisappeared([found!], '41', 100)).toBe(
      "inventory_sales is missing from all 100 records (present in 100% of run 41's)",
    );
  });

  it('trips when values fall from at least half to none, not when only some become null', () => {
    const emptied = counts(times(10, () => ({ ...full, vintage_make: null })));
    expect(findDisappeared(before, emptied).map((d) => [d.field, d.kind])).toEqual([['vintage_make', 'empty']]);
    const someNull = counts(times(10, (i) => ({ ...full, vintage_make: i < 3 ? null : '5' })));
    expect(findDisappeared(before, someNull)).toEqual([]);
  });

  it('ignores fields the last run mostly lacked, and the required fields (rejects cover those)', () => {
    const sparse = baseline([...times(51, () => ({ id: '1', wpi: 'W' })), ...times(49, () => full)]);
    expect(findDisappeared(sparse, counts([{ id: '1', wpi: 'W' }]))).toEqual([]);
    expect(findDisappeared(before, counts([{ record_id: '1', wpi: 'W' }])).map((d) => d.field)).not.toContain('id');
  });

  it('does not compare with a run recorded before field counts existed', () => {
    expect(
      findDisappeared({ runId: '3', counts: null, unknownNames: new Set() }, counts([{ id: '1', wpi: 'W' }])),
    ).toEqual([]);
  });
});

describe('newFields and messages', () => {
  it('lists unknown fields the baseline did not see, most frequent first', () => {
    const before = baseline([{ ...full, old: 1 }]);
    expect(newFields(before, counts([{ ...full, old: 1, b: 1, a: 1 }, { a: 2 }]))).toEqual([
      { name: 'a', count: 2 },
      { name: 'b', count: 1 },
    ]);
    expect(newFields(undefined, counts([{ x: 1 }]))).toEqual([{ name: 'x', count: 1 }]);
  });

  it('explains rejects with their top reasons and the new fields', () => {
    expect(explainRejects([{ reason: 'id: required', count: 3016 }], [{ name: 'record_id', count: 3016 }])).toBe(
      'id: required (3016); new fields in this listing: record_id (3016)',
    );
  });

  it('formats shares without rounding up to 100%', () => {
    expect([share(1), share(0.5), share(0.995), share(0.9999), share(1 / 3)]).toEqual([
      '100%',
      '50%',
      '99.5%',
      '99.9%',
      '33.3%',
    ]);
  });
});
