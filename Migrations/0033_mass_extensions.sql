-- Issue 43: Extend Subscription Renewal Dates for All Active Subscribers (outage compensation),
-- one row per request: asked through the API or the console (who asked kept: the audit), sent to
-- Apple, its status polled until Apple reports it complete, then the new expiry of every stored
-- subscription it reached fetched and stored (Sources/ReceiptCore/MassExtensions.swift).
CREATE TABLE mass_extensions (
    -- Apple's requestIdentifier, a UUID: a retry with the same id is the same request.
    request_id TEXT PRIMARY KEY,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    product_id TEXT NOT NULL,
    -- ISO 3166-1 alpha-3 codes, sorted, comma-separated; '' for every storefront.
    storefronts TEXT NOT NULL,
    days INTEGER NOT NULL CHECK (days BETWEEN 1 AND 90),
    reason TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    -- submitting (not yet accepted by Apple), in_progress (Apple works through it), refreshing
    -- (Apple finished; new expiries being fetched), complete, refused (Apple will never take it).
    status TEXT NOT NULL CHECK (status IN ('submitting', 'in_progress', 'refreshing', 'complete', 'refused')),
    submitted_at INTEGER,
    apple_completed_at INTEGER,
    succeeded_count INTEGER,
    failed_count INTEGER,
    -- Stored subscriptions whose new expiry was fetched, and the last original id looked at.
    refreshed INTEGER NOT NULL DEFAULT 0,
    refresh_after TEXT,
    finished_at INTEGER,
    -- When the next step is due; NULL once complete or refused.
    due_at INTEGER,
    lease_until INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
) STRICT;
CREATE INDEX mass_extensions_due ON mass_extensions (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX mass_extensions_by_time ON mass_extensions (requested_at, request_id);
