import DatabaseEngine
import Entitlements
import Foundation
import Identifiers
import ReceiptTesting
import Storage
import Testing

@testable import Analytics

private let day: Int64 = 86_400_000

/// The rollups answer exactly what the engine answers from the whole ledger: every chart, by day,
/// week and month, with and without the filters rollups keep, split by each dimension they keep
/// (app, store, country, product) or not, at clocks anywhere in the day
/// (at an item's instant, a millisecond either side, midday), whatever day the rollups were written.
@Suite("Rollups")
struct RollupTests {
    static let settings = SampleBusiness.settings

    static let rates = ExchangeRates(
        SampleBusiness.rates.map {
            ExchangeRates.Row(
                day: ECBReferenceRates.day($0.day)!, currency: $0.currency, perEuro: Money.decimal($0.perEuro, places: 6)!)
        })

    /// Each holder's ledger, as the rollups are kept.
    static func holders(_ ledger: Ledger) -> [Ledger] {
        let byHolder = Dictionary(grouping: ledger.entries) { Identifier($0.appUserID) }
        return Set(byHolder.keys).union(ledger.customers.keys).map { user in
            let entries = byHolder[user] ?? []
            return Ledger(
                entries: entries,
                renewals: ledger.renewals.filter { r in
                    entries.contains { r.key == Identifier($0.purchase.originalTransactionID) }
                },
                customers: ledger.customers.filter { $0.key == user },
                refundRequests: ledger.refundRequests.filter { r in
                    entries.contains { $0.purchase.transactionID.isExactly(r.transactionID) }
                })
        }
    }

    /// Holders two by two, as one holder of both people's purchases: each of the sample's holders
    /// has one storefront and product, two of them several (the rows split item by item).
    static func paired(_ holders: [Ledger]) -> [Ledger] {
        stride(from: 0, to: holders.count, by: 2).map { i in
            guard i + 1 < holders.count else { return holders[i] }
            let (a, b) = (holders[i], holders[i + 1])
            return Ledger(
                entries: a.entries + b.entries, renewals: a.renewals.merging(b.renewals) { x, _ in x },
                customers: a.customers.merging(b.customers) { x, _ in x }, refundRequests: a.refundRequests + b.refundRequests)
        }
    }

