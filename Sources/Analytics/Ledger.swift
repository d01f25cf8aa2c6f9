package import Entitlements
package import Identifiers

/// What the charts read: every transaction with who holds it and its app, and each
/// subscription's latest renewal info. Built by the caller from stored facts; nothing here reads.
package struct Ledger: Sendable {
    package var entries: [Entry]
    /// Keyed by original transaction id, as its bytes.
    package var renewals: [Identifier: RenewalState]
    /// When each person was first seen, by app user id: people with no purchase too (the
    /// customers' charts count them). Someone holding purchases but absent here was first seen at
    /// their first purchase. Ids are their bytes: two spellings are two people.
    package var customers: [Identifier: Customer]
    /// What Apple said of refund requests about the transactions held, and receiptd's answers.
    package var refundRequests: [RefundRequestEvent]

    package init(
        entries: [Entry], renewals: [Identifier: RenewalState] = [:], customers: [Identifier: Customer] = [:],
        refundRequests: [RefundRequestEvent] = []
    ) {
        self.entries = entries
        self.renewals = renewals
        self.customers = customers
        self.refundRequests = refundRequests
    }

    /// A person as the customers' charts see them, besides their purchases: when receiptd first
    /// heard of them (their first post, or an AppTransaction stored for them) and, for someone
    /// with no purchase, which app and environments their AppTransactions name.
    package struct Customer: Sendable, Equatable {
        package var firstSeen: Int64
        package var bundleID: String?
        package var environments: [String]

        package init(firstSeen: Int64, bundleID: String? = nil, environments: [String] = []) {
            self.firstSeen = firstSeen
            self.bundleID = bundleID
            self.environments = environments
        }
    }

    /// Every environment someone in the ledger is counted in: their purchases', their
    /// AppTransactions', and production for someone known by neither.
    package var environments: Set<String> {
        var all = Set(entries.map(\.purchase.environment.rawValue))
        let holding = Set(entries.map { Identifier($0.appUserID) })
        for (user, customer) in customers {
            all.formUnion(customer.environments)
            if customer.environments.isEmpty, !holding.contains(user) { all.insert("production") }
        }
        return all
    }

    package struct Entry: Sendable, Equatable {
        package var appUserID: String
        package var bundleID: String
        package var purchase: Purchase

        package init(appUserID: String, bundleID: String, purchase: Purchase) {
            self.appUserID = appUserID
            self.bundleID = bundleID
            self.purchase = purchase
        }
    }

    /// The part of the renewal info the charts need.
    package struct RenewalState: Sendable, Equatable {
        package var autoRenewStatus: Bool?
        package var isInBillingRetryPeriod: Bool?
        package var gracePeriodExpiresDate: Int64?
        /// Google Play's `subscriptionState` (`SUBSCRIPTION_STATE_PAUSED`, `…_ON_HOLD`), nil for Apple.
        package var storeState: String?

        package init(
            autoRenewStatus: Bool? = nil, isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Int64? = nil,
            storeState: String? = nil
        ) {
            self.autoRenewStatus = autoRenewStatus
            self.isInBillingRetryPeriod = isInBillingRetryPeriod
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
            self.storeState = storeState
        }
    }
}

/// Which transactions a chart counts. Environment is production unless asked.
package struct ChartFilters: Sendable, Equatable {
    package var app: String?
    package var product: String?
    package var storefront: String?
    package var environment: String
    package var store: Store?

    package init(
        app: String? = nil, product: String? = nil, storefront: String? = nil, environment: String = "production",
        store: Store? = nil
    ) {
        self.app = app
        self.product = product
        self.storefront = storefront
        self.environment = environment
        self.store = store
    }

    func admits(_ e: Ledger.Entry) -> Bool {
        let p = e.purchase
        return p.environment.rawValue == environment && (app.map { $0.isExactly(e.bundleID) } ?? true)
            && (product.map { $0.isExactly(p.productID) } ?? true)
            && (storefront.map { s in p.commerce.storefront.map { s.isExactly($0) } ?? false } ?? true)
            && (store.map { $0 == p.store } ?? true)
    }
}

extension Purchase {
    /// A free trial, by StoreKit 2's offer or verifyReceipt's flag.
    var isFreeTrial: Bool { isTrialPeriod || commerce.isFreeTrial }
    /// A period of an auto-renewable subscription someone paid for (offers at a price included).
    var isPaidPeriod: Bool { expiresDate != nil && !isFreeTrial && !isFamilyShared }
    /// When it stops giving access: its expiry, or its refund or upgrade if earlier.
    var accessEnd: Int64? {
        guard let expires = expiresDate else { return nil }
        return cancellationDate.map { min($0, expires) } ?? expires
    }
    /// A free trial giving access at `t` (family members' copies aside).
    func isTrial(at t: Int64) -> Bool {
        guard isFreeTrial, !isFamilyShared, let start = purchaseDate, let end = accessEnd else { return false }
        return start <= t && t < end
    }
    /// Refunded (fully or in part) rather than revoked from Family Sharing or ended by an upgrade.
    var isRefunded: Bool {
        cancellationDate != nil && !isUpgraded && commerce.revocationType != "FAMILY_REVOKE"
    }
}

