import Identifiers

/// A fact as Apple stated it: the domain value, and what it was read from, kept so it can be
/// mapped again (`receiptd rederive`).
package struct Stated<Fact: Sendable & Equatable>: Sendable, Equatable {
    package var fact: Fact
    /// The app a transaction belongs to; nil for renewal info, which names none.
    package var bundleID: String?
    /// The object as Apple sent it (a signed payload without its `signedDate`).
    package var rawJSON: String

    package init(_ fact: Fact, bundleID: String? = nil, rawJSON: String) {
        self.fact = fact
        self.bundleID = bundleID
        self.rawJSON = rawJSON
    }
}

/// Everything one verified answer says (a receipt, a notification, a signed transaction), to
/// be stored in one transaction.
package struct VerifiedFacts: Sendable, Equatable {
    package var environment: StoreEnvironment
    package var purchases: [Stated<Purchase>]
    package var renewals: [Stated<Renewal>]
    /// Apple's `latest_receipt`, kept for each of the receipt's subscriptions.
    package var latestReceipt: String?
    /// When Apple stated these facts (a JWS's `signedDate`); nil: when they are saved. Rows stated
    /// later are never overwritten by these.
    package var statedAt: Int64?
    /// When the renewal info's change happened, when Apple says so (V1's
    /// `auto_renew_status_change_date_ms`, a V2 renewal's `signedDate`); nil: when it is saved. It
    /// dates the history row, never before the subscription's previous snapshot nor after now.
    package var renewalChangedAt: Int64?

    package init(
        environment: StoreEnvironment, purchases: [Stated<Purchase>], renewals: [Stated<Renewal>] = [],
        latestReceipt: String? = nil,
        statedAt: Int64? = nil, renewalChangedAt: Int64? = nil
    ) {
        self.environment = environment
        self.purchases = purchases
        self.renewals = renewals
        self.latestReceipt = latestReceipt
        self.statedAt = statedAt
        self.renewalChangedAt = renewalChangedAt
    }

    /// The original transaction ids, in first-seen order.
    package var originals: [String] {
        var originals: [String] = []
        // A receipt's few ids are compared with those kept; a set pays for itself past a few dozen.
        let few = purchases.count + renewals.count <= 32
        var seen: Set<Identifier> = []
        func add(_ id: String) {
            if few ? !originals.contains(where: { $0.isExactly(id) }) : seen.insert(Identifier(id)).inserted {
                originals.append(id)
            }
        }
        for p in purchases { add(p.fact.originalTransactionID) }
        for r in renewals { add(r.fact.originalTransactionID) }
        return originals
    }

    /// Whether there is nothing to store.
    package var isEmpty: Bool { purchases.isEmpty && renewals.isEmpty }
}
