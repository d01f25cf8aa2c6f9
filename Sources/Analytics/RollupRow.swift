import Entitlements
import Identifiers

/// Which of the dimensions kept apart a row is split by: none (the sums every chart reads),
/// the storefront or the product. Split rows are kept for every chart, in a table of their own
/// so that a chart nobody splits reads none.
package enum RollupSplit: String, Sendable, Hashable, CaseIterable {
    case none = ""
    case country, product

    /// The splits kept beside the sums.
    package static let kept: [RollupSplit] = [.country, .product]

    /// The split that answers a query grouped by `dimension`, if one does.
    package init?(_ dimension: ChartDimension?) {
        switch dimension {
        case .country?: self = .country
        case .product?: self = .product
        default: return nil
        }
    }

    /// Its value in a kept item's group, which names the storefront and product of the item's
    /// transaction, or of the customer's first (``ChartItem/keptGroup(country:product:)``).
    /// Cut at the separator's first byte, without walking the group's `Character`s: the keeper
    /// asks for every piece of a holder of several groups.
    func value(inKept group: String) -> String {
        guard self != .none else { return "" }
        guard let cut = group.utf8.firstIndex(of: 0x1F) else { return self == .country ? group : "" }
        let scalars = group.unicodeScalars
        return self == .country ? String(scalars[..<cut]) : String(scalars[scalars.index(after: cut)...])
    }
}

extension ChartItem {
    /// The group the rollups keep an item in: its storefront and product, for the splits.
    static func keptGroup(country: String, product: String) -> String { country + "\u{1F}" + product }
}