/// One subscription (an original transaction) as the charts see it.
struct SubscriptionLine {
    var appUserID: String
    var originalTransactionID: String
    /// Its transactions the filters admit, oldest first.
    var entries: [Ledger.Entry]
    /// Paid access as disjoint intervals, oldest first; the last reaches into a grace period
    /// when the renewal info says the App Store is retrying a charge within one.
    var paid: [Interval]
    var renewal: Ledger.RenewalState?

    struct Interval: Equatable {
        var start: Int64
        var end: Int64
    }

    func isPaidActive(at t: Int64) -> Bool { paid.contains { $0.start <= t && t < $0.end } }

    /// The paid transaction giving access at `t`: the latest one begun by then whose access has
    /// not ended (the grace period stands on the last one).
    func payingEntry(at t: Int64) -> Ledger.Entry? {
        guard isPaidActive(at: t) else { return nil }
        var lastBegun: Ledger.Entry?
        for e in entries.reversed() where e.purchase.isPaidPeriod && (e.purchase.purchaseDate ?? .max) <= t {
            if (e.purchase.accessEnd ?? .min) > t { return e }
            if lastBegun == nil { lastBegun = e }
        }
        return lastBegun
    }

    /// A span of time over which one transaction stands for the line.
    struct Piece {
        var start: Int64
        var end: Int64
        var entry: Ledger.Entry
    }

    /// ``payingEntry(at:)`` over all time, as the pieces where it is one transaction: it can
    /// change only where a paid interval, a purchase or an access begins or ends.
    var payingPieces: [Piece] {
        let paidEntries = entries.filter(\.purchase.isPaidPeriod)
        let times =
            paid.flatMap { [$0.start, $0.end] }
            + paidEntries.flatMap { [$0.purchase.purchaseDate, $0.purchase.accessEnd].compactMap { $0 } }
        return Self.pieces(at: times) { payingEntry(at: $0) }
    }

    /// The free trial giving access over all time (the latest begun, as ``actives`` counts it).
    var trialPieces: [Piece] {
        let trials = entries.filter { $0.purchase.isFreeTrial && !$0.purchase.isFamilyShared }
        let times = trials.flatMap { [$0.purchase.purchaseDate, $0.purchase.accessEnd].compactMap { $0 } }
        return Self.pieces(at: times) { t in trials.last { $0.purchase.isTrial(at: t) } }
    }

    /// Where `entry(at:)` is some transaction, given every instant where it may change.
    static func pieces(at times: [Int64], _ entry: (Int64) -> Ledger.Entry?) -> [Piece] {
        let cuts = Array(Set(times)).sorted()
        var pieces: [Piece] = []
        for (start, end) in zip(cuts, cuts.dropFirst()) {
            guard let e = entry(start) else { continue }
            if let last = pieces.last, last.end == start, last.entry.purchase.transactionID.isExactly(e.purchase.transactionID) {
                pieces[pieces.count - 1].end = end
            } else {
                pieces.append(Piece(start: start, end: end, entry: e))
            }
        }
        return pieces
    }

    static func lines(_ ledger: Ledger, filters: ChartFilters) -> [SubscriptionLine] {
        var byOriginal: [Identifier: [Ledger.Entry]] = [:]
        for e in ledger.entries where filters.admits(e) && e.purchase.expiresDate != nil {
            byOriginal[Identifier(e.purchase.originalTransactionID), default: []].append(e)
        }
        return byOriginal.keys.sorted().map { original in
            let entries = byOriginal[original]!.sorted { Purchase.chronological($0.purchase, $1.purchase) }
            let renewal = ledger.renewals[original]
            return SubscriptionLine(
                appUserID: entries.last!.appUserID, originalTransactionID: original.string, entries: entries,
                paid: paidIntervals(entries.map(\.purchase), renewal: renewal), renewal: renewal)
        }
    }

    /// Paid periods merged where they meet or overlap (a renewal is charged before the period it
    /// follows ends); a billing-retry grace period extends the last.
    static func paidIntervals(_ purchases: [Purchase], renewal: Ledger.RenewalState?) -> [Interval] {
        var raw: [Interval] = []
        for p in purchases where p.isPaidPeriod {
            guard let start = p.purchaseDate, let end = p.accessEnd, end > start else { continue }
            raw.append(Interval(start: start, end: end))
        }
        var merged = merge(raw)
        if let grace = renewal?.gracePeriodExpiresDate, renewal?.isInBillingRetryPeriod == true, let last = merged.last,
            grace > last.end, let latest = purchases.last, latest.isPaidPeriod, latest.cancellationDate == nil
        {
            merged[merged.count - 1].end = grace
        }
        return merged
    }

    static func merge(_ intervals: [Interval]) -> [Interval] {
        var merged: [Interval] = []
        for i in intervals.sorted(by: { ($0.start, $0.end) < ($1.start, $1.end) }) {
            if let last = merged.last, i.start <= last.end {
                merged[merged.count - 1].end = max(last.end, i.end)
            } else {
                merged.append(i)
            }
        }
        return merged
    }
}
