-- Issue 43: customers who withdrew their consent to share consumption data with Apple
-- (`RESCIND_CONSENT`, which names them by their `appTransactionId`). Consumption requests about
-- their purchases are not answered (Sources/ReceiptCore/AnswerConsumptionRequest.swift). The
-- first notification is kept. Not erased with a person: like a suppression list, forgetting it
-- would start sharing again (Docs/privacy.md).
CREATE TABLE consumption_consent_rescinded (
    app_transaction_id TEXT PRIMARY KEY NOT NULL,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    -- Apple's signedDate of the notification (else when it arrived).
    rescinded_at INTEGER NOT NULL,
    notification_id INTEGER NOT NULL
) STRICT;