/// Items of one chart that have the same days, summed: what the rollups store per day.
package struct RollupRow: Sendable, Equatable {
    package struct Key: Sendable, Hashable, Comparable {
        package var environment: String
        package var chart: Chart
        /// Empty for a note's row.
        package var measure: String
        package var kind: ChartItem.Kind
        /// Its items had begun when the row was written: `atDay` is then never in doubt.
        package var settled: Bool
        package var bundleID: String
        package var store: String
        /// ``ItemNote`` as text (``RollupRow/noteText(_:)``), empty for none.
        package var note: String
        /// Days since 1970-01-01: floor days, ceiling days for a start-of-period stock's ends.
        package var atDay: Int64
        package var untilDay: Int64
        package var validFromDay: Int64
        package var validUntilDay: Int64
        /// ``RollupRow/noCohort`` when the item has none.
        package var cohortDay: Int64
        /// The dimension the row is split by, and its items' value of it (empty for none).
        package var split: RollupSplit
        package var group: String

        package init(
            environment: String, chart: Chart, measure: String, kind: ChartItem.Kind, settled: Bool = false,
            bundleID: String, store: String, note: String, atDay: Int64, untilDay: Int64, validFromDay: Int64,
            validUntilDay: Int64, cohortDay: Int64, split: RollupSplit = .none, group: String = ""
        ) {
            self.environment = environment
            self.chart = chart
            self.measure = measure
            self.kind = kind
            self.settled = settled
            self.bundleID = bundleID
            self.store = store
            self.note = note
            self.atDay = atDay
            self.untilDay = untilDay
            self.validFromDay = validFromDay
            self.validUntilDay = validUntilDay
            self.cohortDay = cohortDay
            self.split = split
            self.group = group
        }

        /// By the fields that tell one holder's rows apart (the environment, the app, the store,
        /// the note and a split's value rarely do); equality still compares every field.
        package func hash(into hasher: inout Hasher) {
            hasher.combine(split)
            hasher.combine(chart)
            hasher.combine(measure)
            hasher.combine(kind)
            hasher.combine(settled)
            hasher.combine(atDay)
            hasher.combine(untilDay)
            hasher.combine(validFromDay)
            hasher.combine(validUntilDay)
            hasher.combine(cohortDay)
        }

        /// Every field, the text ones as their bytes (as the database's key compares them): two
        /// spellings of an app or a group are two rows.
        package static func == (a: Key, b: Key) -> Bool {
            a.chart == b.chart && a.kind == b.kind && a.settled == b.settled && a.split == b.split && a.atDay == b.atDay
                && a.untilDay == b.untilDay && a.validFromDay == b.validFromDay && a.validUntilDay == b.validUntilDay
                && a.cohortDay == b.cohortDay && a.measure.isExactly(b.measure) && a.group.isExactly(b.group)
                && a.bundleID.isExactly(b.bundleID) && a.environment.isExactly(b.environment) && a.store.isExactly(b.store)
                && a.note.isExactly(b.note)
        }

        /// In byte order of the text fields, field by field.
        package static func < (a: Key, b: Key) -> Bool {
            func order(_ x: String, _ y: String) -> Bool? { x.isExactly(y) ? nil : Identifier(x) < Identifier(y) }
            if let o = order(a.environment, b.environment) { return o }
            if a.chart != b.chart { return a.chart.rawValue < b.chart.rawValue }
            if let o = order(a.measure, b.measure) { return o }
            if a.kind != b.kind { return a.kind.rawValue < b.kind.rawValue }
            if a.settled != b.settled { return !a.settled }
            if let o = order(a.bundleID, b.bundleID) { return o }
            if let o = order(a.store, b.store) { return o }
            if let o = order(a.note, b.note) { return o }
            if a.split != b.split { return a.split.rawValue < b.split.rawValue }
            if let o = order(a.group, b.group) { return o }
            return (a.atDay, a.untilDay, a.validFromDay, a.validUntilDay, a.cohortDay)
                < (b.atDay, b.untilDay, b.validFromDay, b.validUntilDay, b.cohortDay)
        }

        /// Whether one of its days is `day`: then whether it counts depends on the time of day.
        /// A start-of-period stock counts at day starts only, which its ceiling days decide exactly.
        func touches(_ day: Int64) -> Bool {
            if kind == .stockAtStart { return false }
            return atDay == day && !settled || (kind == .stock && untilDay == day) || validFromDay == day || validUntilDay == day
                || cohortDay == day
        }

        func admitted(by filters: ChartFilters) -> Bool {
            (filters.app.map { $0.isExactly(bundleID) } ?? true) && (filters.store.map { $0.rawValue == store } ?? true)
        }
    }

    package var key: Key
    /// The items' values summed (milliunits for money).
    package var value: Int64
    /// How many items were summed: a note is reported that many times; a row is gone at zero.
    package var items: Int64

    package init(key: Key, value: Int64, items: Int64) {
        self.key = key
        self.value = value
        self.items = items
    }

    package static let noCohort = Int64.min

    /// An item's rows: its measure's, and one per note (value 0, so that the note is counted
    /// exactly when the item is). What can only have happened by any later query, the rows
    /// written at `writtenAt` need not date: a window's start or a cohort's sale before that
    /// day is "long ago", and an item whose window ended before it has none; an item that had
    /// begun by then is `settled` (its start never depends on the hour). A cohort's paying span
    /// has a row per grain of cohort (day, week, month), so that a query by month sums a row per
    /// cohort month and day something changed, not per cohort day. Each row's key and value go
    /// to `body`.
    static func forEachKey(
        of item: ChartItem, chart: Chart, environment: String, writtenAt: Int64, _ body: (Key, Int64) -> Void
    ) {
        let written = Rollup.floorDay(writtenAt)
        let validUntilDay = Rollup.floorDay(item.validUntil)
        guard validUntilDay >= written else { return }
        let start = item.kind == .stockAtStart
        var atDay = start ? Rollup.ceilingDay(item.at) : Rollup.floorDay(item.at)
        if item.cohort != nil, item.kind == .flow, atDay < written { atDay = .min }
        let validFromDay = Rollup.floorDay(item.validFrom)
        func key(_ measure: String, _ note: String, cohortDay: Int64) -> Key {
            Key(
                environment: environment, chart: chart, measure: measure, kind: item.kind,
                settled: !start && item.at <= writtenAt, bundleID: item.bundleID, store: item.store.rawValue, note: note,
                atDay: atDay,
                untilDay: item.kind == .flow
                    ? atDay : start ? Rollup.ceilingDay(item.until) : Rollup.floorDay(item.until),
                validFromDay: validFromDay < written ? .min : validFromDay, validUntilDay: validUntilDay,
                cohortDay: cohortDay)
        }
        let cohortDay = item.cohort.map(Rollup.floorDay) ?? noCohort
        // An item of notes alone may name its window (`/7d`): its notes are that window's.
        let notesOnly = item.measure.hasPrefix("/")
        if !item.measure.isEmpty && !notesOnly {
            if item.cohort != nil, item.kind == .stock {
                for grain in Resolution.allCases {
                    let day = PeriodGrid.align(cohortDay, grain)
                    body(key(grain == .day ? item.measure : item.measure + "/" + grain.rawValue, "", cohortDay: day), item.value)
                }
            } else {
                body(key(item.measure, "", cohortDay: cohortDay), item.value)
            }
        }
        // Untaxed storefronts are reported by the revenue chart alone.
        for note in item.notes where chart == .revenue || !note.isUntaxed {
            body(key(notesOnly ? item.measure : "", noteText(note), cohortDay: cohortDay), 0)
        }
    }

    /// A measure kept per window of first-seen cohort (`revenue/30d`, or `/30d` for its notes):
    /// the measure and its window; nil for every other measure.
    static func windowed(_ measure: String) -> (String, ChartWindow)? {
        guard let (name, suffix) = slashed(measure), let window = ChartWindow(rawValue: suffix) else { return nil }
        return (name, window)
    }

    /// A measure kept per grain of cohort (`paying/month`): the measure and its grain; nil for
    /// the day's own (`paying`) and every other measure.
    static func grained(_ measure: String) -> (String, Resolution)? {
        guard let (name, suffix) = slashed(measure), let grain = Resolution(rawValue: suffix) else {
            return measure == "paying" ? ("paying", .day) : nil
        }
        return (name, grain)
    }

    /// A measure's name and what follows its slash; nil without one. Found in its bytes: a
    /// query reads a row for each, and finding a `Character` cost a tenth of a cohort chart.
    private static func slashed(_ measure: String) -> (String, String)? {
        let utf8 = measure.utf8
        guard let slash = utf8.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        return (String(measure[..<slash]), String(measure[utf8.index(after: slash)...]))
    }

    /// The row as an item whose instants are its days' starts, in its split's group: counted
    /// exactly as its items are on any day but those it touches.
    var item: ChartItem {
        ChartItem(
            measure: key.measure, kind: key.kind, at: Rollup.start(key.atDay), until: Rollup.start(key.untilDay),
            validFrom: Rollup.start(key.validFromDay), validUntil: Rollup.start(key.validUntilDay),
            cohort: key.cohortDay == Self.noCohort ? nil : Rollup.start(key.cohortDay), value: value,
            isMoney: Book.moneyMeasures.contains(key.measure), appUserID: "", originalTransactionID: "", transactionID: "",
            notes: key.note.isEmpty ? [] : Self.note(key.note).map { [$0] } ?? [], bundleID: key.bundleID,
            store: Store.named(key.store) ?? .appStore, count: items, group: key.group)
    }

    /// A note as stable text: `rate␟USD␟20454␟EUR␟USD` (the currency without a rate, the day,
    /// and the conversion: from EUR to USD), `price␟monthly␟USA` (`price␟monthly` without a
    /// storefront), `untaxed␟FRA`.
    package static func noteText(_ note: ItemNote) -> String {
        switch note {
        case .missingRate(let currency, let day, let from, let to): "rate\u{1F}\(currency)\u{1F}\(day)\u{1F}\(from)\u{1F}\(to)"
        case .missingPrice(let product, let storefront): "price\u{1F}\(product)" + (storefront.map { "\u{1F}" + $0 } ?? "")
        case .untaxed(let storefront): "untaxed\u{1F}\(storefront)"
        }
    }

    package static func note(_ text: String) -> ItemNote? {
        let parts = text.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
        switch (parts.first, parts.count) {
        case ("rate", 5): return Int64(parts[2]).map { .missingRate(currency: parts[1], day: $0, from: parts[3], to: parts[4]) }
        case ("price", 2): return .missingPrice(productID: parts[1], storefront: nil)
        case ("price", 3): return .missingPrice(productID: parts[1], storefront: parts[2])
        case ("untaxed", 2): return .untaxed(storefront: parts[1])
        default: return nil
        }
    }
}

