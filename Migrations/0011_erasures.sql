-- Erasures (issue 22; GDPR art. 17): that one happened, when, by whom and how many rows it
-- removed or blanked, never what or whose. `by_key` is "key:" and the first 12 hex digits of the
-- SHA-256 of the API key that asked (never the key), or "cli" for `receiptd erase`.
CREATE TABLE erasures (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    by_key TEXT NOT NULL,
    rows INTEGER NOT NULL
) STRICT;
