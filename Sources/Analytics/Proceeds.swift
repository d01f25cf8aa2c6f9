import Entitlements
package import Identifiers

/// The operator's settings the money depends on (Docs/analytics.md).
package struct AnalyticsSettings: Sendable, Equatable {
    /// ISO 4217: every figure is also given in it.
    package var reportingCurrency: String
    /// Bundle ids of apps in Apple's App Store Small Business Program: 15 % on every sale.
    package var smallBusinessApps: Set<Identifier>
    /// Storefront → the VAT/GST its prices include, in parts per million (19 % is 190000).
    /// Without a storefront's rate, its proceeds are before tax and say so.
    package var taxRates: [String: Int64]
    /// The last resort for a transaction no store or client priced: product → storefront (or
    /// `*` for any) → price. Product ids are their bytes, as the stores send them.
    package var priceTable: [Identifier: [String: TablePrice]]
    /// Development only (refused in production): units of each currency per euro, six places,
    /// standing for every day the loaded rates do not cover, so that the simulators' sales can be
    /// reported offline. Every chart answer says they are simulated.
    package var simulatedRates: [String: Int64]

    package init(
        reportingCurrency: String = "USD", smallBusinessApps: Set<Identifier> = [], taxRates: [String: Int64] = [:],
        priceTable: [Identifier: [String: TablePrice]] = [:], simulatedRates: [String: Int64] = [:]
    ) {
        self.reportingCurrency = reportingCurrency
        self.smallBusinessApps = smallBusinessApps
        self.taxRates = taxRates
        self.priceTable = priceTable
        self.simulatedRates = simulatedRates
    }

    package struct TablePrice: Sendable, Equatable {
        package var milliunits: Int64
        package var currency: String

        package init(milliunits: Int64, currency: String) {
            self.milliunits = milliunits
            self.currency = currency
        }
    }

    /// A transaction's price: its own, else the table's for its product and storefront.
    func price(of p: Purchase) -> Price? {
        if let own = p.commerce.price { return own }
        guard let byStorefront = priceTable[Identifier(p.productID)],
            let row = p.commerce.storefront.flatMap({ byStorefront[$0] }) ?? byStorefront["*"]
        else { return nil }
        return Price(milliunits: row.milliunits, currency: row.currency, source: .priceTable)
    }
}

/// The store's commission on a sale. Apple's (https://developer.apple.com/app-store/subscriptions/ "Days of
/// paid service"; https://developer.apple.com/app-store/small-business-program/): 30 %; 15 % in
/// the Small Business Program; 15 % on a subscription once its subscriber has a year of paid
/// service in the subscription group. Paid days accumulate across upgrades, downgrades and
/// crossgrades within the group; free trials and a fully refunded period give none; a lapse of
/// more than 60 days starts the count again.
struct Commission {
    static let day: Int64 = 86_400_000
    static let year = 365 * day
    static let lapse = 60 * day

    /// (app user, subscription group) → paid periods, merged, oldest first.
    private var service: [Identifier: [SubscriptionLine.Interval]] = [:]
    private let smallBusinessApps: Set<Identifier>

    init(_ entries: [Ledger.Entry], smallBusinessApps: Set<Identifier>) {
        self.smallBusinessApps = smallBusinessApps
        var raw: [Identifier: [SubscriptionLine.Interval]] = [:]
        for e in entries where e.purchase.isPaidPeriod {
            let p = e.purchase
            let fullyRefunded = p.isRefunded && p.commerce.revocationType != "REFUND_PRORATED"
            guard !fullyRefunded, let start = p.purchaseDate, let end = p.accessEnd, end > start else { continue }
            raw[Self.key(e), default: []].append(SubscriptionLine.Interval(start: start, end: end))
        }
        service = raw.mapValues(SubscriptionLine.merge)
    }

    static func key(_ e: Ledger.Entry) -> Identifier {
        Identifier(e.appUserID + "\u{0}" + (e.purchase.subscriptionGroupID ?? e.purchase.productID))
    }

