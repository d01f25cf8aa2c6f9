-- Issue 61: when each person was first seen, the cohort of the customers' charts (new customers,
-- conversion, LTV; Docs/analytics.md). It starts as the row's creation (their first post) and
-- keeps the earliest of the ids merged into it (Sources/Storage/Merge.swift), so a person known
-- under several ids is one customer, first seen when the first of them was. Their first purchase
-- and AppTransaction are read beside it (Sources/Storage/AnalyticsStore.swift).
ALTER TABLE subscribers ADD COLUMN first_seen_at INTEGER;
UPDATE subscribers SET first_seen_at = created_at;
