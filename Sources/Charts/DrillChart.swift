package import Analytics
import DatabaseEngine
import Entitlements
import Foundation
import FoundationEssentials
import Identifiers
import Logging
package import ReceiptCore
import Storage

/// Where a drill-down's next page starts: the last mark (``RollupMark``) the page read. Opaque
/// to clients: base64url of `day:app_user_id`.
package struct DrillCursor: Sendable, Equatable {
    package var day: Int64
    package var appUserID: String

    package init(day: Int64, appUserID: String) {
        self.day = day
        self.appUserID = appUserID
    }

    package var text: String {
        Data("\(day):\(appUserID)".utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A cursor from ``text``; nil for anything else.
    package init?(text: String) {
        guard text.utf8.count <= 400, text.utf8.allSatisfy({ $0.isBase64URL }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let plain = String(validating: Array(data), as: UTF8.self),
            let colon = plain.firstIndex(of: ":"), let day = Int64(plain[..<colon])
        else { return nil }
        let user = String(plain[plain.index(after: colon)...])
        guard !user.isEmpty else { return nil }
        self.init(day: day, appUserID: user)
    }
}

extension UInt8 {
    fileprivate var isBase64URL: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) || self == 0x2D
            || self == 0x5F
    }
}

/// A page of a drill-down: contributions in the order of the marks they were found by.
package struct DrillPage: Sendable {
    package var drill: Drill
    /// Where the next page starts; nil on the last.
    package var next: DrillCursor?
    /// Found through the rollups' marks (else by reading every transaction, all on one page).
    package var fromRollups: Bool
    package var pendingChanges: Int64
    /// Development's simulated rates, which its money may have been converted at (as a chart's).
    package var simulatedRates: [String: Int64] = [:]
}

extension ReadChart {
    /// Which page of a drill-down: after a cursor, about `limit` contributions (a holder's are
    /// never split between pages), or `everything` (a CSV download).
    package struct DrillRequest: Sendable {
        package var after: DrillCursor?
        package var limit: Int
        package var everything: Bool

        package init(after: DrillCursor? = nil, limit: Int = 50, everything: Bool = false) {
            self.after = after
            self.limit = limit
            self.everything = everything
        }
    }

    /// Holders a page reads at most: a page answers in about the same time however sparse the
    /// figure's contributors are among those marked (it may then hold fewer than `limit`).
    static let marksPerPage = 500

    /// The contributions to one figure (Docs/analytics.md#every-number-explains-itself). While the rollups are
    /// ready, the holders marked where the figure's items can be (``RollupMark``) are read a page
    /// at a time and only their ledgers summed; the figure itself comes with the first page when
    /// the rollups answer the query. Otherwise every transaction is read and every contribution
    /// is on the one page.
    package func drill(_ input: Input, period: String, measure: String, page: DrillRequest = DrillRequest())
        async throws(ReceiptError) -> DrillPage
    {
        let (query, rates) = (try prepare(input), try await rates())
        let sum: ChartSum
        let target: DrillTarget?
        do {
            sum = try ChartSum(query, currency: query.currency ?? settings.reportingCurrency)
            target = try sum.target(period: period, measure: measure)
        } catch {
            throw Self.error(error)
        }
        let settings = settings
        let ready: Int64?
        do {
            ready = try await database.read { db -> Int64? in
                let store = RollupStore(db)
                return try KeepRollups.ready(db, for: settings).map { try store.pendingChanges(after: $0.changesThrough) }
            }
        } catch {
            logger.error("the chart rollups could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let pending = ready else {
            guard page.after == nil else {
                throw .invalidRequest("The chart rollups are being rebuilt: start the drill-down again without `cursor`.")
            }
            return try await drillEveryHolder(query, rates: rates, sum: sum, period: period, measure: measure)
        }
        // The figure, on the first page, is read from the rollups beside the marked holders.
        let wanted = page.after == nil && !page.everything && Rollup.answers(query, reportingCurrency: settings.reportingCurrency)
        let one = sum.query(ofPeriod: period) ?? query
        async let figure = wanted ? self.figure(one, period: period, measure: measure) : .success(nil)
        var (drill, next) = try await drillMarked(
            query, rates: rates, sum: sum, target: target, period: period, measure: measure, page: page)
        drill.value = try await figure.get()
        return DrillPage(
            drill: drill, next: next, fromRollups: true, pendingChanges: pending, simulatedRates: settings.simulatedRates)
    }

    /// One figure from the rollups, of `query` (its period's alone where the chart allows:
    /// ``ChartSum/query(ofPeriod:)``): its measure's rows alone, of its group alone when it names
    /// one. Nil while they are being rebuilt.
    private func figure(_ query: ChartQuery, period: String, measure: String) async -> Result<Measure?, ReceiptError> {
        do throws(ReceiptError) {
            guard let answer = try await fromRollups(query, measure: Rollup.keptMeasure(of: measure), oneGroup: true),
                let index = answer.periods.firstIndex(where: { $0.label == period })
            else { return .success(nil) }
            return .success(answer.figures[index, measure])
        } catch {
            return .failure(error)
        }
    }

    /// A page of contributions from the holders marked for the figure, in the order of their
    /// marks: each mark's holder's items found on that mark (``DrillTarget/markDay(of:)``).
    private func drillMarked(
        _ query: ChartQuery, rates: ExchangeRates, sum: ChartSum, target: DrillTarget?, period: String, measure: String,
        page: DrillRequest
    ) async throws(ReceiptError) -> (Drill, DrillCursor?) {
        var running: ChartSum.Running
        do { running = try sum.drilling(period: period, measure: measure) } catch { throw Self.error(error) }
        guard let target else { return (try Self.finish(running), nil) }
        var cursor = page.after ?? DrillCursor(day: target.days.lowerBound, appUserID: "")
        var examined = 0
        let (settings, environment) = (settings, query.filters.environment)
        // Into one country's or product's figure: only the marked holders who hold a transaction
        // of it are read (a group is most often a fraction of the marked).
        let narrowed = RollupSplit(query.groupBy).flatMap { split in
            query.group.flatMap { $0 == ChartDimension.unknown ? nil : (split, $0) }
        }
        while true {
            // Marks a batch: a quarter more than the contributions still wanted (most marked
            // holders add one; each read is a holder's whole ledger; four times as many marks
            // when narrowed to a group), up to what the page may still read.
            let want =
                page.everything
                ? Self.marksPerPage
                : min(
                    Self.marksPerPage - examined,
                    max((page.limit - running.contributionCount) * 5 / 4 + 10, 20) * (narrowed == nil ? 1 : 4))
            let read: ([(day: Int64, appUserID: String)], [Identifier: Ledger])
            do {
                let after = cursor
                read = try await database.read { db in
                    let marks = try RollupStore(db).marks(
                        environment: environment, family: target.family, days: target.days, after: (after.day, after.appUserID),
                        limit: want)
                    var users = Set(marks.map { Identifier($0.appUserID) }).sorted().map(\.string)
                    if let (split, value) = narrowed {
                        let holding = try AnalyticsStore(db).holding(users, split: split, value: value)
                        users = users.filter { holding.contains(Identifier($0)) }
                    }
                    let held = try AnalyticsStore(db).holdings(of: users)
                    return (marks, Self.ledgers(held))
                }
            } catch {
                logger.error("the drill-down's holders could not be read", metadata: ["error": "\(error)"])
                throw .internalFault
            }
            var items: [Identifier: [ChartItem]] = [:]
            for (day, user) in read.0 {
                let holder = Identifier(user)
                if items[holder] == nil {
                    items[holder] =
                        read.1[holder].map { ChartEngine(ledger: $0, rates: rates, settings: settings).items(query) } ?? []
                }
                running.add(items[holder]!.filter { target.markDay(of: $0) == day })
                examined += 1
                cursor = DrillCursor(day: day, appUserID: user)
                if !page.everything, running.contributionCount >= page.limit { return (try Self.finish(running), cursor) }
            }
            if read.0.count < want { return (try Self.finish(running), nil) }
            if !page.everything, examined >= Self.marksPerPage { return (try Self.finish(running), cursor) }
        }
    }

    private static func finish(_ running: ChartSum.Running) throws(ReceiptError) -> Drill {
        do { return try running.drill() } catch { throw Self.error(error) }
    }

    /// Every contribution, from every holder's ledger: while the rollups are not ready.
    private func drillEveryHolder(
        _ query: ChartQuery, rates: ExchangeRates, sum: ChartSum, period: String, measure: String
    ) async throws(ReceiptError) -> DrillPage {
        do {
            let running = try sum.drilling(period: period, measure: measure)
            let drill = try await sumEveryHolder(query, rates: rates, into: running).drill()
            return DrillPage(
                drill: drill, next: nil, fromRollups: false, pendingChanges: 0, simulatedRates: settings.simulatedRates)
        } catch let error as ChartError {
            throw Self.error(error)
        } catch let error as ReceiptError {
            throw error
        } catch {
            throw .internalFault
        }
    }
}
