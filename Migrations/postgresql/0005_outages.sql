-- Issue 6: when Apple is down, receiptd answers with the last known subscriber document and its
-- age, the time of the user's last successful verification or applied notification.
CREATE INDEX verifications_by_user ON verifications (app_user_id, at);
CREATE INDEX notifications_by_user ON notifications (app_user_id, received_at) WHERE app_user_id IS NOT NULL;
