-- Room on each page of the data table for the next version of a row. A re-sync updates
-- the rows whose record changed, one in a hundred, spread over the whole table. A page that a
-- first load's COPY (or INSERT) filled has no room for the new version: it goes to another page,
-- with a new entry in the primary key (every leaf page of it touched by spread changes), and after
-- a checkpoint each of those pages costs a full-page image in the WAL. With 10% of each page left
-- free, the new version stays on its page (a HOT update): no index entry, one page per change.
-- COPY and INSERT honour the fill factor; the rows already stored keep their pages as they are,
-- and a page gains the room as its rows move or are pruned. The table is about 11% larger.
ALTER TABLE bulk_wine_reconciliation SET (fillfactor = 90);
