import Entitlements

/// The charts, by RevenueCat's published definitions (Docs/analytics.md says where we differ).
package enum Chart: String, Sendable, CaseIterable {
    case revenue, mrr, actives, trials
    case trialConversion = "trial_conversion"
    case churn
    case refundRate = "refund_rate"
    case cohorts
    case mrrMovement = "mrr_movement"
    case activesMovement = "actives_movement"
    case trialsMovement = "trials_movement"
    case newCustomers = "new_customers"
    case initialConversion = "initial_conversion"
    case conversionToPaying = "conversion_to_paying"
    case newPaidSubscriptions = "new_paid_subscriptions"
    case nonSubscriptionPurchases = "non_subscription_purchases"
    case ltvPerCustomer = "ltv_per_customer"
    case ltvPerPayingCustomer = "ltv_per_paying_customer"
    case subscriptionRetention = "subscription_retention"
    case subscriptionStatus = "subscription_status"
    case refundRequests = "refund_requests"

    /// Its definition, whole in one file each (Charts/).
    var definition: ChartDefinition {
        switch self {
        case .revenue: .revenue
        case .mrr: .mrr
        case .actives: .actives
        case .trials: .trials
        case .trialConversion: .trialConversion
        case .churn: .churn
        case .refundRate: .refundRate
        case .cohorts: .cohorts
        case .mrrMovement: .mrrMovement
        case .activesMovement: .activesMovement
        case .trialsMovement: .trialsMovement
        case .newCustomers: .newCustomers
        case .initialConversion: .initialConversion
        case .conversionToPaying: .conversionToPaying
        case .newPaidSubscriptions: .newPaidSubscriptions
        case .nonSubscriptionPurchases: .nonSubscriptionPurchases
        case .ltvPerCustomer: .ltvPerCustomer
        case .ltvPerPayingCustomer: .ltvPerPayingCustomer
        case .subscriptionRetention: .subscriptionRetention
        case .subscriptionStatus: .subscriptionStatus
        case .refundRequests: .refundRequests
        }
    }

    /// Its measures in column order (cohorts add `paying_N` and `retention_N` per period on).
    package var measures: [String] { definition.measures }

    /// A measure of this chart computed from others, and those others: a drill-down lists the parts.
    package func parts(of measure: String) -> [String]? { definition.parts(measure) }

    /// Whether it is a cohort table: per cohort, `paying_N` and `retention_N` for each period on.
    package var hasCohortTable: Bool { definition.cohortBase != nil }

    /// Whether its periods are cohorts (of customers first seen, or first paying, or subscriptions
    /// first paid in them) rather than the time things happen in.
    package var isCohorted: Bool { definition.cohortBase != nil || definition.window != nil || definition.byFirstSeen }

    /// Whether a figure of `measure` is a stock read at each period's last instant (`.stock`) or
    /// first (`.stockAtStart`); nil for a flow or a cohort's figure.
    package func stockKind(of measure: String) -> ChartItem.Kind? {
        definition.stocks.contains(measure) ? .stock : definition.startStocks.contains(measure) ? .stockAtStart : nil
    }

    /// The lifetime or conversion window its cohorts are given when a query names none; nil for a
    /// chart that has none.
    package var defaultWindow: ChartWindow? { definition.window }
}

/// What a chart's figures can be split by (`group_by=`): each figure per value of one dimension
/// of the transaction behind it (or, for the charts of customers, of the customer's first
/// purchase), every figure summed per group exactly as for the whole.
package enum ChartDimension: String, Sendable, CaseIterable {
    /// The storefront: Apple's alpha-3 country or region, Google Play's alpha-2.
    case country
    case store, product, app, environment
    /// Why the customer asked for a refund, as Apple states it (`refund_requests` only).
    case reason
}

extension ChartDimension {
    /// The group of what has no value of a dimension: a sale with no storefront, a customer who
    /// bought nothing, a refund request stored before its reason was kept.
    package static let unknown = "unknown"
}

extension Chart {
    /// Whether its figures can be split by `dimension`: every chart's by the transaction's (or
    /// the customer's) dimensions, and by its own (``ChartDefinition/ownDimensions``).
    package func splits(by dimension: ChartDimension) -> Bool {
        dimension != .reason || definition.ownDimensions.contains(dimension)
    }
}

