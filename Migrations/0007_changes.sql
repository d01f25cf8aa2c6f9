-- The change log: one row per write that changed what a subscriber's document is made of (their
-- facts, their version), in commit order (SQLite has one writer at a time, so sequences grow in
-- commit order across processes). Followed by sequence: this process's document cache, and every
-- other process on the file; later, outbound webhooks and other instances.
CREATE TABLE changes (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
    app_user_id TEXT NOT NULL,
    at INTEGER NOT NULL
) STRICT;