    @Test(arguments: [39, 40, 41] as [UInt64])
    func rollupsAnswerWhatTheEngineAnswers(seed: UInt64) throws {
        let (facts, owners) = SampleBusiness.business(seed: seed)
        let ledger = SampleBusiness.ledger(facts, owners: owners, customers: SampleBusiness.customers(seed: seed))
        let engine = ChartEngine(ledger: ledger, rates: Self.rates, settings: Self.settings)
        // Seed 40's holders in pairs: the split rows of holders of several groups.
        let holders = seed == 40 ? Self.paired(Self.holders(ledger)) : Self.holders(ledger)
        var rng = SeededGenerator(seed: seed)
        let origin = SampleBusiness.origin
        // Instants items have: where a figure changes within a day.
        let instants = Chart.allCases.flatMap { chart in
            engine.items(ChartQuery(chart: chart, from: origin, to: origin + 1, now: 0)).flatMap {
                [$0.at, $0.until, $0.validFrom, $0.validUntil].filter { $0 > origin && $0 < origin + 300 * day }
            }
        }
        #expect(instants.count > 500)
        var (compared, rowsAlone, skippedCohorts) = (0, 0, 0)
        for round in 0..<10 {
            let now: Int64 =
                switch round % 3 {
                case 0: origin + Int64.random(in: 0..<(260 * day), using: &rng)
                case 1: instants.randomElement(using: &rng)! + Int64.random(in: -1...1, using: &rng)
                default: origin + Int64.random(in: 20..<250, using: &rng) * day + day / 2
                }
            // Written earlier that day or up to forty days before.
            let written = now - Int64.random(in: 0...(40 * day), using: &rng)
            var sums: [RollupRow.Key: (Int64, Int64)] = [:]
            var moments: [RollupMoment] = []
            for holder in holders {
                let kept = Rollup.holder(holder, settings: Self.settings, rates: Self.rates, writtenAt: written)
                for row in kept.rows {
                    sums[row.key] = ((sums[row.key]?.0 ?? 0) + row.value, (sums[row.key]?.1 ?? 0) + row.items)
                }
                moments += kept.moments
            }
            let rows = sums.map { RollupRow(key: $0.key, value: $0.value.0, items: $0.value.1) }
            for chart in Chart.allCases {
                for resolution in Resolution.allCases {
                    for filters in [ChartFilters(), ChartFilters(app: "com.y"), ChartFilters(store: .appStore)] {
                        // Up to twenty days on, or a range that ended before today (what a drill-down's
                        // figure of a past period asks), at a day's start or within it.
                        let to =
                            Bool.random(using: &rng)
                            ? now + 20 * day
                            : max(origin, Rollup.floorDay(now) * day - Int64.random(in: 0...(30 * day), using: &rng))
                        // From before the first item, or within the business's life: a cohort chart then
                        // reads the rows of the cohorts from its first period on.
                        let from =
                            Bool.random(using: &rng)
                            ? origin - 3 * day : origin + Int64.random(in: 0..<200, using: &rng) * day + day / 2
                        let q = ChartQuery(
                            chart: chart, from: from, to: max(to, from + 1), resolution: resolution, filters: filters,
                            now: now, window: ChartWindow.allCases.randomElement(using: &rng),
                            groupBy: chart.isCohorted || chart.definition.followsCustomers
                                ? [nil, .country, .product].randomElement(using: &rng)!
                                : [nil, .app, .store, .country, .product].randomElement(using: &rng)!)
                        guard Rollup.answers(q, reportingCurrency: "EUR") else { continue }
                        let expected = try engine.answer(q)
                        // The rows the store gives: the chart's, of the measures the query needs, split as it
                        // is, up to its last day, of no cohort or a cohort from its first period on.
                        let needed = Rollup.keptMeasures(for: q).map(Set.init)
                        let split = RollupSplit(q.groupBy) ?? .none
                        let (lastDay, cohortsFrom) = (try Rollup.lastDay(of: q), try Rollup.firstCohortDay(of: q))
                        let read = rows.filter {
                            $0.key.environment == "production" && $0.key.chart == chart && $0.key.split == split
                                && needed?.contains($0.key.measure) ?? true && $0.key.atDay <= lastDay
                                && ($0.key.cohortDay == RollupRow.noCohort || $0.key.cohortDay >= cohortsFrom)
                        }
                        if chart.isCohorted && from > origin {
                            skippedCohorts += rows.count {
                                $0.key.chart == chart && $0.key.cohortDay < cohortsFrom && $0.key.cohortDay != RollupRow.noCohort
                            }
                        }
                        // Today's moments only when the rows alone are not exact (as ReadChart reads them).
                        let today =
                            try Rollup.needsMoments(q, rows: read)
                            ? moments.filter {
                                $0.environment == "production" && $0.chart == chart && $0.days.contains(Rollup.floorDay(now))
                            }.map(\.item) : nil
                        if today == nil { rowsAlone += 1 }
                        let answer = try Rollup.answer(q, currency: "EUR", rows: read, today: today)
                        #expect(answer.figures == expected.figures, "\(chart) by \(resolution), \(filters), now \(now)")
                        #expect(
                            answer.groups.map(\.value) == expected.groups.map(\.value),
                            "\(chart) by \(String(describing: q.groupBy))")
                        #expect(answer.groups.map(\.figures) == expected.groups.map(\.figures), "\(chart) groups")
                        #expect(answer.measures == expected.measures, "\(chart)")
                        #expect(answer.missingRates == expected.missingRates, "\(chart)")
                        #expect(answer.missingPrices == expected.missingPrices, "\(chart)")
                        #expect(answer.untaxedStorefronts == expected.untaxedStorefronts, "\(chart)")
                        #expect(answer.leftOut == expected.leftOut, "\(chart) left out")
                        #expect(answer.groups.map(\.leftOut) == expected.groups.map(\.leftOut), "\(chart) groups left out")
                        compared += 1
                    }
                }
            }
        }
        // By day, week and month: the charts of time with three filters each, the cohorted unfiltered.
        let cohorted = Chart.allCases.filter(\.isCohorted).count
        #expect(compared == 10 * ((Chart.allCases.count - cohorted) * 9 + cohorted * 3))
        #expect(rowsAlone > compared / 5, "answers from rows alone: \(rowsAlone) of \(compared)")
        #expect(skippedCohorts > 1000, "rows of cohorts before the first period: \(skippedCohorts)")
    }

    /// Ids are their bytes: the rollups of holders whose people, purchases, products and apps come
    /// in pairs of two spellings of one text (``Respelling``), kept and read back, answer
    /// what the engine answers for the business as first spelt: every chart by day and by month,
    /// whole and for one app, and split by app, store, country and product. With `String` keys, a
    /// pair's rows were summed as one (a row's key, a span merged across two apps, one group).
    @Test func twoSpellingsOfAnIdAreKeptApart() throws {
        let (facts, owners) = SampleBusiness.business(seed: 40)
        let ledger = SampleBusiness.ledger(facts, owners: owners, customers: SampleBusiness.customers(seed: 40))
        let spell = Respelling(ledger, settings: Self.settings)
        let engine = ChartEngine(ledger: ledger, rates: Self.rates, settings: Self.settings)
        let origin = SampleBusiness.origin
        let now = origin + 150 * day + day / 2
        var sums: [RollupRow.Key: (Int64, Int64)] = [:]
        var moments: [RollupMoment] = []
        for holder in Self.paired(Self.holders(spell(ledger))) {
            let kept = Rollup.holder(holder, settings: spell(Self.settings), rates: Self.rates, writtenAt: now - 10 * day)
            // As kept (packed), and as rows were kept before (text): the same rows back.
            let back = try #require(RollupStore.holder(ofKept: RollupStore.kept(kept.kept, oneGroup: kept.oneGroup))).rows
            let text = try #require(RollupRow.decode(RollupRow.encode(kept.rows, oneGroup: kept.oneGroup)))
            #expect(back.sorted { $0.key < $1.key } == text.sorted { $0.key < $1.key })
            for row in back {
                sums[row.key] = ((sums[row.key]?.0 ?? 0) + row.value, (sums[row.key]?.1 ?? 0) + row.items)
            }
            moments += kept.moments
        }
        let rows = sums.map { RollupRow(key: $0.key, value: $0.value.0, items: $0.value.1) }
        #expect(Set(rows.map { Identifier($0.key.bundleID) }).count > Set(rows.map(\.key.bundleID)).count)
        var compared = 0
        for chart in Chart.allCases {
            for resolution in [Resolution.day, .month] {
                for app in [nil, "com.y"] {
                    for dimension in [nil, .app, .store, .country, .product] as [ChartDimension?] {
                        let q = ChartQuery(
                            chart: chart, from: origin - 3 * day, to: now + 20 * day, resolution: resolution,
                            filters: ChartFilters(app: app), now: now, groupBy: dimension)
                        guard Rollup.answers(q, reportingCurrency: "EUR") else { continue }
                        var asked = q
                        asked.filters.app = app.map { spell($0) }
                        let split = RollupSplit(dimension) ?? .none
                        let answer = try Rollup.answer(
                            asked, currency: "EUR",
                            rows: rows.filter {
                                $0.key.environment == "production" && $0.key.chart == chart && $0.key.split == split
                            },
                            today: moments.filter {
                                $0.environment == "production" && $0.chart == chart && $0.days.contains(Rollup.floorDay(now))
                            }.map(\.item))
                        let expected = try engine.answer(q)
                        let what = "\(chart) by \(resolution), app \(app ?? "any"), split by \(String(describing: dimension))"
                        #expect(answer.figures == expected.figures, "\(what)")
                        #expect(answer.groups.count == expected.groups.count, "\(what)")
                        let groups = Dictionary(uniqueKeysWithValues: expected.groups.map { ($0.value, $0.figures) })
                        for g in answer.groups { #expect(groups[spell.undo(g.value)] == g.figures, "\(what): \(g.value)") }
                        compared += 1
                    }
                }
            }
        }
        #expect(compared > 100)
    }

    /// A query reads rows up to its last instant's day: its last period's end (a month's, past
    /// `to`), or now's day when that is first.
    @Test func rowsAreReadUpToTheQuerysLastInstant() throws {
        let march1: Int64 = 20_513  // 2026-03-01
        let now = (march1 + 100) * day + 5
        func last(_ from: Int64, _ to: Int64, _ resolution: Resolution) throws -> Int64 {
            try Rollup.lastDay(of: ChartQuery(chart: .mrr, from: from * day, to: to, resolution: resolution, now: now))
        }
        #expect(try last(march1, (march1 + 10) * day, .day) == march1 + 9)
        #expect(try last(march1, (march1 + 10) * day + 1, .day) == march1 + 10)
        #expect(try last(march1, (march1 + 10) * day, .month) == march1 + 30)
        #expect(try last(march1, (march1 + 400) * day, .day) == march1 + 100)
        #expect(try last(march1, now, .day) == march1 + 100)
        // A cohort's items count in its cohort's period whenever they came: up to today.
        let cohorts = ChartQuery(chart: .cohorts, from: march1 * day, to: (march1 + 10) * day, resolution: .day, now: now)
        #expect(try Rollup.lastDay(of: cohorts) == march1 + 100)
    }

    /// A first-seen cohort's item is kept once, by the shortest window holding it, and counts in
    /// every longer one: a figure of a window (a drill-down's) reads the rows of its window and
    /// of every shorter one.
    @Test func aWindowsFigureReadsTheRowsOfEveryWindowItHolds() {
        let q = ChartQuery(chart: .ltvPerCustomer, from: 0, to: day, resolution: .day, now: 0, window: .days90)
        #expect(
            Rollup.keptMeasures(for: q, measure: "revenue")
                == ["revenue", "revenue/week", "revenue/month", "revenue/7d", "revenue/30d", "revenue/90d"])
        #expect(ChartWindow.allCases.filter { ChartWindow.days30.includes($0) } == [.days7, .days30])
        #expect(ChartWindow.allCases.allSatisfy { ChartWindow.unbounded.includes($0) && $0.includes(.days7) })
        let firstSeen = 20_000 * day + 1
        #expect(ChartWindow.shortest(admitting: firstSeen + 7 * day, firstSeen: firstSeen) == .days7)
        #expect(ChartWindow.shortest(admitting: firstSeen + 8 * day, firstSeen: firstSeen) == .days30)
        #expect(ChartWindow.shortest(admitting: firstSeen + 400 * day, firstSeen: firstSeen) == .unbounded)
    }

    /// A cohorted query reads the rows of cohorts from its first period's day on: by month, from
    /// the 1st of the month holding `from`.
    @Test func cohortRowsAreReadFromTheFirstPeriod() throws {
        let march1: Int64 = 20_513  // 2026-03-01
        func first(_ from: Int64, _ resolution: Resolution) throws -> Int64 {
            try Rollup.firstCohortDay(
                of: ChartQuery(chart: .cohorts, from: from, to: (march1 + 60) * day, resolution: resolution, now: 0))
        }
        #expect(try first((march1 + 9) * day, .day) == march1 + 9)
        #expect(try first((march1 + 9) * day + day / 2, .day) == march1 + 9)
        #expect(try first((march1 + 9) * day, .month) == march1)
        #expect(try first((march1 + 9) * day, .week) == march1 + 8)  // Monday 2026-03-09
        // A chart of no cohorts reads its rows whatever their cohort day.
        let mrr = ChartQuery(chart: .mrr, from: march1 * day, to: (march1 + 60) * day, resolution: .day, now: 0)
        #expect(try Rollup.firstCohortDay(of: mrr) == RollupRow.noCohort)
    }

    /// The property test above covers both ways split rows are made: holders whose every item is
    /// in one group (their unsplit rows copied into it) and holders of several (item by item).
    @Test func theSampleHasHoldersOfOneGroupAndOfSeveral() {
        let (facts, owners) = SampleBusiness.business(seed: 40)
        func groups(_ holders: [Ledger]) -> [Int] {
            holders.map { holder in
                let rows = Rollup.holder(holder, settings: Self.settings, rates: Self.rates, writtenAt: 0).rows
                let countries = Set(rows.filter { $0.key.split == .country }.map(\.key.group))
                let products = Set(rows.filter { $0.key.split == .product }.map(\.key.group))
                return countries.count + products.count
            }
        }
        let holders = Self.holders(SampleBusiness.ledger(facts, owners: owners))
        #expect(groups(holders).allSatisfy { $0 == 2 })
        #expect(groups(Self.paired(holders)).contains { $0 > 2 })
    }

    @Test func notesReadBackAsWritten() {
        let notes: [ItemNote] = [
            .missingRate(currency: "GBP", day: 20_454, from: "GBP", to: "USD"),
            .missingRate(currency: "USD", day: 20_454, from: "EUR", to: "USD"),
            .missingPrice(productID: "monthly", storefront: nil),
            .missingPrice(productID: "a b", storefront: "USA"), .untaxed(storefront: "FRA"),
        ]
        for note in notes { #expect(RollupRow.note(RollupRow.noteText(note)) == note) }
        #expect(RollupRow.note("rate\u{1F}GBP") == nil)
        // Format 5's note, without its conversion, is not this format's (the rollups are rebuilt).
        #expect(RollupRow.note("rate\u{1F}GBP\u{1F}20454") == nil)
        #expect(
            RollupRow.noteText(.missingRate(currency: "USD", day: 20_454, from: "EUR", to: "USD"))
                == "rate\u{1F}USD\u{1F}20454\u{1F}EUR\u{1F}USD")
    }
}

