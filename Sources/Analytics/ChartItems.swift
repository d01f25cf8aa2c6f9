package import Entitlements
import Identifiers

/// What a ledger adds to a chart, item by item, before any period grid or clock: a sale's
/// amounts at its instant (a flow), a transaction paying or a trial running from one instant to
/// another (a stock), an outcome that holds while the clock is within a window (a trial pending
/// until it ends). ``ChartEngine`` sums them into a query's periods; the rollups keep each
/// subscriber's items and sum them per day (Docs/analytics.md).
package struct ChartItem: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        /// Counted in the period holding `at`, once `at` has happened.
        case flow
        /// Counted at each period's last instant that has happened, when within [`at`, `until`).
        case stock
        /// Counted at each begun period's first instant, when within [`at`, `until`).
        case stockAtStart = "stock_at_start"
    }

    package var measure: String
    package var kind: Kind
    package var at: Int64
    /// A stock's end (exclusive); a flow's is `at`.
    package var until: Int64
    /// Counted only while the clock's now is in [`validFrom`, `validUntil`).
    package var validFrom: Int64 = .min
    package var validUntil: Int64 = .max
    /// Cohorts: the instant of the customer's first paid period, whose period is their cohort.
    package var cohort: Int64?
    package var value: Int64
    package var isMoney: Bool
    package var appUserID: String
    package var originalTransactionID: String
    package var transactionID: String
    package var detail: String?
    /// What the figure must report when this item counts: a missing rate or price, an untaxed
    /// storefront. An item with notes only (`measure` empty) adds nothing but them.
    package var notes: [ItemNote] = []
    /// For the filters rollups answer: the app and the store.
    package var bundleID: String
    package var store: Store
    /// How many items this one stands for (a rollup's row sums many): its notes count that often.
    package var count: Int64 = 1
    /// Its value of the query's ``ChartQuery/groupBy`` (empty when not split); for the rollups,
    /// its storefront and product (``keptGroup(country:product:)``).
    package var group = ""

    package init(
        measure: String, kind: Kind, at: Int64, until: Int64, validFrom: Int64 = .min, validUntil: Int64 = .max,
        cohort: Int64? = nil, value: Int64, isMoney: Bool, appUserID: String, originalTransactionID: String,
        transactionID: String, detail: String? = nil, notes: [ItemNote] = [], bundleID: String, store: Store, count: Int64 = 1,
        group: String = ""
    ) {
        self.group = group
        self.measure = measure
        self.kind = kind
        self.at = at
        self.until = until
        self.validFrom = validFrom
        self.validUntil = validUntil
        self.cohort = cohort
        self.value = value
        self.isMoney = isMoney
        self.appUserID = appUserID
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.detail = detail
        self.notes = notes
        self.bundleID = bundleID
        self.store = store
        self.count = count
    }

    package func isValid(at now: Int64) -> Bool { validFrom <= now && now < validUntil }

    /// Whether a measure's values are amounts (milliunits) rather than counts.
    package static func isMoney(_ measure: String) -> Bool { Book.moneyMeasures.contains(measure) }
}

package enum ItemNote: Sendable, Hashable {
    /// A currency without a rate on a day (days since 1970-01-01), which a conversion from a
    /// sale's currency to the chart's needed.
    case missingRate(currency: String, day: Int64, from: String, to: String)
    case missingPrice(productID: String, storefront: String?)
    case untaxed(storefront: String)

    /// Whether the item's amount was left out (rather than counted before tax).
    var leavesOut: Bool {
        switch self {
        case .missingRate, .missingPrice: true
        case .untaxed: false
        }
    }
}

/// Records a ledger's items for one chart, in one currency, with the filters applied to the
/// transactions (as the engine admits them).
struct ItemRecorder {
    let currency: String
    let rates: ExchangeRates
    let settings: AnalyticsSettings
    /// The ledger as given (what a customer's first being seen is read from).
    let ledger: Ledger
    /// The entries the filters admit, oldest first.
    let admitted: [Ledger.Entry]
    /// The subscriptions, for the charts that follow them (the others never build them).
    let lines: [SubscriptionLine]
    let commission: Commission
    /// Each line's paying pieces (by index), worked out once for the charts that follow them.
    let paying: [[SubscriptionLine.Piece]]
    /// Whether items say why they count and whose they are (drill-downs): without, as the rollups
    /// keep them, only figures, no detail nor person nor transaction (three ids an item, copied
    /// with it through the rollups' summing, and read by nothing there).
    let withDetails: Bool
    /// The window of a first-seen cohort: nil records every window's items, each measure named
    /// with its window (`converted_customers/7d`), as the rollups keep them.
    let window: ChartWindow?
    /// The people the filters admit, for the charts of customers (the others never build them).
    let newcomers: [Newcomer]
    /// The dimension items are grouped by, if any.
    let groupBy: ChartDimension?
    /// Items are in the group the rollups keep them in (``ChartItem/keptGroup(country:product:)``),
    /// so that the rows split by storefront and product come from one recording; nil otherwise.
    var keptGroups: KeptGroups?
    /// While a person's items are recorded, the group all of them go to (theirs, not their
    /// transactions'): a customer is in one group.
    var personGroup: String?
    var items: [ChartItem] = []

