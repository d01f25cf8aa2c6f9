import Entitlements

/// The charts, by RevenueCat's published definitions (Docs/analytics.md says where we differ).
public enum Chart: String, Sendable, CaseIterable {
    case revenue, mrr, actives, trials
    case trialConversion = "trial_conversion"
    case churn
    case refundRate = "refund_rate"
    case cohorts

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
        }
    }

    /// Its measures in column order (cohorts add `paying_N` and `retention_N` per period on).
    public var measures: [String] { definition.measures }

    /// A measure computed from others (in whichever chart defines it), and those others: a
    /// drill-down lists the parts.
    public static func parts(of measure: String) -> [String]? {
        allCases.lazy.compactMap { $0.definition.parts(measure) }.first
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
    /// Whether its items need each subscription's line through time (``SubscriptionLine``).
    var followsSubscriptions: Bool
    var record: @Sendable (inout ItemRecorder) -> Void
    var close: @Sendable (inout Book) -> Void
}

/// One figure: a count, an amount in the answer's currency (milliunits), or a ratio of two counts.
public enum Measure: Sendable, Equatable {
    case count(Int64)
    case money(Int64)
    case ratio(Int64, Int64)

    static func + (a: Measure, b: Measure) -> Measure {
        switch (a, b) {
        case (.count(let x), .count(let y)): .count(x + y)
        case (.money(let x), .money(let y)): .money(x + y)
        default: preconditionFailure("measures of one kind")
        }
    }
}

public struct ChartQuery: Sendable {
    public var chart: Chart
    public var from: Int64
    public var to: Int64
    public var resolution: Resolution
    public var zone: ZoneOffset
    /// The answer's currency; the settings' reporting currency when nil.
    public var currency: String?
    public var filters: ChartFilters
    /// The clock's now: nothing later is counted as having happened.
    public var now: Int64

    public init(
        chart: Chart, from: Int64, to: Int64, resolution: Resolution = .day, zone: ZoneOffset = .utc, currency: String? = nil,
        filters: ChartFilters = ChartFilters(), now: Int64
    ) {
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
public struct Contribution: Sendable, Equatable {
    public var period: String
    public var measure: String
    public var appUserID: String
    public var originalTransactionID: String
    public var transactionID: String?
    public var value: Measure
    /// Why it counts, e.g. `prorated_refund`, `monthly from P1Y: 1/12`, `trial converted`.
    public var detail: String?
}

/// A currency with no rate on a day a figure needed one: left out of the money, never guessed.
public struct MissingRate: Sendable, Equatable {
    public var currency: String
    public var day: String
    public var transactions: Int
}

/// Sales no store, client or price table priced: counted, but in no amount.
public struct MissingPrice: Sendable, Equatable {
    public var productID: String
    public var storefront: String?
    public var transactions: Int
}

public struct ChartAnswer: Sendable {
    public var chart: Chart
    public var currency: String
    public var resolution: Resolution
    public var zone: String
    public var periods: [Period]
    /// Column order.
    public var measures: [String]
    /// Per period and measure; a measure absent from a period has no value yet (the period is in
    /// the future).
    public var figures: Figures
    /// Only for the measure and period asked to drill into.
    public var contributions: [Contribution]
    public var missingRates: [MissingRate]
    public var missingPrices: [MissingPrice]
    /// Storefronts of sales with no tax rate: their tax is unknown and their proceeds before tax.
    public var untaxedStorefronts: [String]
    /// Summed from the rollups (``Rollup``) rather than from every transaction.
    public var fromRollups = false
    /// From rollups: how many changes to subscribers they did not include yet (their keeper is
    /// that far behind the change log).
    public var pendingChanges: Int64 = 0

    /// Each period's figures by name: ``figures`` row by row, all of them made at each use (to
    /// read, not for speed).
    public var values: [[String: Measure]] { (0..<figures.periods).map(figures.row) }
}

/// Drill-down: the figure and its contributions.
public struct Drill: Sendable {
    public var period: Period
    public var measure: String
    public var value: Measure?
    public var contributions: [Contribution]
}

public enum ChartError: Error, Equatable {
    case tooManyPeriods
    case unknownPeriod(String)
    case unknownMeasure(String)
    /// A ratio or quotient: drill into these instead.
    case derivedMeasure(String, parts: [String])
}
