/**
 * New upstream fields are kept, through the CLI against the simulator and a real
 * PostgreSQL: exact in extra_fields, versioned and compared like the other values, recorded in
 * sync_fields, typed in the BI views, hostile names kept out of SQL, and SYNC_EXTRA_FIELDS=drop.
 */
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';
import { shownName } from '../../src/transform/field-name.js';

const N = 30;
const FRACTION_40 = '0.1234567890123456789012345678901234567890';

/** A valid record with the known fields, then `extra` members written as they are (JSON text). */
const rec = (id: number, extra: Record<string, string> = {}, wpi = `W${id}`) => {
  const members = Object.entries(extra)
    .map(([k, v]) => `,${JSON.stringify(k)}:${v}`)
    .join('');
  return (
    `{"id":${id},"wpi":${JSON.stringify(wpi)},"inventory_bulk_wine":"${id}.5","inventory_sales":2,` +
    `"first_sale":"2021-03-04"${members}}`
  );
};
const listing = (make: (id: number) => string, n = N) => Array.from({ length: n }, (_, i) => make(i + 1));

const fx = useSyncFixture('extra', { simulator: { records: 10 }, each: true });
const sync = async (env: Record<string, string> = {}, ...args: string[]) => {
  const r = await runCli(['run', ...args, '--json'], { ...fx.env, ...env });
  return { ...r, run: r.stdout ? JSON.parse(r.stdout) : undefined };
};
const bi = () => `"${fx.db.schema}_bi"`;
const extras = async () =>
  (
    await fx.db.rows<{ id: string; extra: string | null }>(
      'SELECT id::text, extra_fields::text AS extra FROM bulk_wine_reconciliation b ORDER BY b.id',
    )
  ).map((r) => [r.id, r.extra]);
const viewColumns = async (view: string) =>
  fx.db.rows<{ column_name: string; data_type: string; description: string }>(
    `SELECT column_name, data_type, description FROM ${bi()}.data_dictionary WHERE view_name = $1
    AND column_name IS NOT NULL ORDER BY position`,
    [view],
  );