/// How long after a customer was first seen what they do counts for their cohort, in whole UTC
/// days after the day they were first seen (RevenueCat's "day 0 through day 7" for 7 days), or
/// without end.
package enum ChartWindow: String, Sendable, CaseIterable {
    case days7 = "7d"
    case days30 = "30d"
    case days90 = "90d"
    case days365 = "365d"
    case unbounded

    package var days: Int64? {
        switch self {
        case .days7: 7
        case .days30: 30
        case .days90: 90
        case .days365: 365
        case .unbounded: nil
        }
    }

    /// Whether what falls within `other` falls within this window too: the windows are nested,
    /// each holding the shorter ones.
    package func includes(_ other: ChartWindow) -> Bool {
        guard let days else { return true }
        return other.days.map { $0 <= days } ?? false
    }

    /// The shortest window holding something at `at` of someone first seen at `firstSeen`
    /// (``unbounded`` at the latest).
    static func shortest(admitting at: Int64, firstSeen: Int64) -> ChartWindow {
        allCases.first { $0.admits(at, firstSeen: firstSeen) } ?? .unbounded
    }

    /// The suffix of a measure's name kept for the window (`/7d`).
    var suffix: String { "/" + rawValue }

    /// Whether something at `at` falls within the window of someone first seen at `firstSeen`.
    func admits(_ at: Int64, firstSeen: Int64) -> Bool {
        guard let days else { return true }
        return CivilTime.split(at).0 - CivilTime.split(firstSeen).0 <= days
    }

    /// The instant a cohort's window closes for someone first seen at `firstSeen` (nil: never).
    func end(firstSeen: Int64) -> Int64? {
        days.map { (CivilTime.split(firstSeen).0 + $0 + 1) * 86_400_000 }
    }
}

/// One chart's definition in one place: its measures (in column order, and which are money),
/// the parts of each measure computed from others, whether it follows subscriptions through
/// time, how a ledger becomes its items (``ItemRecorder``) and how its periods are closed once
/// every item is in (``Book``).
struct ChartDefinition: Sendable {
    var measures: [String]
    var money: Set<String> = []
    var parts: @Sendable (String) -> [String]? = { _ in nil }
    /// Measures read at each period's last instant, and at its first.
    var stocks: Set<String> = []
    var startStocks: Set<String> = []
    /// A cohort table's base (its `paying_N` and `retention_N` are of it): `customers`, say.
    var cohortBase: String? = nil
    /// A chart of customers by when they were first seen, within a window of that: its default.
    var window: ChartWindow? = nil
    /// Whether its items need each person's first seen (``Newcomer``).
    var followsCustomers = false
    /// Whether its periods are the cohorts of customers first seen in them (its items of
    /// subscriptions each in their holder's cohort).
    var byFirstSeen = false
    /// Dimensions of its own items that it can be split by besides the transaction's (a refund
    /// request's reason).
    var ownDimensions: Set<ChartDimension> = []
    /// Whether its items need each subscription's line through time (``SubscriptionLine``).
    var followsSubscriptions: Bool
    var record: @Sendable (inout ItemRecorder) -> Void
    var close: @Sendable (inout Book) -> Void
}

/// One figure: a count, an amount in the answer's currency (milliunits), or a ratio of two counts.
package enum Measure: Sendable, Equatable {
    case count(Int64)
    case money(Int64)
    case ratio(Int64, Int64)

    /// Zero, of either kind, or a ratio of nothing to nothing.
    package var isZero: Bool {
        switch self {
        case .count(let n), .money(let n): n == 0
        case .ratio(let n, let d): n == 0 && d == 0
        }
    }

    static func + (a: Measure, b: Measure) -> Measure {
        switch (a, b) {
        case (.count(let x), .count(let y)): .count(x + y)
        case (.money(let x), .money(let y)): .money(x + y)
        default: preconditionFailure("measures of one kind")
        }
    }
}

package struct ChartQuery: Sendable {
    package var chart: Chart
    package var from: Int64
    package var to: Int64
    package var resolution: Resolution
    package var zone: ZoneOffset
    /// The answer's currency; the settings' reporting currency when nil.
    package var currency: String?
    package var filters: ChartFilters
    /// The clock's now: nothing later is counted as having happened.
    package var now: Int64
    /// A first-seen cohort's window (the chart's default when nil; ignored by other charts).
    package var window: ChartWindow?
    /// Split every figure by this dimension (the answer's ``ChartAnswer/groups``).
    package var groupBy: ChartDimension?
    /// One group's figures alone (a drill-down's into one group): its value of ``groupBy``.
    package var group: String?

    /// The window its chart's cohorts are given: the query's, or the chart's default; nil for a
    /// chart without one.
    package var cohortWindow: ChartWindow? { chart.defaultWindow.map { window ?? $0 } }

    package init(
        chart: Chart, from: Int64, to: Int64, resolution: Resolution = .day, zone: ZoneOffset = .utc, currency: String? = nil,
        filters: ChartFilters = ChartFilters(), now: Int64, window: ChartWindow? = nil, groupBy: ChartDimension? = nil,
        group: String? = nil
    ) {
        self.window = window
        self.groupBy = groupBy
        self.group = group
        self.chart = chart
        self.from = from
        self.to = to
        self.resolution = resolution
        self.zone = zone
        self.currency = currency
        self.filters = filters
        self.now = now
    }
}

