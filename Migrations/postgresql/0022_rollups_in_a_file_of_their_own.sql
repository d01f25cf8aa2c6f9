-- The rates' revision stays with the rates (see Migrations/0022_rollups_in_a_file_of_their_own.sql:
-- on SQLite the rollups moved to a file of their own). On PostgreSQL the rollups stay here: its
-- writers do not wait for one another, and rollup_state keeps all but the revision, whose value
-- moves to its own table, so the rollups' fingerprint still matches and nothing is rebuilt.
CREATE TABLE rates_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision BIGINT NOT NULL
);
INSERT INTO rates_revision (id, revision) SELECT 1, rates_revision FROM rollup_state WHERE id = 1;
ALTER TABLE rollup_state DROP COLUMN rates_revision;