describe('a new numeric and a new text field', () => {
  it('are kept to the last digit, typed in the BI views, versioned and compared like the known fields', async () => {
    // Fast path records (compact, ASCII) and zod path ones (a non-ASCII wpi) carry the same fields.
    const values = (id: number) => (id % 3 === 0 ? '1e-30' : id % 3 === 1 ? FRACTION_40 : `${id}.10`);
    const make = (id: number) =>
      id === N
        ? rec(id)
        : rec(
            id,
            { inventory_in_transit: values(id), ...(id % 2 ? { cellar_note: `"north ${id}"` } : {}) },
            id % 4 ? `W${id}` : `Wé${id}`,
          );
    fx.sim.setRecordsJson(listing(make));
    const first = await sync();
    expect(first.run).toMatchObject({ status: 'succeeded', inserted: N, rejected: 0 });
    expect(first.stderr).toContain(
      `new field inventory_in_transit in ${N - 1} records` +
        `: kept in extra_fields, shown as ${fx.db.schema}_bi.reconciliation.inventory_in_transit`,
    );

    const exact = await fx.db.rows<{ id: string; v: string | null; note: string | null; whole: string | null }>(
      `SELECT id::text, extra_fields->>'inventory_in_transit' AS v, extra_fields->>'cellar_note' AS note,
        extra_fields::text AS whole FROM bulk_wine_reconciliation ORDER BY id`,
    );
    for (const row of exact) {
      const id = Number(row.id);
      if (id === N) {
        expect(row.whole).toBeNull(); // no unknown member: NULL, not {}
        continue;
      }
      const expected = id % 3 === 0 ? '0.000000000000000000000000000001' : id % 3 === 1 ? FRACTION_40 : `${id}.10`;
      expect(row.v, `record ${id}`).toBe(expected);
      expect(row.note).toBe(id % 2 ? `north ${id}` : null);
    }

    // The BI columns: typed from the values seen, rounded like the other decimals, described.
    const columns = await viewColumns('reconciliation');
    const transit = columns.find((c) => c.column_name === 'inventory_in_transit')!;
    expect(transit.data_type).toBe('numeric(28,10)');
    expect(transit.description).toContain('"inventory_in_transit"');
    expect(transit.description).toContain(`first seen by run ${first.run.id}`);
    expect(columns.find((c) => c.column_name === 'cellar_note')!.data_type).toBe('text');
    expect((await viewColumns('reconciliation_history')).map((c) => c.column_name)).toContain('inventory_in_transit');
    const shown = await fx.db.rows<{ id: string; t: string | null; n: string | null }>(
      `SELECT id::text, inventory_in_transit::text AS t, cellar_note AS n FROM ${bi()}.reconciliation
      WHERE id IN (1, 2, 3) ORDER BY id`,
    );
    expect(shown).toEqual([
      { id: '1', t: '0.1234567890', n: 'north 1' },
      { id: '2', t: '2.1000000000', n: null },
      { id: '3', t: '0.0000000000', n: 'north 3' },
    ]);
    expect(
      await fx.db.rows(
        'SELECT name, column_name, bi_kind, kinds, first_run_id::int AS first, records::int AS records FROM sync_fields ORDER BY name',
      ),
    ).toEqual([
      {
        name: 'cellar_note',
        column_name: 'cellar_note',
        bi_kind: 'text',
        kinds: ['string'],
        first: Number(first.run.id),
        records: N / 2,
      },
      {
        name: 'inventory_in_transit',
        column_name: 'inventory_in_transit',
        bi_kind: 'number',
        kinds: ['number'],
        first: Number(first.run.id),
        records: N - 1,
      },
    ]);

    // The same listing again: nothing changed.
    expect((await sync()).run).toMatchObject({ status: 'succeeded', updated: 0, unchanged: N });

    // 2.10 -> 2.100 is equal as a number but not as sent: a change, with a history version. A
    // record that gains a field changes too; a new record comes through the staging path.
    fx.sim.setRecordsJson(
      listing(
        (id) =>
          id === 2
            ? rec(2, { inventory_in_transit: '2.100' })
            : id === N
              ? rec(N, { cellar_note: '"late"' })
              : make(id),
        N + 1,
      ).map((r, i) => (i === N ? rec(N + 1, { inventory_in_transit: '7' }) : r)),
    );
    const changed = await sync();
    expect(changed.run).toMatchObject({ status: 'succeeded', updated: 2, inserted: 1, unchanged: N - 2 });
    expect(
      await fx.db.rows(
        `SELECT extra_fields::text AS e FROM bulk_wine_reconciliation_history WHERE id = 2 ORDER BY valid_from`,
      ),
    ).toEqual([{ e: '{"inventory_in_transit": 2.10}' }, { e: '{"inventory_in_transit": 2.100}' }]);
    expect(await fx.db.rows(`SELECT count(*)::int AS n FROM ${bi()}.reconciliation_history WHERE id = 2`)).toEqual([
      { n: 2 },
    ]);
    expect((await extras()).slice(-2)).toEqual([
      [String(N), '{"cellar_note": "late"}'],
      [String(N + 1), '{"inventory_in_transit": 7}'],
    ]);
    expect((await sync()).run).toMatchObject({ updated: 0, inserted: 0, unchanged: N + 1 });
  });
});

describe('the BI views with a new column', () => {
  it('are re-created after the run, grants kept; when that waits too long the run still succeeds, and the next run does it', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    expect((await sync()).run).toMatchObject({ status: 'succeeded' });
    const role = `${fx.db.schema}_reader`;
    await fx.db.rows(`CREATE ROLE "${role}" NOLOGIN`);
    try {
      await fx.db.rows(
        `GRANT USAGE ON SCHEMA ${bi()} TO "${role}"; GRANT SELECT ON ${bi()}.reconciliation TO "${role}"`,
      );
      // A dashboard's long query holds the view: re-creating it must wait, up to SYNC_LOCK_TIMEOUT_MS.
      const reader = await fx.db.pool.connect();
      await reader.query(`BEGIN; LOCK TABLE ${bi()}.reconciliation IN ACCESS SHARE MODE`);
      fx.sim.setRecordsJson(listing((id) => rec(id, { colour: '"red"' })));
      const blocked = await sync({ SYNC_LOCK_TIMEOUT_MS: '300' });
      await reader.query('ROLLBACK');
      reader.release();
      expect(blocked.run).toMatchObject({ status: 'succeeded', updated: N });
      expect(blocked.stderr).toContain(
        'the BI views were not rendered again with the new fields (the next start or run will)',
      );
      expect((await viewColumns('reconciliation')).map((c) => c.column_name)).not.toContain('colour');

      expect((await sync()).run).toMatchObject({ status: 'succeeded', unchanged: N });
      expect((await viewColumns('reconciliation')).map((c) => c.column_name)).toContain('colour');
      expect(
        await fx.db.rows(`SELECT has_table_privilege($1, '${bi()}.reconciliation', 'SELECT') AS granted`, [role]),
      ).toEqual([{ granted: true }]);
    } finally {
      await fx.db.rows(`DROP OWNED BY "${role}"; DROP ROLE "${role}"`);
    }
  });
});