/// An item kept exactly, for the days it has an instant on: what today's figures are summed from.
package struct RollupMoment: Sendable, Equatable {
    package var environment: String
    package var chart: Chart
    package var item: ChartItem
    /// The days (since 1970-01-01) of its instants, from the day it was written on.
    package var days: [Int64]

    package init(environment: String, chart: Chart, item: ChartItem, days: [Int64]) {
        self.environment = environment
        self.chart = chart
        self.item = item
        self.days = days
    }

    /// The days of an item's instants that are `today` or later, ascending, each once, but its
    /// start's when it had begun at `writtenAt` (its rows are settled). A start-of-period stock
    /// has none that matter (``RollupRow/Key/touches(_:)``).
    static func days(of item: ChartItem, onOrAfter today: Int64, writtenAt: Int64) -> [Int64] {
        guard item.kind != .stockAtStart else { return [] }
        // Most items have none ahead: no array is made for them (a set, a map and a filter were
        // five allocations an item, on every save's rollup).
        var days: [Int64] = []
        func add(_ instant: Int64) {
            let day = Rollup.floorDay(instant)
            if day >= today, day != .max, !days.contains(day) { days.append(day) }
        }
        add(item.validFrom)
        add(item.validUntil)
        if item.at > writtenAt { add(item.at) }
        if item.kind == .stock { add(item.until) }
        if let cohort = item.cohort { add(cohort) }
        days.sort()
        return days
    }
}

extension ChartItem {
    func admitted(by filters: ChartFilters) -> Bool {
        (filters.app.map { $0.isExactly(bundleID) } ?? true) && (filters.store.map { $0 == store } ?? true)
    }
}

extension ItemNote {
    var isUntaxed: Bool { if case .untaxed = self { true } else { false } }
}
