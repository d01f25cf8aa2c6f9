-- Facts name the store that stated them (Entitlements.Store) rather than assume Apple's, so a
-- second store's purchases sit beside the App Store's. Every purchase stored so far is Apple's.
ALTER TABLE transactions ADD COLUMN store TEXT NOT NULL DEFAULT 'app_store';