    init(
        ledger: Ledger, charts: [Chart], filters: ChartFilters, currency: String, rates: ExchangeRates,
        settings: AnalyticsSettings, withDetails: Bool = true, window: ChartWindow? = nil, groupBy: ChartDimension? = nil
    ) {
        self.groupBy = groupBy
        self.ledger = ledger
        self.currency = currency
        self.rates = rates
        self.settings = settings
        self.withDetails = withDetails
        self.window = window
        // Sorted by index: an entry is a large value, cheaper to compare in place than to move.
        let kept = ledger.entries.filter { filters.admits($0) }
        admitted = kept.indices.sorted { Purchase.chronological(kept[$0].purchase, kept[$1].purchase) }.map { kept[$0] }
        let followed = charts.contains { $0.definition.followsSubscriptions }
        lines = followed ? SubscriptionLine.lines(ledger, filters: filters) : []
        paying = lines.map(\.payingPieces)
        newcomers =
            charts.contains { $0.definition.followsCustomers }
            ? Newcomer.newcomers(ledger, admitted: admitted, filters: filters) : []
        // Years of service count every purchase of the environment, whatever the other filters.
        commission = Commission(
            ledger.entries.filter { $0.purchase.environment.rawValue == filters.environment },
            smallBusinessApps: settings.smallBusinessApps)
    }

    static func record(
        _ ledger: Ledger, chart: Chart, filters: ChartFilters, currency: String, rates: ExchangeRates,
        settings: AnalyticsSettings, window: ChartWindow? = nil, groupBy: ChartDimension? = nil
    ) -> [ChartItem] {
        // By environment: each environment's chart, its items in its group.
        guard groupBy != .environment else {
            return ledger.environments.sorted().flatMap { environment in
                var one = filters
                one.environment = environment
                return record(
                    ledger, chart: chart, filters: one, currency: currency, rates: rates, settings: settings, window: window
                ).map { item in
                    var item = item
                    item.group = environment
                    return item
                }
            }
        }
        var recorder = ItemRecorder(
            ledger: ledger, charts: [chart], filters: filters, currency: currency, rates: rates, settings: settings,
            window: window ?? chart.defaultWindow, groupBy: groupBy)
        recorder.record(chart)
        return recorder.items
    }

    /// Every chart's items of one ledger, without details: what the rollups keep of a holder. The
    /// ledger is read once for all of them.
    static func recordAll(
        _ ledger: Ledger, filters: ChartFilters, currency: String, rates: ExchangeRates, settings: AnalyticsSettings
    ) -> [(Chart, [ChartItem])] {
        var recorder = ItemRecorder(
            ledger: ledger, charts: Chart.allCases, filters: filters, currency: currency, rates: rates, settings: settings,
            withDetails: false)
        recorder.keptGroups = KeptGroups()
        return Chart.allCases.map { chart in
            recorder.items = []
            recorder.record(chart)
            return (chart, recorder.items)
        }
    }

    mutating func record(_ chart: Chart) { chart.definition.record(&self) }

    // MARK: Items

    mutating func flow(
        _ measure: String, at: Int64, _ value: Int64, _ e: Ledger.Entry, money: Bool = false,
        detail: @autoclosure () -> String? = nil,
        cohort: Int64? = nil, valid: (Int64, Int64) = (.min, .max), notes: [ItemNote] = []
    ) {
        items.append(item(measure, .flow, at, at, value, e, money, withDetails ? detail() : nil, cohort, valid, notes))
    }

    mutating func stock(
        _ measure: String, _ kind: ChartItem.Kind = .stock, from: Int64, to: Int64, _ value: Int64, _ e: Ledger.Entry,
        money: Bool = false, detail: @autoclosure () -> String? = nil, cohort: Int64? = nil, notes: [ItemNote] = []
    ) {
        items.append(item(measure, kind, from, to, value, e, money, withDetails ? detail() : nil, cohort, (.min, .max), notes))
    }

