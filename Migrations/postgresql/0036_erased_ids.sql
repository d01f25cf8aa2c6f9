-- Issue 57: see Migrations/0036_erased_ids.sql.
CREATE TABLE erased_ids (
    digest TEXT PRIMARY KEY,
    erased_at BIGINT NOT NULL
);
CREATE INDEX erased_ids_by_time ON erased_ids (erased_at);