/// What one subscriber's transaction or subscription adds to one figure.
package struct Contribution: Sendable, Equatable {
    package var period: String
    package var measure: String
    package var appUserID: String
    package var originalTransactionID: String
    package var transactionID: String?
    package var value: Measure
    /// Why it counts, e.g. `prorated_refund`, `monthly from P1Y: 1/12`, `trial converted`.
    package var detail: String?
}

/// A currency with no rate on a day a figure needed one: left out of the money, never guessed.
/// `from` and `to` name the conversion that needed it (a EUR sale in a USD chart needs the
/// ECB's USD rate: `currency` USD, from EUR to USD).
package struct MissingRate: Sendable, Equatable {
    package var currency: String
    package var day: String
    package var from: String
    package var to: String
    package var transactions: Int

    /// What a missing rate is told apart by, in the order an answer lists them.
    struct Gap: Hashable, Comparable {
        var currency: String
        var day: String
        var from: String
        var to: String

        static func < (a: Gap, b: Gap) -> Bool { (a.currency, a.day, a.from, a.to) < (b.currency, b.day, b.from, b.to) }
    }
}

/// Sales no store, client or price table priced: counted, but in no amount.
package struct MissingPrice: Sendable, Equatable {
    package var productID: String
    package var storefront: String?
    package var transactions: Int
}

package struct ChartAnswer: Sendable {
    package var chart: Chart
    package var currency: String
    package var resolution: Resolution
    package var zone: String
    package var periods: [Period]
    /// Column order.
    package var measures: [String]
    /// Per period and measure; a measure absent from a period has no value yet (the period is in
    /// the future).
    package var figures: Figures
    /// Only for the measure and period asked to drill into.
    package var contributions: [Contribution]
    package var missingRates: [MissingRate]
    package var missingPrices: [MissingPrice]
    /// Storefronts of sales with no tax rate: their tax is unknown and their proceeds before tax.
    package var untaxedStorefronts: [String]
    /// Summed from the rollups (``Rollup``) rather than from every transaction.
    package var fromRollups = false
    /// From rollups: how many changes to subscribers they did not include yet (their keeper is
    /// that far behind the change log).
    package var pendingChanges: Int64 = 0
    /// A first-seen cohort's window (nil for the other charts).
    package var window: ChartWindow?
    /// Per period, how many of the transactions (or subscriptions' spans) counted in it its
    /// amounts left out for want of a rate or a price: a figure's own mark that it is short (a
    /// chart can count 2 subscriptions while its MRR sums one).
    package var leftOut: [Int64] = []
    /// The dimension the figures are split by, and each group's figures (by value, in byte
    /// order); ``figures`` are then the whole's.
    package var groupBy: ChartDimension?
    package var groups: [ChartGroup] = []
    /// Development's simulated rates (``AnalyticsSettings/simulatedRates``), which its money
    /// may have been converted at: said in the answer, so that nobody takes it for a real figure.
    package var simulatedRates: [String: Int64] = [:]
    /// How many of its periods had begun at the query's instant. A cohort table's period `i` has
    /// `paying_N` and `retention_N` for N < begun − i: the later ones have not happened yet.
    package var begun = 0

    /// Per measure, in column order: N of a cohort table's `paying_N` or `retention_N`, nil for
    /// its other measures and for every measure of the other charts.
    package var ages: [Int?] {
        guard chart.hasCohortTable else { return measures.map { _ in nil } }
        return measures.map { m in
            let prefix = m.hasPrefix("paying_") ? 7 : m.hasPrefix("retention_") ? 10 : 0
            return prefix == 0 ? nil : Int(m.dropFirst(prefix))
        }
    }

    /// Each period's figures by name: ``figures`` row by row, all of them made at each use (to
    /// read, not for speed).
    package var values: [[String: Measure]] { (0..<figures.periods).map(figures.row) }
}

/// One group of a split chart: a value of its dimension (`unknown` where the transaction or
/// customer has none: a sale with no storefront, someone who bought nothing) and its figures.
package struct ChartGroup: Sendable {
    package var value: String
    package var measures: [String]
    package var figures: Figures
    package var leftOut: [Int64]
}

/// Drill-down: the figure and its contributions.
package struct Drill: Sendable {
    package var period: Period
    package var measure: String
    package var value: Measure?
    package var contributions: [Contribution]
}

package enum ChartError: Error, Equatable {
    case tooManyPeriods
    case unknownPeriod(String)
    case unknownMeasure(String)
    /// A ratio or quotient: drill into these instead.
    case derivedMeasure(String, parts: [String])
}
