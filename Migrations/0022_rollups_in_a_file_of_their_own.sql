-- The chart rollups move to a file of their own beside the database's, with a writer of its own
-- (Storage.DatabaseQueue.rollupsPath, Storage.RollupStore.fileSchema(in:)): their keeper's writes, tens
-- of milliseconds a second under load, held up every save on the database's one writer (POSTs at
-- 88 % of their rate without the keeper, at a million subscribers). That file holds only what the
-- keeper derives, so it has no migrations: it is made when missing, and the keeper rebuilds the
-- rollups there from the facts. The tables here go (their rows too: on SQLite's `secure_delete`,
-- overwritten; the file keeps its size, and later writes reuse the free pages).
--
-- The rates' revision stays with the rates, so that an import still moves it in its own
-- transaction: it was a column of rollup_state (0019), and is now a table of one row.
CREATE TABLE rates_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
) STRICT;
INSERT INTO rates_revision (id, revision) SELECT 1, rates_revision FROM rollup_state WHERE id = 1;
DROP TABLE rollup_marks;
DROP TABLE rollup_moments;
DROP TABLE rollup_days;
DROP TABLE rollup_holders;
DROP TABLE rollup_state;
