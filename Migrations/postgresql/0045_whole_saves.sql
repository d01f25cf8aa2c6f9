-- Issue 62: a save of verified facts in one round trip (ReceiptStore.saveWhole). A save read
-- before it wrote: its locks, whom the id names, whether the person was erased while a store was
-- asked, who holds the purchases; and its last writes waited for the counts of its upserts. Here
-- the server does what the reads decided, so the whole save goes in one pipeline with the commit:
--
--   receiptd_save_begin(...)          locks, names, checks, takes the purchases
--   the facts' upserts                each row written counts itself: RETURNING receiptd_save_changed()
--   receiptd_save_end(at)             marks whose facts changed, answers with the commit
--
-- They hand on what the save is (its subscriber, who lost a purchase to them, rows changed)
-- through settings local to the transaction (set_config(..., true)): they end with it and roll
-- back with a savepoint, and each save of a group commit sets them again as it begins.
--
-- What receiptd's Swift does on SQLite, and on PostgreSQL for the saves this does not take (an
-- ownership policy other than transfer, a bare transaction id, calls queued to Apple), is the
-- same, and a test holds the two to the same rows (SubscriberStateWholeSaveTests):
-- - the locks: Database.lock, keys sorted by their bytes;
-- - whom the id names: ReceiptStore.canonical; erased since: ErasedIDs.check (SQLSTATE RD002
--   here, ErasedIDs.ErasedMeanwhile there);
-- - taking the purchases: ReceiptStore.save, NotificationStore.attachPending;
-- - marking whose facts changed: ReceiptStore.factsChanged, ChangeLog.append.

CREATE FUNCTION receiptd_save_begin(requested text, originals text[], begun bigint, at_ms bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    lock_key text;
    named text;
    original text;
    holder text;
    previous text[] := '{}';
    acquired int := 0;
BEGIN
    -- In the order of their bytes, as every other writer takes them: two never wait on each other.
    FOR lock_key IN
        SELECT k FROM (
            SELECT DISTINCT k FROM unnest(
                array_append(ARRAY(SELECT 'purchase:' || o FROM unnest(originals) AS o), 'subscriber:' || requested)) AS k
        ) AS keys ORDER BY k COLLATE "C"
    LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended(lock_key, 0));
    END LOOP;
    named := coalesce((SELECT a.app_user_id FROM aliases a WHERE a.alias = requested), requested);
    IF named <> requested THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('subscriber:' || named, 0));
    END IF;
    -- ErasedIDs.digest: SHA-256 of the id's UTF-8 bytes, in hex.
    IF begun IS NOT NULL AND EXISTS (
        SELECT 1 FROM erased_ids WHERE erased_at >= begun AND digest IN (
            encode(sha256(convert_to(requested, 'UTF8')), 'hex'), encode(sha256(convert_to(named, 'UTF8')), 'hex')))
    THEN
        RAISE EXCEPTION 'the person was erased while a store was asked' USING ERRCODE = 'RD002';
    END IF;
    INSERT INTO subscribers (app_user_id, created_at, updated_at, first_seen_at) VALUES (named, at_ms, at_ms, at_ms)
    ON CONFLICT DO NOTHING;
    FOREACH original IN ARRAY originals LOOP
        holder := (SELECT o.app_user_id FROM ownership o WHERE o.original_transaction_id = original);
        CONTINUE WHEN holder = named;
        IF holder IS NOT NULL AND NOT holder = ANY (previous) THEN
            previous := previous || holder;
        END IF;
        INSERT INTO ownership (original_transaction_id, app_user_id, since) VALUES (original, named, at_ms)
        ON CONFLICT (original_transaction_id) DO UPDATE SET app_user_id = excluded.app_user_id, since = excluded.since;
        INSERT INTO ownership_transfers (original_transaction_id, from_app_user_id, to_app_user_id, at)
        VALUES (original, holder, named, at_ms);
        UPDATE notifications SET app_user_id = named, outcome = 'attached'
        WHERE outcome = 'pending_owner' AND original_transaction_id = original;
        acquired := acquired + 1;
    END LOOP;
    PERFORM set_config('receiptd.save_subscriber', named, true), set_config('receiptd.save_previous', previous::text, true),
        set_config('receiptd.save_changes', acquired::text, true);
END
$$;

-- One more row the save wrote (an upsert's RETURNING: one call a row inserted or changed).
CREATE FUNCTION receiptd_save_changed() RETURNS int LANGUAGE sql AS $$
    SELECT set_config('receiptd.save_changes', (current_setting('receiptd.save_changes')::int + 1)::text, true)::int
$$;

-- When anything changed: the subscriber, then who lost a purchase to them, marked changed (their
-- facts revision moves, their kept document goes, the change log and its notification). Answers
-- the rows changed and, one a row, whose facts changed (one row of 0 and NULL when nothing did).
CREATE FUNCTION receiptd_save_end(at_ms bigint) RETURNS TABLE (changed_rows int, changed_subscriber text)
LANGUAGE plpgsql AS $$
DECLARE
    changes_made int := current_setting('receiptd.save_changes')::int;
    changed text[];
    who text;
BEGIN
    IF changes_made = 0 THEN
        RETURN QUERY SELECT 0, NULL::text;
        RETURN;
    END IF;
    changed := ARRAY[current_setting('receiptd.save_subscriber')] || current_setting('receiptd.save_previous')::text[];
    FOREACH who IN ARRAY changed LOOP
        UPDATE subscribers SET facts_revision = facts_revision + 1, summary_until = 0, document = NULL,
            document_settings = NULL
        WHERE app_user_id = who;
        INSERT INTO changes (app_user_id, at) VALUES (who, at_ms);
        PERFORM pg_notify('receiptd_changes', who);
    END LOOP;
    RETURN QUERY SELECT changes_made, unnest(changed);
END
$$;
