import Identifiers

/// What kind each product is, and the policy knobs of the derivation. A verifyReceipt answer
/// does not say whether a product without an expiry is consumable, lasting or a non-renewing
/// subscription, so operators declare it (Config/products.json).
package struct Catalog: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// Has an `expires_date`; renewals are chained by original transaction id.
        case autoRenewable
        /// Entitles from its purchase for a fixed duration; purchases stack end to end.
        case nonRenewing(CalendarDuration)
        /// Entitles forever unless refunded or revoked.
        case nonConsumable
        /// Listed, never an entitlement.
        case consumable

        package var name: String {
            switch self {
            case .autoRenewable: "auto_renewable"
            case .nonRenewing: "non_renewing"
            case .nonConsumable: "non_consumable"
            case .consumable: "consumable"
            }
        }
    }

    /// Declared products; any other product is auto-renewable when it has an expiry, else non-consumable.
    package let products: [String: Kind]
    /// `products` by exact bytes: a product id matches only as spelled (``Identifier``).
    private let byID: [Identifier: Kind]

    package init(_ products: [String: Kind] = [:]) {
        self.products = products
        byID = Dictionary(products.map { (Identifier($0.key), $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    /// What the operator declared `productID` to be; nil when undeclared (an auto-renewable
    /// subscription by default, as Google Play's products are unless Config/products.json says otherwise).
    package func declared(_ productID: String) -> Kind? { byID[Identifier(productID)] }

    package func kind(of p: Purchase) -> Kind {
        if p.expiresDate != nil { return .autoRenewable }
        return byID[Identifier(p.productID)] ?? .nonConsumable
    }
}

/// Choices where Apple leaves the answer to the app.
package struct DerivationPolicy: Sendable, Equatable {
    /// Whether a subscription in billing retry (expired, Apple still trying to charge, no grace
    /// period) still entitles. Apple: not entitled; some apps grant a courtesy period (§1.8).
    package var billingRetryEntitles: Bool
    /// Whether purchases shared through Family Sharing entitle the family member.
    package var familySharedCounts: Bool

    package init(billingRetryEntitles: Bool = false, familySharedCounts: Bool = true) {
        self.billingRetryEntitles = billingRetryEntitles
        self.familySharedCounts = familySharedCounts
    }
}

/// An ISO 8601 duration of whole years, months, weeks or days (`P1Y`, `P3M`, `P2W`, `P30D`, `P1Y6M`),
/// added in the UTC calendar: one month from Jan 31 is Feb 28 (or 29).
package struct CalendarDuration: Sendable, Equatable, CustomStringConvertible {
    package var years: Int
    package var months: Int
    package var days: Int

    package init(years: Int = 0, months: Int = 0, days: Int = 0) {
        self.years = years
        self.months = months
        self.days = days
    }

    /// Parses `P[nY][nM][nW][nD]`; nil for anything else, time parts included, or a zero duration.
    package init?(iso8601 text: String) {
        var rest = Substring(text)
        guard rest.first == "P", rest.count > 1 else { return nil }
        rest = rest.dropFirst()
        var (y, m, d) = (0, 0, 0)
        var lastUnit = 0
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 6, let n = Int(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            guard let unit = rest.first else { return nil }
            rest = rest.dropFirst()
            let order = ["Y": 1, "M": 2, "W": 3, "D": 4][unit]
            guard let order, order > lastUnit else { return nil }
            lastUnit = order
            switch unit {
            case "Y": y = n
            case "M": m = n
            case "W": d += 7 * n
            default: d += n
            }
        }
        guard y + m + d > 0 else { return nil }
        self.init(years: y, months: m, days: d)
    }

    package var description: String {
        "P" + (years > 0 ? "\(years)Y" : "") + (months > 0 ? "\(months)M" : "") + (days > 0 ? "\(days)D" : "")
    }

    /// `ms` plus this duration: months and years move the calendar date (clamped to the month's
    /// last day), days are 24 hours; the time of day is kept. Saturates at ``CivilTime/latest``, so
    /// stacking any number of long passes never overflows.
    package func added(to ms: Int64) -> Int64 {
        guard ms < CivilTime.latest else { return CivilTime.latest }
        return min(CivilTime.latest, unclampedSum(max(ms, 0)))
    }

    private func unclampedSum(_ ms: Int64) -> Int64 {
        let (days, timeOfDay) = CivilTime.split(ms)
        var (year, month, day) = CivilTime.date(fromDays: days)
        let totalMonths = year * 12 + (month - 1) + Int64(years * 12 + months)
        year = totalMonths >= 0 ? totalMonths / 12 : (totalMonths - 11) / 12
        month = totalMonths - year * 12 + 1
        day = min(day, CivilTime.daysInMonth(year: year, month: month))
        return (CivilTime.days(year: year, month: month, day: day) + Int64(self.days)) * 86_400_000 + timeOfDay
    }
}
