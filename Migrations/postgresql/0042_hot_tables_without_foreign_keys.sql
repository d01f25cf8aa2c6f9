-- Issue 62: the foreign keys of the tables every save writes are dropped on PostgreSQL, where each
-- inserted or updated row fired a trigger that read and share-locked its subscriber's row (an
-- executor start-up per row). receiptd's own code keeps what they kept, and a test holds it to it
-- on both databases (SubscriberStateTests.everyHeldPurchaseAndEventNamesASubscriber):
-- - ownership.app_user_id names a subscriber: a purchase is owned only by a subscriber row
--   created in the same save (ReceiptStore.save), moved only to another (Merge, a transfer),
--   and deleted before its holder is (Erasure);
-- - events.app_user_id names a subscriber: events are written only beside their subscriber's
--   settle (SubscriberState.record), moved with a merge, deleted before the subscriber.
-- SQLite keeps both (its checks run in-process, without a statement of their own), so every test
-- on SQLite still fails at the first row that breaks them.
ALTER TABLE ownership DROP CONSTRAINT ownership_app_user_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_app_user_id_fkey;
