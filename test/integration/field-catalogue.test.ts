/**
 * The field catalogue (src/fields.ts) against the migrated tables: start-up fails fast, naming the
 * field, when a migration and the catalogue disagree; and each field's meaning is its column's COMMENT.
 */
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { CatalogueMismatchError } from '../../src/errors.js';
import { FIELDS } from '../../src/fields.js';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';

describe('the field catalogue and the migrated tables', () => {
  // Each test alters its schema: a fresh one each.
  const fx = useSyncFixture('catalogue', { each: true });

  const migrateError = async () => {
    try {
      await migrate(fx.db.pool, fx.db.schema);
    } catch (error) {
      return error as Error;
    }
    throw new Error('migrate succeeded');
  };

  it('agree after the migrations: start-up goes on', async () => {
    expect(await migrate(fx.db.pool, fx.db.schema)).toEqual([]);
  });

  it('every field has a column whose COMMENT is its meaning', async () => {
    const comments = await fx.db.rows<{ column_name: string; comment: string }>(
      `SELECT a.attname AS column_name, col_description(a.attrelid, a.attnum) AS comment
       FROM pg_attribute a WHERE a.attrelid = 'bulk_wine_reconciliation'::regclass AND a.attnum > 0
       AND NOT a.attisdropped`,
    );
    const byName = new Map(comments.map((c) => [c.column_name, c.comment]));
    expect(FIELDS.map((f) => [f.name, byName.get(f.name)])).toEqual(FIELDS.map((f) => [f.name, f.meaning]));
  });

  it('a field without its column fails start-up naming the field and the table', async () => {
    await fx.db.rows('ALTER TABLE bulk_wine_reconciliation RENAME COLUMN vintage_make TO vintage_made');
    const error = await migrateError();
    expect(error).toBeInstanceOf(CatalogueMismatchError);
    expect(error.message).toBe(
      'field catalogue and database disagree: vintage_make has no column in bulk_wine_reconciliation (add a migration)',
    );
    // The CLI's start-up says the same and exits 1.
    const cli = await runCli(['status'], fx.env);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('vintage_make has no column in bulk_wine_reconciliation (add a migration)');
  });

  it('a column of another type, or that rounds decimals, is named with what the catalogue needs', async () => {
    // The views over the tables would block the type changes: this schema is the test's own.
    await fx.db.rows('DROP VIEW bulk_wine_reconciliation_history, bulk_wine_reconciliation_current');
    await fx.db.rows(
      'ALTER TABLE bulk_wine_reconciliation_closed_versions ALTER COLUMN inventory_sales TYPE numeric(20, 2)',
    );
    await fx.db.rows('ALTER TABLE bulk_wine_reconciliation ALTER COLUMN first_sale TYPE text');
    expect((await migrateError()).message).toBe(
      "field catalogue and database disagree: first_sale is text in bulk_wine_reconciliation, but the catalogue's kind date needs date (fix it with a migration); " +
        "inventory_sales is numeric(20,2) in bulk_wine_reconciliation_closed_versions, but the catalogue's kind decimal needs numeric (fix it with a migration)",
    );
  });

  it('extra_fields (beside the catalogue) missing or of another type is named too', async () => {
    await fx.db.rows('DROP VIEW bulk_wine_reconciliation_history, bulk_wine_reconciliation_current');
    await fx.db.rows('ALTER TABLE bulk_wine_reconciliation ALTER COLUMN extra_fields TYPE text');
    await fx.db.rows('ALTER TABLE bulk_wine_reconciliation_closed_versions DROP COLUMN extra_fields');
    expect((await migrateError()).message).toBe(
      'field catalogue and database disagree: extra_fields is text in bulk_wine_reconciliation, but must be jsonb (add a migration); ' +
        'extra_fields is missing in bulk_wine_reconciliation_closed_versions, but must be jsonb (add a migration)',
    );
  });

  it('a required field whose column allows NULL, and an optional one whose column does not, are named', async () => {
    await fx.db.rows('ALTER TABLE bulk_wine_reconciliation ALTER COLUMN wpi DROP NOT NULL');
    await fx.db.rows(
      'ALTER TABLE bulk_wine_reconciliation_closed_versions ALTER COLUMN inventory_bulk_wine SET NOT NULL',
    );
    expect((await migrateError()).message).toBe(
      'field catalogue and database disagree: wpi may be NULL in bulk_wine_reconciliation, but the catalogue says it is required (add NOT NULL in a migration); ' +
        'inventory_bulk_wine is NOT NULL in bulk_wine_reconciliation_closed_versions, but the catalogue says it is optional (drop NOT NULL in a migration)',
    );
  });
});
