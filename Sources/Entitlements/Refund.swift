/// How a store took a purchase back, as Apple states it since 2025: `revocationDate` with
/// `revocationType` and `revocationPercentage` (https://developer.apple.com/documentation/appstoreserverapi/revocationtype,
/// …/revocationpercentage). Whatever the kind or the share, a revoked transaction no longer
/// entitles from its revocation date (Docs/apple-protocols.md §3.5); the kind and share say why and
/// how much of the money went back, and for a purchase of several units how many were refunded.
package struct Refund: Sendable, Equatable {
    package enum Kind: String, Sendable {
        /// The whole price.
        case full = "refund_full"
        /// A share: for a subscription, the time left in the period; for other purchases, what
        /// the customer had not consumed.
        case prorated = "refund_prorated"
        /// Family Sharing access withdrawn (the member left the family, or the purchaser stopped
        /// sharing or was refunded).
        case familyRevoke = "family_revoke"
    }

    /// When it took effect.
    package var at: Int64
    /// Nil when the store did not say (verifyReceipt; payloads before 2026).
    package var kind: Kind?
    /// The share of the price refunded, in milliunits of a percent (67932 is 67.932 %), when stated.
    package var percentage: Int64?
    /// Whether it withdrew Family Sharing access rather than refunded money: Apple's kind says so,
    /// or, when it names none, the purchase was family-shared.
    package var isFamilyRevocation: Bool

    /// `purchase`'s refund or revocation; nil when it has none (an upgrade's cancellation is none).
    package init?(_ purchase: Purchase) {
        guard let at = purchase.cancellationDate, !purchase.isUpgraded else { return nil }
        self.at = at
        kind = purchase.commerce.revocationType.flatMap { Kind(rawValue: $0.lowercased()) }
        let share = purchase.commerce.revocationPercentage
        percentage = share.map { min(max($0, 0), 100_000) }
        isFamilyRevocation = kind == .familyRevoke || (kind == nil && purchase.isFamilyShared)
    }

    /// Of `quantity` units bought at once, how many a prorated refund took back: Apple's share
    /// applies to the whole quantity ("1 of 3 items" is 33.333 %), so the nearest whole number of
    /// units. Nil unless prorated with a stated share and more than one unit; the quantity when full.
    package func refundedUnits(of quantity: Int64?) -> Int64? {
        guard let quantity, quantity > 1, !isFamilyRevocation else { return nil }
        switch kind {
        case .prorated?:
            guard let percentage else { return nil }
            return (quantity * percentage + 50_000) / 100_000
        case .full?: return quantity
        default: return nil
        }
    }

    /// The share as decimal text of three places: `67.932`.
    package static func percentText(_ milliunits: Int64) -> String {
        let fraction = String(milliunits % 1000)
        return "\(milliunits / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// What the explanation states of it.
    package var facts: [Fact] {
        [
            Fact.text("revocation_type", kind?.rawValue),
            Fact.text("revocation_percentage", percentage.map(Self.percentText)),
        ].compactMap { $0 }
    }

    /// "refunded 40.000% of" / "refunded": how much, in words, for a decision.
    package var refundedWords: String {
        if kind == .prorated, let percentage { return "refunded \(Self.percentText(percentage))% of" }
        return "refunded"
    }
}

/// A refund the store reversed (Apple's `REFUND_REVERSED`: "reinstate the content"): the
/// transaction was stated again without its revocation. Its access is back as if never refunded;
/// the history keeps both the refund and its reversal.
package struct RefundReversal: Sendable, Equatable {
    /// When the refund had taken effect.
    package var refundedAt: Int64
    /// When the store stated the transaction without it.
    package var reversedAt: Int64

    package init(refundedAt: Int64, reversedAt: Int64) {
        self.refundedAt = refundedAt
        self.reversedAt = reversedAt
    }
}