describe('a field that comes and goes', () => {
  it('does not trip the guard when the last run saw it in under half its records; one seen in all of them does', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id, id <= 10 ? { promo: '"spring"' } : {})));
    expect((await sync()).run).toMatchObject({ status: 'succeeded' });
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    const gone = await sync();
    expect(gone.run).toMatchObject({ status: 'succeeded', updated: 10 });
    expect((await extras()).filter(([, e]) => e !== null)).toEqual([]);
    expect(
      (
        await fx.db.rows(
          `SELECT count(*)::int AS n FROM bulk_wine_reconciliation_closed_versions WHERE extra_fields ? 'promo'`,
        )
      )[0],
    ).toEqual({ n: 10 });

    fx.sim.setRecordsJson(listing((id) => rec(id, { promo: '"summer"' })));
    expect((await sync()).run).toMatchObject({ status: 'succeeded', updated: N });
    fx.sim.setRecordsJson(listing((id) => rec(id)));
    const refused = await sync();
    expect(refused.code).toBe(1);
    expect(refused.run.error).toContain(`promo is missing from all ${N} records (present in 100% of run 3's)`);
    expect(
      (await fx.db.rows(`SELECT count(*)::int AS n FROM bulk_wine_reconciliation WHERE extra_fields ? 'promo'`))[0],
    ).toEqual({ n: N });
    expect((await sync({}, '--accept-schema-change')).run).toMatchObject({ status: 'succeeded', updated: N });
    expect(
      (await fx.db.rows(`SELECT count(*)::int AS n FROM bulk_wine_reconciliation WHERE extra_fields IS NOT NULL`))[0],
    ).toEqual({ n: 0 });
  });
});

