-- Issue 60: a person's attributes, as RevenueCat's SDKs set them (POST /v1/subscribers/{id}/attributes
-- on the SDK listener): a name, a value (NULL: unset, kept so an older write cannot set it again),
-- the device's time of the change (the newer wins) and when receiptd stored it. Under the
-- person's canonical id; exported and erased with them (Sources/Storage/AttributeStore.swift).
CREATE TABLE attributes (
    id INTEGER PRIMARY KEY,
    app_user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT,
    updated_at INTEGER NOT NULL,
    recorded_at INTEGER NOT NULL,
    UNIQUE (app_user_id, name)
) STRICT;
