-- Aliases (issue 22): other ids of one subscriber, as when an anonymous id signs in to an account.
-- `alias` reaches `app_user_id`, the subscriber's canonical id, in every read and write; an alias
-- never has a subscribers row of its own, and chains are flattened when merged (an alias always
-- names a canonical id). `at` is when the two became one (the `merge` event's time).
CREATE TABLE aliases (
    alias TEXT PRIMARY KEY NOT NULL,
    app_user_id TEXT NOT NULL REFERENCES subscribers (app_user_id),
    at INTEGER NOT NULL
) STRICT;
CREATE INDEX aliases_by_user ON aliases (app_user_id);
