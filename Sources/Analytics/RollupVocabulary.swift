// The texts most rollup rows hold, which packed rows name by number instead of writing them in
// every holder's (RollupPacked.swift).

/// The words of the charts themselves: their names, kinds, measures, windows, stores and
/// environments. A holder's packed rows (version 2) name a text by its place here, and say how
/// many places they counted on; so a text is only ever **added at the end**: never reordered,
/// edited or removed, or rows kept before would read as other texts. A text not here (a bundle
/// id, a product, a group, a note of a rate) is written in the holder's own texts: a measure a
/// chart adds later still packs, only longer, until it is added here.
enum RollupVocabulary {
    static let texts: [String] = [
        // Environments, stores and kinds, and the empty text (no note, no measure).
        "", "production", "sandbox", "app_store", "play_store", "flow", "stock", "stock_at_start",
        // Charts.
        "revenue", "mrr", "actives", "trials", "trial_conversion", "churn", "refund_rate", "cohorts", "mrr_movement",
        "actives_movement", "trials_movement", "new_customers", "initial_conversion", "conversion_to_paying",
        "new_paid_subscriptions", "non_subscription_purchases", "ltv_per_customer", "ltv_per_paying_customer",
        "subscription_retention", "subscription_status", "refund_requests",
        // Measures.
        "abandoned", "actives_at_start", "answered", "answered_in_time", "billing_issue", "billing_retry", "churned",
        "churned_actives", "churned_mrr", "commission", "contraction_mrr", "converted", "customers", "declined",
        "direct_subscriptions", "ending_actives", "ending_mrr", "ending_trials", "expansion_mrr", "expired_trials",
        "granted", "gross", "net", "net_actives_movement", "net_mrr_movement", "net_trials_movement", "new_actives",
        "new_mrr", "new_revenue", "new_trials", "no_resolution", "paid_transactions", "paying", "paying/week",
        "paying/month", "pending", "proceeds", "reactivation_mrr", "refunded_transactions", "refunds",
        "renewal_revenue", "requests", "resubscribed", "resubscribed_actives", "reversed", "set_to_cancel",
        "set_to_renew", "starting_actives", "starting_mrr", "starting_trials", "subscriptions", "tax", "transactions",
        "trial_conversions", "purchases",
        // Measures by the window of their first-seen cohort.
        "/7d", "/30d", "/90d", "/365d", "/unbounded", "converted_customers/7d", "converted_customers/30d",
        "converted_customers/90d", "converted_customers/365d", "converted_customers/unbounded",
        "new_paying_customers/7d", "new_paying_customers/30d", "new_paying_customers/90d",
        "new_paying_customers/365d", "new_paying_customers/unbounded", "revenue/7d", "revenue/30d", "revenue/90d",
        "revenue/365d", "revenue/unbounded",
    ]
}