extension RollupTests {
    @Test func rowsReadBackAsWritten() {
        let (facts, owners) = SampleBusiness.business(seed: 8)
        var rows = Self.holders(SampleBusiness.ledger(facts, owners: owners)).flatMap {
            Rollup.holder($0, settings: Self.settings, rates: Self.rates, writtenAt: 0).rows
        }
        rows.append(
            RollupRow(
                key: .init(
                    environment: "a\tb", chart: .revenue, measure: "", kind: .flow, settled: true, bundleID: "x\\y\nz",
                    store: "app_store",
                    note: "price\u{1F}p", atDay: .min, untilDay: .max, validFromDay: -3, validUntilDay: 0,
                    cohortDay: RollupRow.noCohort),
                value: -5, items: 1))
        #expect(rows.contains { $0.key.split == .country } && rows.contains { $0.key.split == .product })
        rows.append(
            RollupRow(
                key: .init(
                    environment: "e", chart: .mrr, measure: "mrr", kind: .stock, bundleID: "b", store: "play_store", note: "",
                    atDay: 3, untilDay: .max, validFromDay: .min, validUntilDay: .max, cohortDay: RollupRow.noCohort,
                    split: .product, group: "a\tb"),
                value: 7, items: 1))
        #expect(rows.count > 100)
        #expect(RollupRow.decode(RollupRow.encode(rows)) == rows)
        // The text kept before stays the text written: fields, escapes and numbers byte for byte.
        let one = RollupRow(
            key: .init(
                environment: "a\tb", chart: .revenue, measure: "net", kind: .flow, settled: true, bundleID: "x\\y\nz",
                store: "app_store", note: "", atDay: .min, untilDay: .max, validFromDay: -3, validUntilDay: 0,
                cohortDay: 20_123, split: .country, group: "DEU"),
            value: Int64.min + 1, items: 1_234_567_890_123)
        #expect(
            RollupRow.encode([one])
                == "a\\tb\trevenue\tnet\tflow\ts\tx\\\\y\\nz\tapp_store\t\t-\t+\t-3\t0\t20123\t-9223372036854775807\t1234567890123\tcountry\tDEU\n"
        )
        #expect(RollupRow.decode("revenue\tflow\n") == nil)
        #expect(RollupRow.decode("one group\tproduction\n") == nil)
        #expect(RollupRow.decode("one grou\tproduction\tDEU\u{1F}monthly\n") == nil)
    }

    /// A holder of one group is kept without their split rows, which read back made again; a
    /// holder of several keeps them all.
    @Test func theSplitRowsOfOneGroupAreMadeAgainWhenRead() {
        let (facts, owners) = SampleBusiness.business(seed: 40)
        let holders = Self.holders(SampleBusiness.ledger(facts, owners: owners))
        var (one, several) = (0, 0)
        for holder in holders + Self.paired(holders) {
            let kept = Rollup.holder(holder, settings: Self.settings, rates: Self.rates, writtenAt: 0)
            guard !kept.rows.isEmpty else { continue }
            let text = RollupRow.encode(kept.rows, oneGroup: kept.oneGroup)
            let written = text.split(separator: "\n").filter {
                $0.split(separator: "\t", omittingEmptySubsequences: false).count == 17
            }.count
            let splitRows = kept.rows.filter { $0.key.split != .none }.count
            if kept.oneGroup.isEmpty {
                several += 1
                #expect(written == splitRows)
            } else {
                one += 1
                #expect(written == 0 && splitRows == 2 * (kept.rows.count - splitRows))
                #expect(text.count * 2 < RollupRow.encode(kept.rows).count)
            }
            #expect(RollupRow.decode(text)?.sorted { $0.key < $1.key } == kept.rows.sorted { $0.key < $1.key })
        }
        #expect(one > 10 && several > 3)
    }

    /// Today's items keep the notes their chart reports, as its rows do (untaxed storefronts for
    /// revenue alone), and a note's piece left with nothing to say is not kept.
    @Test func todaysItemsKeepOnlyTheNotesTheirChartReports() {
        let (facts, owners) = SampleBusiness.business(seed: 8)
        let moments = Self.holders(SampleBusiness.ledger(facts, owners: owners)).flatMap {
            Rollup.holder($0, settings: Self.settings, rates: Self.rates, writtenAt: SampleBusiness.origin).moments
        }
        #expect(moments.contains { $0.chart == .mrr } && moments.contains { $0.chart == .actives })
        #expect(moments.contains { $0.chart == .revenue && $0.item.notes.contains(where: \.isUntaxed) })
        #expect(!moments.contains { $0.chart != .revenue && $0.item.notes.contains(where: \.isUntaxed) })
        #expect(!moments.contains { $0.item.measure.isEmpty && $0.item.notes.isEmpty })
    }

    @Test func momentsReadBackAsWritten() {
        let (facts, owners) = SampleBusiness.business(seed: 8)
        var items = Self.holders(SampleBusiness.ledger(facts, owners: owners)).flatMap {
            Rollup.holder($0, settings: Self.settings, rates: Self.rates, writtenAt: SampleBusiness.origin).moments.map(\.item)
        }
        items.append(
            ChartItem(
                measure: "a\tb\\c", kind: .stock, at: .min, until: .max, validFrom: -5, validUntil: 7, cohort: -3, value: -9,
                isMoney: false, appUserID: "", originalTransactionID: "", transactionID: "",
                notes: [.untaxed(storefront: "F\nR"), .missingPrice(productID: "p", storefront: nil)], bundleID: "x\ny",
                store: .appStore, group: ChartItem.keptGroup(country: "D\tE", product: "p\\1")))
        #expect(items.count > 50 && items.contains { !$0.notes.isEmpty && $0.cohort != nil })
        // Every item is kept with its storefront and product (or its customer's first).
        #expect(items.contains { $0.group == ChartItem.keptGroup(country: "USA", product: "monthly") })
        #expect(
            Self.holders(SampleBusiness.ledger(facts, owners: owners)).flatMap {
                Rollup.holder($0, settings: Self.settings, rates: Self.rates, writtenAt: SampleBusiness.origin).moments
            }.allSatisfy { !$0.item.group.isEmpty })
        let back = RollupMoment.decode(RollupMoment.encode(items), appUserID: "u") ?? []
        // What a sum needs of them: ids and details are not kept; a note's item is no amount.
        let kept = items.map { item in
            var i = item
            (i.appUserID, i.originalTransactionID, i.transactionID, i.isMoney) = ("u", "", "", ChartItem.isMoney(i.measure))
            return i
        }
        #expect(back.count == kept.count)
        #expect(zip(back, kept).first { $0.0 != $0.1 }.map { "\($0.0) ≠ \($0.1)" } == nil)
        #expect(RollupMoment.decode("mrr\tstock", appUserID: "u") == nil)
        let line = "mrr\tstock\tcom.x\tapp_store\t\t1\t+\t-\t+\t\t5"
        #expect(RollupMoment.decode(line + "\n" + line, appUserID: "u")?.count == 2)
        for bad in [
            line.replacingOccurrences(of: "\tstock\t", with: "\tstocks\t"),
            line.replacingOccurrences(of: "app_store", with: "play"),
            line.replacingOccurrences(of: "\t1\t", with: "\t1a\t"),
            line.replacingOccurrences(of: "\t5", with: "\t99999999999999999999"),
            line + "\t", line.replacingOccurrences(of: "\t\t5", with: "\tx\t5"),
        ] {
            #expect(RollupMoment.decode(bad, appUserID: "u") == nil, "\(bad)")
        }
        #expect(RollupMoment.decode("", appUserID: "u") == [])
        // Appended to what is there, of one measure when asked: a chart's whole day in one array.
        var some = [kept[0]]
        #expect(RollupMoment.decode(RollupMoment.encode(items), appUserID: "u", measure: "mrr", into: &some))
        #expect(some == [kept[0]] + kept.filter { $0.measure == "mrr" } && some.count > 2)
        #expect(!RollupMoment.decode(line + "\n" + "mrr\tstock", appUserID: "u", measure: "arr", into: &some))
    }
}
