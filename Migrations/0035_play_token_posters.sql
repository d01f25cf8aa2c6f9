-- Issue 57: the app user who posted a Google Play purchase token holds it while Google names no
-- order for it (a pending payment): when Google later says PURCHASED, the purchase is theirs
-- (Sources/Storage/PlayStore.swift `holder(of:)`). Exported and erased with the person.
ALTER TABLE play_tokens ADD COLUMN posted_by TEXT;
CREATE INDEX play_tokens_by_poster ON play_tokens (posted_by) WHERE posted_by IS NOT NULL;
