/**
 * Every live row of a schema against the listing's own records, read by PostgreSQL's JSON parser
 * (exact numerics, dates by their first ten characters as the transform keeps them): a row
 * missing, extra or with any value different counts as wrong. Independent of the job's transform.
 */
import type pg from 'pg';

export interface ListingComparison {
  listed: number;
  live: number;
  wrong: number;
}

export async function compareWithListing(
  client: pg.Client,
  schema: string,
  listing: string,
): Promise<ListingComparison> {
  const table = `"${schema.replaceAll('"', '""')}".bulk_wine_reconciliation`;
  const { rows } = await client.query<ListingComparison>(
    `WITH listed AS (
       SELECT (r->>'id')::bigint AS id, btrim(r->>'wpi') AS wpi,
              nullif(r->>'inventory_bulk_wine', '')::numeric AS a,
                nullif(r->>'inventory_finished_goods', '')::numeric AS b,
              nullif(r->>'inventory_sales', '')::numeric AS c, nullif(r->>'vintage_forecast', '')::numeric AS d,
              nullif(r->>'vintage_make', '')::numeric AS e,
              CASE WHEN coalesce(r->>'first_sale', '') IN ('', '0000-00-00') THEN NULL
                   ELSE left(r->>'first_sale', 10)::date END AS f
       FROM jsonb_array_elements($1::jsonb -> 'bulk_wine_reconciliation') AS r),
     live AS (
       SELECT id, wpi, inventory_bulk_wine AS a, inventory_finished_goods AS b, inventory_sales AS c,
         vintage_forecast AS d, vintage_make AS e, first_sale AS f
       FROM ${table} WHERE deleted_at IS NULL)
     SELECT (SELECT count(*) FROM listed)::int AS listed, (SELECT count(*) FROM live)::int AS live,
            (SELECT count(*) FROM listed l FULL JOIN live t USING (id)
             WHERE l.id IS NULL OR t.id IS NULL OR (l.wpi, l.a, l.b, l.c, l.d, l.e, l.f) IS DISTINCT
             FROM (t.wpi, t.a, t.b, t.c, t.d, t.e, t.f))::int AS wrong`,
    [listing],
  );
  return rows[0]!;
}
