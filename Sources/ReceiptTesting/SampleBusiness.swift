package import Analytics
package import DatabaseEngine
package import Entitlements
package import Identifiers
package import Storage

private let day: Int64 = 86_400_000

/// A business with every hard case the charts must get right (prorated and full refunds,
/// upgrades, gaps and resubscriptions, grace periods, family sharing, trials, offer codes, a
/// commitment plan, four currencies and a day without a rate), from a seed: thirty subscribers
/// from 2026-01-01 on, and the exchange rates of its first 200 days but 20.
package enum SampleBusiness {
    package static let origin = CivilTime.days(year: 2026, month: 1, day: 1) * day

    /// The settings its charts are read with: euros, two storefronts taxed, a price table for
    /// what no one priced.
    package static let settings = AnalyticsSettings(
        reportingCurrency: "EUR", taxRates: ["DEU": 190_000, "GBR": 200_000],
        priceTable: ["monthly": ["*": .init(milliunits: 4990, currency: "USD")]])

    /// Thirty subscribers' purchases and renewal infos, from `seed`.
    package static func business(seed: UInt64) -> (VerifiedFacts, [String: String]) {
        var rng = SeededGenerator(seed: seed)
        var purchases: [Stated<Purchase>] = []
        var renewals: [Stated<Renewal>] = []
        var owners: [String: String] = [:]
        let storefronts = [("USA", "USD", Int64(9990)), ("DEU", "EUR", 8990), ("GBR", "GBP", 7990), ("JPN", "JPY", 1_500_000)]
        for user in 0..<30 {
            let original = "o\(user)"
            owners[original] = "u\(user)"
            let (storefront, currency, price) = storefronts.randomElement(using: &rng)!
            let product = Bool.random(using: &rng) ? "monthly" : "annual"
            var t = origin + Int64.random(in: 0..<(60 * day), using: &rng)
            for n in 0..<Int.random(in: 1...7, using: &rng) {
                let trial = n == 0 && Int.random(in: 0..<3, using: &rng) == 0
                let length = (trial ? 7 : product == "monthly" ? 30 : 365) * day
                var commerce = Commerce(
                    price: Price(milliunits: trial ? 0 : price, currency: currency, source: .store), storefront: storefront,
                    transactionReason: n == 0 ? "PURCHASE" : "RENEWAL")
                if trial { (commerce.offerType, commerce.offerDiscountType) = (1, "FREE_TRIAL") }
                if user % 7 == 3 && n == 1 { (commerce.offerType, commerce.offerDiscountType) = (3, "PAY_AS_YOU_GO") }
                if user % 11 == 5 {
                    commerce.billingPlanType = "MONTHLY"
                    commerce.commitment = Commitment(
                        billingPeriodNumber: Int64(n + 1), totalBillingPeriods: 12, price: price * 12)
                }
                var cancelled: Int64?
                var upgraded = false
                switch Int.random(in: 0..<10, using: &rng) {
                case 0:
                    cancelled = t + 3 * day
                    (commerce.revocationType, commerce.revocationPercentage) = ("REFUND_PRORATED", 40_000)
                case 1:
                    cancelled = t + 2 * day
                    commerce.revocationType = "REFUND_FULL"
                case 2 where n > 0:
                    cancelled = t + 10 * day
                    upgraded = true
                default: break
                }
                purchases.append(
                    Stated(
                        Purchase(
                            transactionID: "\(original)-\(n)", originalTransactionID: original, productID: product,
                            purchaseDate: t, originalPurchaseDate: t, expiresDate: t + length, cancellationDate: cancelled,
                            isTrialPeriod: trial, isUpgraded: upgraded,
                            ownershipType: user % 13 == 4 ? "FAMILY_SHARED" : "PURCHASED", environment: .production,
                            subscriptionGroupID: "g", commerce: commerce),
                        bundleID: user % 5 == 2 ? "com.y" : "com.x", rawJSON: #"{"n":\#(n)}"#))
                // On time, after a gap (a resubscription), or early.
                t += length + [0, 0, 0, 40 * day, -day].randomElement(using: &rng)!
            }
            let retrying = Int.random(in: 0..<4, using: &rng) == 0
            renewals.append(
                Stated(
                    Renewal(
                        originalTransactionID: original, productID: product, autoRenewProductID: product,
                        autoRenewStatus: Bool.random(using: &rng), gracePeriodExpiresDate: retrying ? t + 6 * day : nil,
                        isInBillingRetryPeriod: retrying, environment: .production),
                    rawJSON: "{}"))
        }
        return (VerifiedFacts(environment: .production, purchases: purchases, renewals: renewals, statedAt: 1), owners)
    }

    package static let rates: [AnalyticsStore.RateRow] = (0..<200).filter { !(100..<120).contains($0) }.flatMap {
        d -> [AnalyticsStore.RateRow] in
        let (y, m, dd) = CivilTime.date(fromDays: origin / day + Int64(d))
        let label = PeriodGrid.label(y, m, dd)
        return [
            .init(day: label, currency: "USD", perEuro: "1.0823"), .init(day: label, currency: "GBP", perEuro: "0.8421"),
            .init(day: label, currency: "JPY", perEuro: "162.37"),
        ]
    }

    /// When its people were first seen, from `seed`: each subscriber up to ten days before their
    /// first purchase (or after it: then the purchase is when), and ten people who bought nothing,
    /// one of them a sandbox tester.
    package static func customers(seed: UInt64) -> [Identifier: Ledger.Customer] {
        var rng = SeededGenerator(seed: seed &+ 1)
        var customers: [Identifier: Ledger.Customer] = [:]
        for user in 0..<30 {
            customers[Identifier("u\(user)")] = Ledger.Customer(firstSeen: origin + Int64.random(in: -10..<60, using: &rng) * day)
        }
        for n in 0..<10 {
            customers[Identifier("n\(n)")] = Ledger.Customer(
                firstSeen: origin + Int64.random(in: 0..<(200 * day), using: &rng), bundleID: n % 3 == 0 ? "com.y" : "com.x",
                environments: n == 9 ? ["sandbox"] : n % 2 == 0 ? ["production"] : [])
        }
        return customers
    }

    /// Stores when its people were first seen, in the caller's transaction, after their purchases
    /// were saved: a subscriber row for who bought nothing, and each row's first seen. Those
    /// ``customers(seed:)`` gives an AppTransaction's app or environment are left out (these tests
    /// store none); what is stored is returned, as the ledger's customers.
    package static func storeCustomers(seed: UInt64, in db: Database) throws -> [Identifier: Ledger.Customer] {
        let stored = customers(seed: seed).filter { $0.value.environments.isEmpty }.mapValues {
            Ledger.Customer(firstSeen: $0.firstSeen)
        }
        let store = ReceiptStore(db)
        for (user, customer) in stored.sorted(by: { $0.key < $1.key }) {
            try store.addSubscriber(user.string, now: customer.firstSeen)
            try db.cached("UPDATE subscribers SET first_seen_at = ? WHERE app_user_id = ?").bind([
                customer.firstSeen, user.string,
            ])
            .run()
        }
        return stored
    }

    /// When everyone storage knows was first seen, as a ledger's customers: what the engine must
    /// be given to answer as the charts read from storage do.
    package static func storedCustomers(in db: Database) throws -> [Identifier: Ledger.Customer] {
        let q = try db.cached("SELECT app_user_id, coalesce(first_seen_at, created_at) FROM subscribers")
        var customers: [Identifier: Ledger.Customer] = [:]
        while try q.step() { customers[Identifier(q.text(0)!)] = Ledger.Customer(firstSeen: q.int(1)) }
        return customers
    }

    /// Refund requests about its purchases, from their places in `facts` (so a purchase changed
    /// in place keeps its own): a request a day before each refund (answered in two hours, in
    /// fourteen, or not at all, the customer's consent withdrawn), granted an hour after it (or
    /// only by the refund itself, Apple's `REFUND` lost), a fifth of those reversed ten days on;
    /// requests declined a day after they were answered; and requests still awaiting Apple.
    /// Each with its notification's id and purchase, to store.
    package static func refundRequests(_ facts: VerifiedFacts) -> [(id: Int64, original: String, event: RefundRequestEvent)] {
        var events: [(Int64, String, RefundRequestEvent)] = []
        let reasons = ["UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER", nil]
        for (i, stated) in facts.purchases.enumerated() {
            let p = stated.fact
            func add(_ kind: RefundRequestEvent.Kind, _ at: Int64, answeredAt: Int64? = nil, answer: String? = nil) {
                let id = Int64(i * 4 + RefundRequestEvent.Kind.allCases.firstIndex(of: kind)! + 1)
                events.append(
                    (
                        id, p.originalTransactionID,
                        RefundRequestEvent(
                            transactionID: p.transactionID, kind: kind, at: at, answeredAt: answeredAt, answer: answer,
                            reason: kind == .requested ? reasons[i % reasons.count] : nil)
                    ))
            }
            if let refunded = p.cancellationDate, !p.isUpgraded {
                let asked = refunded - day
                switch i % 3 {
                case 0: add(.requested, asked, answeredAt: asked + 2 * 3_600_000, answer: "sent")
                case 1: add(.requested, asked, answeredAt: asked + 14 * 3_600_000, answer: "sent")
                default: add(.requested, asked, answer: "consent_rescinded")
                }
                if i % 4 != 0 { add(.granted, refunded + 3_600_000) }
                if i % 5 == 0 { add(.reversed, refunded + 10 * day) }
            } else if let bought = p.purchaseDate, i % 6 == 1 {
                add(.requested, bought + 2 * day, answeredAt: bought + 2 * day + 3_600_000, answer: "sent")
                add(.declined, bought + 3 * day)
            } else if let bought = p.purchaseDate, i % 9 == 2 {
                add(.requested, bought + 4 * day)
            }
        }
        return events
    }

    /// Stores ``refundRequests(_:)`` of the purchases `only` names (nil: all), in the caller's
    /// transaction, in place of those stored for them before.
    package static func storeRefundRequests(_ facts: VerifiedFacts, only: Set<String>? = nil, in db: Database) throws {
        let originals = only ?? Set(facts.purchases.map(\.fact.originalTransactionID))
        let delete = try db.cached("DELETE FROM refund_requests WHERE original_transaction_id = ?")
        for original in originals.sorted() { try delete.bind([original]).run() }
        let insert = try db.cached(
            """
            INSERT INTO refund_requests
                (notification_id, original_transaction_id, transaction_id, kind, at, answered_at, answer, reason)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for (id, original, e) in refundRequests(facts) where originals.contains(original) {
            try insert.bind([id, original, e.transactionID, e.kind.rawValue, e.at, e.answeredAt, e.answer, e.reason]).run()
        }
    }

    /// What the engine sees of the facts without storage: the same purchases, held by the same
    /// users, and their refund requests.
    package static func ledger(
        _ facts: VerifiedFacts, owners: [String: String], customers: [Identifier: Ledger.Customer] = [:]
    ) -> Ledger {
        Ledger(
            entries: facts.purchases.map {
                Ledger.Entry(
                    appUserID: owners[$0.fact.originalTransactionID]!, bundleID: $0.bundleID ?? "", purchase: $0.fact)
            },
            renewals: Dictionary(
                uniqueKeysWithValues: facts.renewals.map {
                    (
                        Identifier($0.fact.originalTransactionID),
                        Ledger.RenewalState(
                            autoRenewStatus: $0.fact.autoRenewStatus, isInBillingRetryPeriod: $0.fact.isInBillingRetryPeriod,
                            gracePeriodExpiresDate: $0.fact.gracePeriodExpiresDate)
                    )
                }), customers: customers, refundRequests: refundRequests(facts).map(\.event))
    }
}
