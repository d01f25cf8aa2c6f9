package import DatabaseEngine
package import Entitlements
package import GooglePlay
import JSON
package import Storage

/// What Google said of a purchase token, saved in the caller's write transaction, SQL only: the
/// token's chain and the times only receiptd can date read from what is stored (so an unchanged
/// answer rewrites nothing, and a voided order stays refunded), the facts saved for their holder
/// through the one save (the ownership policy deciding) or kept waiting for one, the token and
/// the calls Google is owed recorded. Shared by a posted purchase (``VerifyPlayPurchase``), a
/// notification (``IngestPlayNotification``) and the voided-purchases catch-up.
package struct PlaySave {
    package let state: SubscriberState
    package let policy: OwnershipPolicy

    package init(state: SubscriberState, policy: OwnershipPolicy) {
        self.state = state
        self.policy = policy
    }

    /// What a save did.
    package enum Outcome: Sendable, Equatable {
        /// Saved for the user: as ``SubscriberState/Stored/stored(changes:changed:)``.
        case stored(changes: Int, changed: [String])
        /// Another user holds the purchase and the policy keeps it with them; nothing written but `log`.
        case inUse(heldBy: String)
        /// No holder known: the facts are kept, attached to nobody until someone posts the token.
        case unowned(changes: Int)
    }

    /// `begun`: when the work began (``SubscriberState/store(_:for:policy:possession:begun:in:now:log:)``).
    /// `posted`: `user` posted the token (an app's or a backend's post, not a notification): they
    /// are its holder while Google names no order for it, a pending payment's included.
    package func save(
        _ resource: PlayRecord.Resource, token: String, package: String, for user: String?, posted: Bool = false,
        begun: Int64? = nil, consume: Bool, in db: Database, now: Int64, log: VerificationLogEntry? = nil,
        voidedOrder: String? = nil
    ) throws -> Outcome {
        let reference = PurchaseTokenReference.of(token)
        let linked = Self.linkedToken(resource).map(PurchaseTokenReference.of)
        let record = try Self.record(resource, reference: reference, linked: linked, package: package, in: db, now: now)
        let (purchases, renewals) = record.facts
        let raw = String(decoding: record.json.jsonBytes, as: UTF8.self)
        let facts = VerifiedFacts(
            environment: Self.environment(of: resource),
            purchases: purchases.map { Stated($0, bundleID: package, rawJSON: raw) },
            renewals: renewals.map { Stated($0, rawJSON: raw) })
        let receipts = ReceiptStore(db)
        try receipts.forgetPlaceholders(of: reference, keeping: purchases.map(\.transactionID))
        let outcome: Outcome
        if let user {
            switch try state.store(facts, for: user, policy: policy, begun: begun, in: db, now: now, log: log) {
            case .stored(let changes, let changed): outcome = .stored(changes: changes, changed: changed)
            case .inUse(let holder), .proofRequired(let holder): return .inUse(heldBy: holder)
            }
        } else {
            outcome = .unowned(changes: try receipts.saveUnowned(facts, now: now).changes)
        }
        try PlayStore(db).remember(
            PlayToken(
                reference: reference, purchaseToken: token, packageName: package, kind: Self.kind(resource),
                productID: Self.products(of: resource).first ?? "", chain: record.chain, linkedReference: linked,
                postedBy: posted ? user : nil),
            acknowledgement: Self.acknowledgement(resource), consume: consume, now: now)
        return outcome
    }

    /// The envelope for `resource`: its chain, its periods' dates as first stored, and a void
    /// already known of its order.
    package static func record(
        _ resource: PlayRecord.Resource, reference: String, linked: String?, package: String, in db: Database, now: Int64
    ) throws -> PlayRecord {
        let chain = try PlayStore(db).chain(of: reference, linkedTo: linked)
        var record = PlayRecord(packageName: package, tokenReference: reference, chain: chain, seenAt: now, resource: resource)
        let receipts = ReceiptStore(db)
        guard let current = record.facts.purchases.first else { return record }
        let stored = try receipts.purchase(current.transactionID)
        if let stored, let json = try? JSONValue.parse(Array(stored.rawJSON.utf8)), let before = PlayRecord(json: json) {
            // The times as first known: the same answer read again makes the same envelope.
            record.seenAt = before.seenAt
            record.periodStart = before.periodStart
            record.voidedAt = before.voidedAt
            if case .product(let p) = resource, p.state == .cancelled { record.cancelledAt = before.cancelledAt ?? now }
            return record
        }
        switch resource {
        case .subscription:
            record.periodStart = try receipts.latestExpiry(of: current.originalTransactionID, before: current.expiresDate)
        case .product(let p):
            record.cancelledAt = p.state == .cancelled ? now : nil
        }
        return record
    }

    /// Marks the stored order `orderID` (and its add-ons' periods) voided at `at`, for its holder
    /// (or unowned): its envelope keeps the void, so a later read or a rederivation keeps the refund.
    /// False when no such order is stored.
    package func void(orderID: String, at: Int64, in db: Database, now: Int64) throws -> (found: Bool, changed: [String]) {
        let receipts = ReceiptStore(db)
        var changed: [String] = []
        var found = false
        for stored in try receipts.playOrder(orderID) {
            guard let json = try? JSONValue.parse(Array(stored.rawJSON.utf8)), var record = PlayRecord(json: json) else {
                continue
            }
            found = true
            guard record.voidedAt == nil || record.voidedAt! > at else { continue }
            record.voidedAt = at
            let raw = String(decoding: record.json.jsonBytes, as: UTF8.self)
            let purchases = record.facts.purchases.filter { $0.transactionID.isExactly(stored.fact.transactionID) }
            let facts = VerifiedFacts(
                environment: stored.fact.environment,
                purchases: purchases.map { Stated($0, bundleID: stored.bundleID, rawJSON: raw) })
            if let holder = try receipts.owner(of: stored.fact.originalTransactionID) {
                if case .stored(_, let users) = try state.store(facts, for: holder, policy: .transfer, in: db, now: now) {
                    changed += users
                }
            } else {
                _ = try receipts.saveUnowned(facts, now: now)
            }
        }
        return (found, changed)
    }

    package static func products(of resource: PlayRecord.Resource) -> [String] {
        switch resource {
        case .subscription(let s): s.lineItems.map(\.productID)
        case .product(let p): p.lineItems.map(\.productID)
        }
    }

    /// A Play purchase's environment: `sandbox` for a test purchase (`testPurchase`).
    package static func environment(of resource: PlayRecord.Resource) -> StoreEnvironment {
        let isTest =
            switch resource {
            case .subscription(let s): s.isTest
            case .product(let p): p.isTest
            }
        return isTest ? .sandbox : .production
    }

    package static func kind(_ resource: PlayRecord.Resource) -> PlayToken.Kind {
        if case .product = resource { return .product }
        return .subscription
    }

    package static func linkedToken(_ resource: PlayRecord.Resource) -> String? {
        if case .subscription(let s) = resource { return s.linkedPurchaseToken }
        return nil
    }

    /// Google waits for an acknowledgement of a paid purchase; a pending or cancelled one has none to take.
    package static func acknowledgement(_ resource: PlayRecord.Resource) -> PlayStore.Acknowledgement {
        switch resource {
        case .subscription(let s):
            if s.isAcknowledged { return .done }
            return [.active, .canceled, .inGracePeriod, .onHold, .paused].contains(s.state) ? .owed : .notYet
        case .product(let p):
            if p.isAcknowledged { return .done }
            return p.state == .purchased ? .owed : .notYet
        }
    }

    package static func isConsumable(_ resource: PlayRecord.Resource, _ catalog: Catalog) -> Bool {
        guard case .product(let p) = resource, p.state == .purchased, !p.lineItems.contains(where: \.isConsumed) else {
            return false
        }
        return p.lineItems.allSatisfy { catalog.declared($0.productID) == .consumable }
    }
}
