/**
 * A first load counts what the BI views do to its decimals in Node, from their digits as written
 * (transform/bi-effect.ts), instead of PostgreSQL scanning the table. That count must be
 * PostgreSQL's own: every awkward value below is put into bulk_wine_reconciliation, and PostgreSQL
 * evaluates sql/load/bi.sql's expressions ({{decimals_rounded_count}}, {{decimals_overflow_count}}
 * as the catalogue renders them) row by row, at every BI scale, for
 *   - the predicate on decimal text as PostgreSQL reads it, canonical or not (trailing and leading
 *     zeros, negative zero), and
 *   - the byte-level writer of a first load (CopyWriter) and the zod path's rows: records carrying
 *     the values as JSON numbers, numeric strings and exponents, COPYed into the table as written.
 */
import { describe, expect, it } from 'vitest';
import { renderFieldLists } from '../../src/db/field-sql.js';
import { loadStatements } from '../../src/db/statements.js';
import { ListingParser } from '../../src/extract/json/listing-parser.js';
import { MemberReader } from '../../src/extract/json/record-members.js';
import { BI_PRECISION, DECIMAL_FIELDS, KNOWN_FIELDS, MAX_BI_SCALE } from '../../src/fields.js';
import { overflowThreshold } from '../../src/load/bi-rounding.js';
import { copyRows } from '../../src/load/first-load.js';
import { BiTally, OVERFLOW, ROUNDED } from '../../src/transform/bi-effect.js';
import { MAX_DIGITS } from '../../src/transform/decimal.js';
import { transformRecord } from '../../src/transform/record.js';
import { CopyWriter } from '../../src/transform/record-copy.js';
import { useSyncFixture } from '../support/fixture.js';

const FULL = loadStatements('load/bi.sql', ['count_bi_rounding']).count_bi_rounding;
/** The same expressions as count_bi_rounding, per row: 0, 1 or 2 (ROUNDED, OVERFLOW), as the Node predicate answers. */
const PER_ROW = renderFieldLists(
  `SELECT id::int AS id,
    (({{decimals_rounded_count}}) * ${ROUNDED} + ({{decimals_overflow_count}}) * ${OVERFLOW})::int AS effect
   FROM bulk_wine_reconciliation WHERE deleted_at IS NULL GROUP BY id ORDER BY id`,
);
const SCALES = Array.from({ length: MAX_BI_SCALE + 1 }, (_, s) => s);
const NOW = '2026-01-02T03:04:05.123456Z';
const SUFFIX = `\t${NOW}\t${NOW}\t1\n`;

let seed = 0x5eed;
function rand(n: number): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) % n;
}
/** Random digits, nines more often than not: the threshold is made of them. */
function digits(n: number): string {
  let s = '';
  for (let k = 0; k < n; k++) s += rand(3) === 0 ? String(rand(10)) : '9';
  return s;
}

/** Plain decimal texts (as PostgreSQL reads them) around every scale's rounding and overflow edges, and beyond. */
function awkwardTexts(): string[] {
  const found = new Set<string>();
  const add = (v: string) => {
    found.add(v);
    found.add(`-${v}`);
  };
  for (const zero of ['0', '00', '0.0', '000.000', `0.${'0'.repeat(40)}`]) add(zero);
  for (const s of SCALES) {
    const room = BI_PRECISION - s;
    const nines = '9'.repeat(room);
    const fraction = '9'.repeat(s);
    const point = s > 0 ? '.' : '';
    // The threshold T itself, written in several ways, and its neighbours on both sides.
    add(`${nines}.${fraction}5`);
    add(`${nines}.${fraction}50000`);
    add(`000${nines}.${fraction}5`);
    add(`${nines}.${fraction}51`);
    add(`${nines}.${fraction}6`);
    add(`${nines}.${fraction}9`);
    add(`${nines}.${fraction}4`);
    add(`${nines}.${fraction}49999999999999999999`);
    add(`${nines}${point}${fraction}`);
    add(`${nines}${point}${fraction}0`);
    add(nines);
    add(`${nines}.${'9'.repeat(Math.max(0, s - 1))}8${'9'.repeat(8)}`);
    add(`${'9'.repeat(room - 1)}8.${fraction}5`);
    add(`8${'9'.repeat(room - 1)}.${fraction}9`);
    add(`1${'0'.repeat(room)}`);
    add(`1${'0'.repeat(room)}.${'0'.repeat(s + 2)}`);
    add(`1${'0'.repeat(room - 1)}.${fraction}9`);
    add(`0${'9'.repeat(room - 1)}.${fraction}5`);
    add(`${'9'.repeat(room - 1)}.${fraction}5`);
    // Exactly S fraction digits (shown as they are) or one more (rounded), zeros included.
    add(`1.${'0'.repeat(s)}`);
    add(`1.${'0'.repeat(s + 1)}`);
    add(`1.${'0'.repeat(s)}1`);
    add(`1.${'1'.repeat(s)}`);
    add(`0.${'0'.repeat(Math.max(0, s - 1))}1`);
    add(`0.${'0'.repeat(s)}5`);
    add(`0.${'0'.repeat(s)}4`);
    add(`0.${'0'.repeat(s + 1)}`);
    add(`${nines.slice(1)}.${'1'.repeat(s + 1)}`);
  }
  // Exponents as normalization expands them (1e-30, 1e-999), long integers, the 1000-digit cap.
  for (const n of [29, 30, 31, 45, 100, 999]) {
    add(`0.${'0'.repeat(n)}1`);
    add(`1${'0'.repeat(n)}`);
    add(`${'9'.repeat(n)}`);
  }
  add('1'.repeat(MAX_DIGITS));
  add(`0.${'0'.repeat(MAX_DIGITS - 2)}1`);
  add(`${'9'.repeat(500)}.${'9'.repeat(500)}`);
  // Random values of every length around the edges, most of their digits nines.
  while (found.size < 8000) {
    const intLen = rand(34);
    const fracLen = rand(26);
    const int = intLen === 0 ? '0' : `${1 + rand(9)}${digits(intLen - 1)}`;
    add(fracLen === 0 ? int : `${int}.${digits(fracLen)}`);
  }
  return [...found];
}

