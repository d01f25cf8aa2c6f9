-- Issue 43: mass renewal-date extensions: see Migrations/0033_mass_extensions.sql.
CREATE TABLE mass_extensions (
    request_id TEXT PRIMARY KEY,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    product_id TEXT NOT NULL,
    storefronts TEXT NOT NULL,
    days BIGINT NOT NULL CHECK (days BETWEEN 1 AND 90),
    reason TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('submitting', 'in_progress', 'refreshing', 'complete', 'refused')),
    submitted_at BIGINT,
    apple_completed_at BIGINT,
    succeeded_count BIGINT,
    failed_count BIGINT,
    refreshed BIGINT NOT NULL DEFAULT 0,
    refresh_after TEXT,
    finished_at BIGINT,
    due_at BIGINT,
    lease_until BIGINT,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE INDEX mass_extensions_due ON mass_extensions (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX mass_extensions_by_time ON mass_extensions (requested_at, request_id);
