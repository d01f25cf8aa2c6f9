-- Issue 57: a write that began before a person was erased (a refresh, any call to a store in
-- flight) must not write their id back. Each erased id's SHA-256 (never the id) is kept, with
-- when, for a day: longer than any call to a store takes. Every write of a person's id checks
-- in its transaction that they were not erased since it began (Sources/Storage/ErasedIDs.swift).
CREATE TABLE erased_ids (
    digest TEXT PRIMARY KEY,
    erased_at INTEGER NOT NULL
) STRICT;
CREATE INDEX erased_ids_by_time ON erased_ids (erased_at);