describe('what the BI views do to a value, counted in Node', () => {
  const fx = useSyncFixture('bi_effect');
  const texts = awkwardTexts();

  /** PostgreSQL's effect on each row (by id), at scale `s`, and its full count (count_bi_rounding). */
  async function postgres(s: number) {
    const params = [s, overflowThreshold(s)];
    const perRow = await fx.db.rows<{ id: number; effect: number }>(PER_ROW, params);
    const [full] = await fx.db.rows<{ rounded: number; overflow: number }>(
      `SELECT rounded::int, overflow::int FROM (${FULL}) c`,
      params,
    );
    return { effects: new Map(perRow.map((r) => [r.id, r.effect])), full: full! };
  }

  it('agrees with PostgreSQL on decimal text, canonical or not, at every scale', async () => {
    await fx.db.rows('TRUNCATE bulk_wine_reconciliation');
    // Each value in a row of its own, the decimal columns taken in turn; text to numeric as COPY reads it.
    for (const [k, field] of DECIMAL_FIELDS.entries()) {
      const ids = texts.flatMap((_, i) => (i % DECIMAL_FIELDS.length === k ? [i + 1] : []));
      await fx.db.rows(
        `INSERT INTO bulk_wine_reconciliation (id, wpi, ${field.name}, first_seen_at, changed_at, run_id)
         SELECT v.id, 'w', v.value::numeric, now(), now(), 1 FROM unnest($1::bigint[], $2::text[]) AS v(id, value)`,
        [ids, ids.map((id) => texts[id - 1])],
      );
    }
    for (const s of SCALES) {
      const tally = new BiTally(s);
      const pg = await postgres(s);
      const disagree = texts.flatMap((text, i) => {
        const asBytes = tally.effect(Buffer.from(text, 'latin1'), 0, text.length);
        const asText = tally.effectOfText(text);
        const postgresSays = pg.effects.get(i + 1);
        return asBytes === postgresSays && asText === postgresSays
          ? []
          : [{ text, scale: s, asBytes, asText, postgres: postgresSays }];
      });
      expect(disagree).toEqual([]);
      const effects = [...pg.effects.values()];
      // Every scale meets both kinds, and each total is PostgreSQL's own count.
      expect(pg.full).toEqual({
        rounded: effects.filter((e) => e === ROUNDED).length,
        overflow: effects.filter((e) => e === OVERFLOW).length,
      });
      expect(pg.full.rounded).toBeGreaterThan(100);
      expect(pg.full.overflow).toBeGreaterThan(100);
    }
  });

  it('agrees with PostgreSQL on the rows a first load writes, by the byte-level path and by the zod path', async () => {
    await fx.db.rows('TRUNCATE bulk_wine_reconciliation');
    // JSON numbers (when JSON allows the text), numeric strings (with spaces, '+'), exponents.
    const forms = (text: string, i: number): string => {
      const plain = /^-?(0|[1-9]\d*)(\.\d+)?$/.test(text);
      const negative = text.startsWith('-');
      const unsigned = negative ? text.slice(1) : text;
      const [int = '', fraction = ''] = unsigned.split('.');
      const exponent = `${negative ? '-' : ''}0.${int}${fraction}e${int.length}`;
      const form = i % 4;
      if (form === 0 && plain) return text;
      if (form === 1) return `" ${negative ? text : `+${text}`} "`;
      if (form === 2 && int.length + fraction.length + 2 <= MAX_DIGITS) return exponent;
      return `"${text}"`;
    };
    const values = [
      ...texts.map(forms),
      '1e-30',
      '-1E-30',
      '1.5e-7',
      '9.99999999999999999999999999995e27',
      '-0e5',
      '"-0.0e-3"',
      '1e28',
      '99999999999999999999999999995e-1',
    ];
    const records = values.map((value, i) => {
      const field = DECIMAL_FIELDS[i % DECIMAL_FIELDS.length]!.name;
      return `{"id":${i + 1},"wpi":"w${i + 1}","${field}":${value},"first_sale":"2021-03-04"}`;
    });

    // The first load's writer, as first-load.ts makes it, per scale: each record's effects as its count grew.
    const written = (s: number) => {
      const tally = new BiTally(s);
      const writer = new CopyWriter(true, Buffer.from(SUFFIX), tally);
      const members = new MemberReader(KNOWN_FIELDS);
      const effects = new Map<number, number>();
      const declined: number[] = [];
      const hash = new Int32Array(3);
      const parser = new ListingParser({
        recordHook: {
          record(bytes, start, end, ends, count, position, byteOffset) {
            if (!members.read(bytes!, start, end, ends, count))
              throw new Error(`record ${position} is not a compact one`);
            const [rounded, overflow] = [tally.rounded, tally.overflow];
            if (writer.write(bytes!, start, end, members, position, byteOffset, hash)) {
              effects.set(position + 1, (tally.rounded - rounded) * ROUNDED + (tally.overflow - overflow) * OVERFLOW);
            } else declined.push(position);
            return true;
          },
        },
      });
      parser.push(Buffer.from(`{"bulk_wine_reconciliation":[${records.join(',')}]}`));
      return { effects, declined, tally, lines: writer.take() };
    };

    const first = written(0);
    expect(first.declined).toEqual([]);
    await fx.db.pool.transaction((client) =>
      copyRows(
        client,
        (async function* () {
          yield first.lines;
        })(),
      ),
    );
    const rows = new ListingParser()
      .push(Buffer.from(`{"bulk_wine_reconciliation":[${records.join(',')}]}`))
      .map((record) => {
        const result = transformRecord(record.value);
        if (!result.ok) throw new Error(`record ${record.position} rejected: ${JSON.stringify(result.errors)}`);
        return result.row;
      });
    for (const s of SCALES) {
      const pg = await postgres(s);
      const byWriter = written(s);
      const disagree = values.flatMap((value, i) =>
        byWriter.effects.get(i + 1) === pg.effects.get(i + 1)
          ? []
          : [{ value, scale: s, node: byWriter.effects.get(i + 1), postgres: pg.effects.get(i + 1) }],
      );
      expect(disagree).toEqual([]);
      expect({ rounded: byWriter.tally.rounded, overflow: byWriter.tally.overflow }).toEqual(pg.full);

      // The zod path's rows of the same records, row by row.
      const zod = new BiTally(s);
      const zodDisagrees = rows.flatMap((row, i) => {
        const [rounded, overflow] = [zod.rounded, zod.overflow];
        zod.addRow(row);
        const effect = (zod.rounded - rounded) * ROUNDED + (zod.overflow - overflow) * OVERFLOW;
        return effect === pg.effects.get(i + 1)
          ? []
          : [{ value: values[i], scale: s, zod: effect, postgres: pg.effects.get(i + 1) }];
      });
      expect(zodDisagrees).toEqual([]);
      expect({ rounded: zod.rounded, overflow: zod.overflow }).toEqual(pg.full);
    }
  });

  it('counts nothing for a record the writer declines after some of its decimals', () => {
    const tally = new BiTally(0);
    const writer = new CopyWriter(true, Buffer.from(SUFFIX), tally);
    const members = new MemberReader(KNOWN_FIELDS);
    const [a, b] = DECIMAL_FIELDS;
    // At scale 0 one decimal is rounded and the other too large; the date after them is not one the writer takes.
    const record = `{"id":1,"wpi":"w","${a!.name}":1.5,"${b!.name}":${'9'.repeat(40)},"first_sale":"2021-02-30"}`;
    const parser = new ListingParser({
      recordHook: {
        record(bytes, start, end, ends, count, position, byteOffset) {
          expect(members.read(bytes!, start, end, ends, count)).toBe(true);
          expect(writer.write(bytes!, start, end, members, position, byteOffset, new Int32Array(3))).toBe(false);
          return true;
        },
      },
    });
    parser.push(Buffer.from(`{"bulk_wine_reconciliation":[${record}]}`));
    expect({ rounded: tally.rounded, overflow: tally.overflow }).toEqual({ rounded: 0, overflow: 0 });
  });
});
