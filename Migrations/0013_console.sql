-- Promotional entitlements and the overview's states (issue 23).
--
-- `promotions`: entitlements support gave by hand (README "Promotional entitlements"). A fact
-- like a purchase: the derivation grants `entitlement` from `starts_at` until `expires_at`, or
-- until `revoked_at`. `granted_by`/`revoked_by` name the asker as erasures do ("key:" and 12 hex
-- digits of the API key's SHA-256, never the key); `reason`/`revoke_reason` are their words.
CREATE TABLE promotions (
    id INTEGER PRIMARY KEY,
    app_user_id TEXT NOT NULL REFERENCES subscribers (app_user_id),
    entitlement TEXT NOT NULL,
    starts_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    granted_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    revoked_at INTEGER,
    revoked_by TEXT,
    revoke_reason TEXT
) STRICT;
CREATE INDEX promotions_by_user ON promotions (app_user_id);

-- `product_states`: each subscriber's products as their document last read them (kind is
-- `subscription`, a product type, or `promotional` with the entitlement as product_id), for the
-- overview's "subscribers by product and state". Derived, never a fact: rewritten whenever the
-- subscriber's state is recorded. `subscribers.summary_until` is when that reading may go stale
-- (the document's next change in time; 0: never written or facts changed since).
CREATE TABLE product_states (
    app_user_id TEXT NOT NULL,
    -- kind, ":", product_id: one row per product of each kind.
    slot TEXT NOT NULL,
    kind TEXT NOT NULL,
    product_id TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (app_user_id, slot)
) STRICT;
CREATE INDEX product_states_by_product ON product_states (kind, product_id, state);
ALTER TABLE subscribers ADD COLUMN summary_until INTEGER NOT NULL DEFAULT 0;
CREATE INDEX subscribers_by_summary ON subscribers (summary_until);

-- The overview counts events per day by type.
CREATE INDEX events_by_time ON events (at, type);