    /// A flow of a person rather than of one of their transactions (their first being seen).
    mutating func flow(
        _ measure: String, of person: Newcomer, at: Int64, detail: @autoclosure () -> String? = nil, cohort: Int64? = nil
    ) {
        items.append(
            ChartItem(
                measure: measure, kind: .flow, at: at, until: at, cohort: cohort, value: 1, isMoney: false,
                appUserID: withDetails ? person.appUserID : "", originalTransactionID: "", transactionID: "",
                detail: withDetails ? detail() : nil, bundleID: person.bundleID, store: person.store,
                group: group(ofPerson: person.value(of:)) ?? ""))
    }

    /// The group of an item of `e`: the person's being recorded, else the transaction's own.
    func group(of e: Ledger.Entry) -> String {
        if let personGroup { return personGroup }
        if let keptGroups { return keptGroups.group(country: e.value(of: .country), product: e.value(of: .product)) }
        guard let groupBy else { return "" }
        return e.value(of: groupBy)
    }

    /// The group every item of a person goes to, from what decides it (their first purchase, or
    /// first paid period): its value of the query's dimension, or the group the rollups keep; nil
    /// when nothing is split.
    func group(ofPerson value: (ChartDimension) -> String) -> String? {
        if let keptGroups { return keptGroups.group(country: value(.country), product: value(.product)) }
        return groupBy.map(value)
    }

    /// The suffix of the measure of a first-seen cohort's item at `at`, nil when it is outside
    /// the query's window: none for the query's; or, as the rollups keep them (``window`` nil),
    /// the shortest window holding it (`/7d`), the item counting in every window from that one
    /// on (``ChartWindow/includes(_:)``). The windows are nested and a person's items are
    /// recorded oldest first, so that those within a window are the first of all of them and
    /// each stands in it as it stands among all (``Newcomer/standing(_:)``).
    func windowSuffix(of at: Int64, firstSeen: Int64) -> String? {
        guard let window else { return ChartWindow.shortest(admitting: at, firstSeen: firstSeen).suffix }
        return window.admits(at, firstSeen: firstSeen) ? "" : nil
    }

    private func item(
        _ measure: String, _ kind: ChartItem.Kind, _ at: Int64, _ until: Int64, _ value: Int64, _ e: Ledger.Entry,
        _ money: Bool, _ detail: String?, _ cohort: Int64?, _ valid: (Int64, Int64), _ notes: [ItemNote]
    ) -> ChartItem {
        ChartItem(
            measure: measure, kind: kind, at: at, until: until, validFrom: valid.0, validUntil: valid.1, cohort: cohort,
            value: value, isMoney: money, appUserID: withDetails ? e.appUserID : "",
            originalTransactionID: withDetails ? e.purchase.originalTransactionID : "",
            transactionID: withDetails ? e.purchase.transactionID : "", detail: detail, notes: notes, bundleID: e.bundleID,
            store: e.purchase.store, group: group(of: e))
    }

    /// The priced sale of an entry, or the note saying why there is none (nil, [] for what is
    /// never sold: a free trial, a family member's copy).
    func charge(_ e: Ledger.Entry) -> (Charge?, [ItemNote]) {
        let p = e.purchase
        guard !p.isFamilyShared, !p.isFreeTrial else { return (nil, []) }
        guard let price = settings.price(of: p) else {
            return (nil, [.missingPrice(productID: p.productID, storefront: p.commerce.storefront)])
        }
        guard price.milliunits > 0 else { return (nil, []) }
        let tax = p.commerce.storefront.flatMap { settings.taxRates[$0] }
        let notes: [ItemNote] = tax == nil ? [.untaxed(storefront: p.commerce.storefront ?? "unknown")] : []
        return (Charge(entry: e, price: price, commissionPercent: commission.percent(e), taxPPM: tax), notes)
    }

    /// An amount of a charge's currency in the chart's, at the charge's day, or the missing rates.
    func convert(_ amount: Int64, _ c: Charge, times numerator: Int64 = 1, over denominator: Int64 = 1) -> (Int64?, [ItemNote]) {
        if let converted = rates.convert(
            amount, times: numerator, over: denominator, from: c.price.currency, to: currency, day: c.day)
        {
            return (converted, [])
        }
        let missing = [c.price.currency, currency].filter { $0 != "EUR" && rates.perEuro($0, day: c.day) == nil }
        return (nil, missing.map { .missingRate(currency: $0, day: c.day, from: c.price.currency, to: currency) })
    }
}

/// The groups the rollups keep a holder's items in, each made once per storefront and product
/// in a row (most of a holder's items share one): one string, whose copies then compare as two
/// words wherever the rows are summed and packed.
final class KeptGroups {
    private var last: (country: String, product: String, group: String)?

    func group(country: String, product: String) -> String {
        if let last, last.country.isExactly(country), last.product.isExactly(product) { return last.group }
        let group = ChartItem.keptGroup(country: country, product: product)
        last = (country, product, group)
        return group
    }
}