    /// 15 or 30.
    func percent(_ e: Ledger.Entry) -> Int64 {
        switch e.purchase.store.rules.commission {
        case .playServiceFee:
            // Google Play's service fee (https://support.google.com/googleplay/android-developer/answer/112622):
            // 15 % on auto-renewing subscriptions from their first day; on other sales 15 % for the
            // first USD 1M a year of a developer enrolled in the 15 % tier (its apps listed in
            // `smallBusinessApps`), else 30 %. The yearly USD 1M threshold is not counted here.
            if e.purchase.expiresDate != nil { return 15 }
            return smallBusinessApps.contains(Identifier(e.bundleID)) ? 15 : 30
        case .appleServiceYear:
            if smallBusinessApps.contains(Identifier(e.bundleID)) { return 15 }
            guard e.purchase.expiresDate != nil, let at = e.purchase.purchaseDate else { return 30 }
            return Self.paidService(service[Self.key(e)] ?? [], before: at) >= Self.year ? 15 : 30
        }
    }

    /// Paid time before `t` since the last lapse of more than 60 days.
    static func paidService(_ periods: [SubscriptionLine.Interval], before t: Int64) -> Int64 {
        var total: Int64 = 0
        var previousEnd: Int64?
        for p in periods where p.start < t {
            if let previousEnd, p.start - previousEnd > lapse { total = 0 }
            total += min(p.end, t) - p.start
            previousEnd = p.end
        }
        if let previousEnd, t - previousEnd > lapse { return 0 }
        return total
    }
}

/// One priced sale and what became of it, in its own currency's milliunits.
struct Charge {
    var entry: Ledger.Entry
    var price: Price
    /// UTC day of the purchase (days since 1970-01-01): the day of its exchange rate.
    var day: Int64
    var gross: Int64
    var refunds: Int64
    /// Why part of it went back: `refund`, `prorated_refund`, `upgrade_proration`.
    var refundKind: String?
    var tax: Int64?
    var commissionPercent: Int64
    var proceeds: Int64

    var net: Int64 { gross - refunds }

    /// A sale with a price and its refund: a prorated refund by Apple's percentage; an upgrade
    /// by Apple's percentage when given, else the unused share of its period (Apple refunds the
    /// rest of the old subscription on an upgrade); any other refund in full. A revocation from
    /// Family Sharing refunds nothing (the organiser's purchase stands).
    init(entry: Ledger.Entry, price: Price, commissionPercent: Int64, taxPPM: Int64?) {
        let p = entry.purchase
        self.entry = entry
        self.price = price
        day = CivilTime.split(p.purchaseDate ?? 0).0
        gross = price.milliunits
        var refunds: Int64 = 0
        var kind: String?
        if p.cancellationDate != nil && p.commerce.revocationType != "FAMILY_REVOKE" {
            if let share = p.commerce.revocationPercentage, (0...100_000).contains(share),
                p.isUpgraded || p.commerce.revocationType == "REFUND_PRORATED"
            {
                refunds = Money.scale(gross, by: Int128(share), over: 100_000)
                kind = p.isUpgraded ? "upgrade_proration" : "prorated_refund"
            } else if p.isUpgraded {
                if let start = p.purchaseDate, let end = p.expiresDate, let at = p.cancellationDate, end > start, at < end {
                    refunds = Money.scale(gross, by: Int128(end - max(at, start)), over: Int128(end - start))
                    kind = "upgrade_proration"
                }
            } else {
                refunds = gross
                kind = "refund"
            }
        }
        self.refunds = refunds
        refundKind = kind
        self.commissionPercent = commissionPercent
        let net = gross - refunds
        let pretax: Int64
        if let taxPPM {
            pretax = Money.scale(net, by: 1_000_000, over: Int128(1_000_000 + taxPPM))
            tax = net - pretax
        } else {
            pretax = net
            tax = nil
        }
        proceeds = Money.scale(pretax, by: Int128(100 - commissionPercent), over: 100)
    }
}
