-- Subscribers: the app's own user ids, as the mobile client sends them.
-- Times are integer milliseconds since the Unix epoch, UTC.
CREATE TABLE subscribers (
    app_user_id TEXT PRIMARY KEY NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
