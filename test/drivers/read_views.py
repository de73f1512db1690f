"""Reads the BI views (and, with psycopg2, the exact table) through a real Python driver and prints
what the driver reports as JSON, for test/integration/bi-driver-{odbc,psycopg}.test.ts.

  python3 read_views.py odbc|psycopg2 BI_SCHEMA DATA_SCHEMA   (connection from PG* environment variables)

Decimals are printed with format(value, 'f'): the exact digits of the Decimal the driver built.
"""
import json
import os
import sys
from decimal import Decimal

VIEWS = {"reconciliation": "id", "reconciliation_history": "id, valid_from", "sync_freshness": "1"}


def connect(driver):
    env = os.environ
    if driver == "odbc":
        import pyodbc

        # A connection string, no DSN file: the driver name is the one odbc-postgresql registers.
        conn_str = "Driver={PostgreSQL Unicode};Server=%s;Port=%s;Database=%s;Uid=%s;Pwd={%s};" % (
            env["PGHOST"], env["PGPORT"], env["PGDATABASE"], env["PGUSER"],
            env.get("PGPASSWORD", "").replace("}", "}}"))
        return pyodbc.connect(conn_str)
    import psycopg2

    return psycopg2.connect("")  # libpq reads PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD


def value(v):
    if v is None:
        return None
    if isinstance(v, Decimal):
        return {"decimal": format(v, "f")}
    return str(v)


def read(cur, sql):
    cur.execute(sql)
    columns = [
        {"name": d[0], "type": getattr(d[1], "__name__", str(d[1])), "precision": d[4], "scale": d[5]}
        for d in cur.description
    ]
    rows = [[value(v) for v in row] for row in cur.fetchall()]
    return {"columns": columns, "rows": rows}


def main():
    driver, bi, data = sys.argv[1], sys.argv[2], sys.argv[3]
    conn = connect(driver)
    cur = conn.cursor()
    out = {"views": {}, "remarks": {}}
    for view, order in VIEWS.items():
        out["views"][view] = read(cur, 'SELECT * FROM "%s".%s ORDER BY %s' % (bi, view, order))
    if driver == "odbc":
        # What SQLColumns/SQLTables report as REMARKS (psqlODBC leaves them empty).
        for view in VIEWS:
            out["remarks"][view] = {r.column_name: r.remarks for r in cur.columns(table=view, schema=bi)}
            out["remarks"][view][""] = [r.remarks for r in cur.tables(table=view, schema=bi)]
    else:
        out["exact"] = read(cur, 'SELECT id, inventory_bulk_wine, inventory_finished_goods, inventory_sales, '
                                 'vintage_forecast, vintage_make '
                                 'FROM "%s".bulk_wine_reconciliation ORDER BY id' % data)
    out["dictionary"] = read(cur, 'SELECT view_name, column_name, description FROM "%s".data_dictionary '
                                  'ORDER BY view_name, position' % bi)
    conn.close()
    print(json.dumps(out))


main()
