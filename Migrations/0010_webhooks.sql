-- Outbound webhooks (README "Webhooks"): a transactional outbox. A message is one lifecycle event
-- as pushed: its payload, built once, its id stable across retries and replays. A delivery is
-- that message's sending to one configured endpoint. Both are written in the transaction that
-- records the event (SubscriberState.record), so a committed change always has its deliveries
-- and a rolled-back one never does.
CREATE TABLE webhook_messages (
    -- "evt_" and 32 hex digits, derived from (app_user_id, event key): the payload's `id`.
    id TEXT PRIMARY KEY,
    app_user_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    type TEXT NOT NULL,
    -- The app of the event's purchase (endpoints may take one app's events only).
    bundle_id TEXT,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_messages_by_time ON webhook_messages (created_at);

-- The deliveries of one (endpoint, subscriber) form a queue, sent in id order (which is version
-- order: SQLite has one writer). Only the queue's head has a due_at; the ones behind it wait with
-- NULL and are promoted when the head is delivered or fails for good. A claim moves due_at to the
-- end of its lease and writes its token in claimed_by: a process that dies mid-send leaves a
-- delivery that falls due again when the lease runs out (at least once, never twice at once).
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES webhook_messages (id),
    endpoint TEXT NOT NULL,
    app_user_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    due_at INTEGER,
    claimed_by TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    -- The first attempt since it was queued (or queued again by hand): retries stop some days after it.
    first_attempt_at INTEGER,
    -- The answer to the newest attempt: an HTTP status, or an error with no answer.
    last_status INTEGER,
    last_error TEXT,
    last_attempt_at INTEGER,
    created_at INTEGER NOT NULL,
    -- When it was delivered or given up on.
    finished_at INTEGER
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, due_at) WHERE status = 'pending' AND due_at IS NOT NULL;
CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (endpoint, app_user_id, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_user ON webhook_deliveries (app_user_id, id);
CREATE INDEX webhook_deliveries_by_status ON webhook_deliveries (status, id);
CREATE INDEX webhook_deliveries_by_message ON webhook_deliveries (message_id);