describe('values of every kind', () => {
  it('keeps mixed kinds, over-range numbers and nested objects exactly; the BI views show what fits and name the rest', async () => {
    const mixed = ['1', '"a"', 'true', '2.50', 'null'];
    fx.sim.setRecordsJson(
      listing((id) =>
        rec(id, {
          mixed: mixed[id % mixed.length]!,
          big: id === 1 ? '12345678901234567890123456789.5' : `${id}.25`,
          nested: '{"a": {"b": [1, 2.50, "x"]}, "c": null}',
          bottled: id === 2 ? '"2023-02-30"' : '"2024-02-29"',
          opened: '"2024-02-29"',
          sealed: id % 2 ? 'true' : 'false',
        }),
      ),
    );
    expect((await sync()).run).toMatchObject({ status: 'succeeded', inserted: N, rejected: 0 });
    const row1 = (
      await fx.db.rows<{ e: Record<string, unknown>; big: string; nested: string }>(
        `SELECT extra_fields AS e, extra_fields->>'big' AS big, (extra_fields->'nested')::text AS nested
        FROM bulk_wine_reconciliation WHERE id = 1`,
      )
    )[0]!;
    expect(row1.big).toBe('12345678901234567890123456789.5');
    expect(row1.nested).toBe('{"a": {"b": [1, 2.50, "x"]}, "c": null}');
    const types = Object.fromEntries((await viewColumns('reconciliation')).map((c) => [c.column_name, c.data_type]));
    expect(types).toMatchObject({
      mixed: 'text',
      big: 'numeric(28,10)',
      nested: 'text',
      bottled: 'text',
      opened: 'date',
      sealed: 'boolean',
      extra_fields: 'text',
    });
    const shown = await fx.db.rows(
      `SELECT id::int, mixed, big::text, nested, bottled, opened::text, sealed, overflow_columns
      FROM ${bi()}.reconciliation WHERE id <= 3 ORDER BY id`,
    );
    expect(shown).toEqual([
      {
        id: 1,
        mixed: '"a"',
        big: null,
        nested: '{"a": {"b": [1, 2.50, "x"]}, "c": null}',
        bottled: '2024-02-29',
        opened: '2024-02-29',
        sealed: true,
        overflow_columns: 'big',
      },
      {
        id: 2,
        mixed: 'true',
        big: '2.2500000000',
        nested: '{"a": {"b": [1, 2.50, "x"]}, "c": null}',
        bottled: '2023-02-30',
        opened: '2024-02-29',
        sealed: false,
        overflow_columns: null,
      },
      {
        id: 3,
        mixed: '2.50',
        big: '3.2500000000',
        nested: '{"a": {"b": [1, 2.50, "x"]}, "c": null}',
        bottled: '2024-02-29',
        opened: '2024-02-29',
        sealed: true,
        overflow_columns: null,
      },
    ]);
  });

  it('rejects, with the field and the reason, a value jsonb cannot hold: the others load', async () => {
    const huge = JSON.stringify('é'.repeat(70_000)); // over the 65536 characters a record's raw text keeps
    fx.sim.setRecordsJson(
      listing((id) =>
        rec(
          id,
          id === 1
            ? { note: '"a\\u0000b"' }
            : id === 2
              ? { far: '1e200000' }
              : id === 3
                ? { half: '"\\ud800"' }
                : id === 4
                  ? { essay: huge }
                  : { ok: '1' },
        ),
      ),
    );
    const run = await sync({ SYNC_MAX_REJECT_RATIO: '0.5' });
    expect(run.run).toMatchObject({ status: 'succeeded', inserted: N - 4, rejected: 4 });
    const rejects = await fx.db.rows<{ position: string; errors: unknown }>(
      'SELECT position::text, errors FROM sync_rejects ORDER BY position',
    );
    expect(rejects).toEqual([
      {
        position: '0',
        errors: [{ path: 'note', message: 'cannot be kept in extra_fields: the NUL character (\\u0000)' }],
      },
      {
        position: '1',
        errors: [
          { path: 'far', message: 'cannot be kept in extra_fields: a number that prints as more than 1000 digits' },
        ],
      },
      {
        position: '2',
        errors: [
          { path: 'half', message: 'cannot be kept in extra_fields: an unpaired UTF-16 surrogate (not valid Unicode)' },
        ],
      },
      {
        position: '3',
        errors: [
          {
            path: '',
            message:
              'record too large (over 65536 characters) to keep its fields that are not in the catalogue exactly',
          },
        ],
      },
    ]);
  });
});

