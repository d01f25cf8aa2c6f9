-- Issue 57: a subscription group is Apple's subscriptionGroupIdentifier on stored transactions,
-- not only the products Config/offers.json lists under it. Offers find the group's identifiers
-- from the transactions of its listed products (Sources/ReceiptCore/SignOffer.swift), by index.
CREATE INDEX transactions_by_product_group ON transactions (product_id, subscription_group_id)
    WHERE subscription_group_id IS NOT NULL;