describe('hostile field names', () => {
  it('never reach SQL as text: every run succeeds, nothing outside the schemas changes, every value is kept', async () => {
    const hostile = [
      `a"b`,
      `x'); DROP TABLE bulk_wine_reconciliation; --`,
      `{{bi}}.reconciliation; --`,
      'back\\slash',
      'x'.repeat(10_000),
      'Süßwein Qualität',
      '葡萄酒',
      'ID',
      'deleted_at',
      'select',
      '2020 harvest',
      '!!!',
      '',
    ];
    const outside = () =>
      fx.db.rows<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ($1, $2) AND n.nspname NOT LIKE 'pg_%' AND n.nspname <> 'information_schema'`,
        [fx.db.schema, `${fx.db.schema}_bi`],
      );
    const before = await outside();
    fx.sim.setRecordsJson(
      listing((id) => rec(id, Object.fromEntries(hostile.map((name, k) => [name, String(id * 100 + k)])))),
    );
    const first = await sync();
    expect(first.run).toMatchObject({ status: 'succeeded', inserted: N, rejected: 0 });
    // 500 more distinct names, a few per record: the cap keeps the views from growing without bound.
    fx.sim.setRecordsJson(
      listing((id) =>
        rec(
          id,
          Object.fromEntries(
            hostile
              .map((name, k) => [name, String(id * 100 + k)])
              .concat(Array.from({ length: 17 }, (_, k) => [`extra${id * 17 + k}`, '"v"'])),
          ),
        ),
      ),
    );
    const second = await sync();
    expect(second.run).toMatchObject({ status: 'succeeded', updated: N, rejected: 0 });
    expect(await outside()).toEqual(before);

    const [row] = await fx.db.rows<{ e: Record<string, string> }>(
      `SELECT extra_fields AS e FROM bulk_wine_reconciliation WHERE id = 1`,
    );
    hostile.forEach((name, k) => expect(row!.e[name], name.slice(0, 40)).toBe(100 + k));
    const fields = await fx.db.rows<{ name: string; column_name: string | null; note: string | null }>(
      'SELECT name, column_name, note FROM sync_fields',
    );
    const byName = new Map(fields.map((f) => [f.name, f]));
    expect(fields.length).toBe(hostile.length + 17 * N);
    expect(byName.get('ID')!.column_name).toBe('id_field');
    expect(byName.get('deleted_at')!.column_name).toBe('deleted_at_field');
    expect(byName.get('select')!.column_name).toBe('select_field');
    expect(byName.get('2020 harvest')!.column_name).toBe('field_2020_harvest');
    expect(byName.get('Süßwein Qualität')!.column_name).toBe('su_wein_qualitat');
    expect(byName.get(`a"b`)!.column_name).toBe('a_b');
    expect(byName.get(`x'); DROP TABLE bulk_wine_reconciliation; --`)!.column_name).toBe(
      'x_drop_table_bulk_wine_reconciliation',
    );
    // Stored shortened (at most 128 bytes), its value kept under the exact name above.
    expect(byName.get(shownName('x'.repeat(10_000)))).toMatchObject({
      column_name: null,
      note: 'name longer than 63 bytes',
    });
    expect(byName.get('!!!')).toMatchObject({ column_name: null, note: 'name has no letter or digit' });
    expect(byName.get('葡萄酒')).toMatchObject({ column_name: null });
    expect(fields.filter((f) => f.column_name !== null)).toHaveLength(100);
    expect(fields.filter((f) => f.note === 'more than 100 new fields have columns').length).toBeGreaterThan(400);
    expect(second.stderr).toContain('kept in extra_fields only (more than 100 new fields have columns)');

    // The views hold exactly the columns given, with the values.
    const columns = (await viewColumns('reconciliation')).map((c) => c.column_name);
    expect(columns.filter((c) => fields.some((f) => f.column_name === c))).toHaveLength(100);
    const shown = await fx.db.rows(
      `SELECT "x_drop_table_bulk_wine_reconciliation"::text AS v, a_b::text AS q FROM ${bi()}.reconciliation
      WHERE id = 1`,
    );
    expect(shown).toEqual([{ v: '101.0000000000', q: '100.0000000000' }]);
    expect((await sync()).run).toMatchObject({ status: 'succeeded', unchanged: N });
  }, 60_000);
});

describe('SYNC_EXTRA_FIELDS=drop', () => {
  it('loads what it loaded before the feature: no extra_fields, no sync_fields, no new BI column, "not loaded"', async () => {
    fx.sim.setRecordsJson(listing((id) => rec(id, { inventory_in_transit: FRACTION_40 })));
    const run = await sync({ SYNC_EXTRA_FIELDS: 'drop' });
    expect(run.run).toMatchObject({ status: 'succeeded', inserted: N });
    expect(run.stderr).toContain(`new field inventory_in_transit in ${N} records: not loaded`);
    expect((await extras()).filter(([, e]) => e !== null)).toEqual([]);
    expect(await fx.db.rows('SELECT name FROM sync_fields')).toEqual([]);
    expect((await viewColumns('reconciliation')).map((c) => c.column_name)).not.toContain('inventory_in_transit');

    // Switching to keep re-reads every record (the trust key knows the setting): the values arrive.
    const kept = await sync();
    expect(kept.run).toMatchObject({ status: 'succeeded', updated: N, skipped_unchanged: 0 });
    expect(
      (
        await fx.db.rows(
          `SELECT count(*)::int AS n FROM bulk_wine_reconciliation
          WHERE extra_fields->>'inventory_in_transit' = '${FRACTION_40}'`,
        )
      )[0],
    ).toEqual({ n: N });

    const bad = await runCli(['run'], { ...fx.env, SYNC_EXTRA_FIELDS: 'sometimes' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('SYNC_EXTRA_FIELDS: must be keep or drop (got "sometimes")');
  });
});
