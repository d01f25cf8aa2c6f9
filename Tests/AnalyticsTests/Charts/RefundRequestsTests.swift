import Entitlements
import Testing

@testable import Analytics

/// App Store refund requests by hand: asked, answered (in Apple's 12 hours or not), and each
/// one's resolution as of the clock.
@Suite struct RefundRequestsTests {
    /// Ann's coins: asked on January 20th at 10:00, answered at 12:00, declined the 21st; asked
    /// again March 10th, granted the 11th. Ben's month: asked February 5th, answered 13 hours
    /// later, granted the 6th, the refund reversed the 20th. Cat (in Germany): asked February
    /// 12th, her consent to share withdrawn (nothing sent), no decision yet. Dan: asked March
    /// 2nd, refunded the 4th, Apple's `REFUND` never arrived.
    static let ledger = Ledger(
        entries: [
            sale("a1", user: "ann", product: "coins", from: at(2026, 1, 10), to: nil, price: 2000, refundedAt: at(2026, 3, 11)),
            sale("b1", user: "ben", from: at(2026, 2, 1), to: at(2026, 3, 1), price: 5000),
            sale("c1", user: "cat", from: at(2026, 2, 10), to: at(2026, 3, 10), price: 5000, storefront: "DEU"),
            sale("d1", user: "dan", from: at(2026, 3, 1), to: at(2026, 4, 1), price: 5000, refundedAt: at(2026, 3, 4)),
        ],
        refundRequests: [
            .init(transactionID: "a1", kind: .declined, at: at(2026, 1, 5)),  // no request before it: nothing
            .init(
                transactionID: "a1", kind: .requested, at: at(2026, 1, 20, 10), answeredAt: at(2026, 1, 20, 12), answer: "sent"),
            .init(transactionID: "a1", kind: .declined, at: at(2026, 1, 21)),
            .init(transactionID: "a1", kind: .requested, at: at(2026, 3, 10)),
            .init(transactionID: "a1", kind: .granted, at: at(2026, 3, 11)),
            .init(transactionID: "b1", kind: .reversed, at: at(2026, 2, 20)),
            .init(transactionID: "b1", kind: .granted, at: at(2026, 2, 6)),
            .init(
                transactionID: "b1", kind: .requested, at: at(2026, 2, 5), answeredAt: at(2026, 2, 5, 13), answer: "sent",
                reason: "UNINTENDED_PURCHASE"),
            .init(transactionID: "c1", kind: .requested, at: at(2026, 2, 12), answer: "consent_rescinded", reason: "LEGAL"),
            .init(transactionID: "d1", kind: .requested, at: at(2026, 3, 2), answer: "unavailable"),
        ])

    static func answer(now: Int64, groupBy: ChartDimension? = nil) throws -> ChartAnswer {
        var q = ChartEngineTests.months(.refundRequests, now: now)
        q.groupBy = groupBy
        return try ChartEngine(ledger: ledger, rates: ChartEngineTests.rates, settings: ChartEngineTests.settings).answer(q)
    }

    @Test func requestsAnswersAndResolutionsByTheMonthOfTheRequest() throws {
        let a = try Self.answer(now: at(2026, 4, 1))
        func column(_ m: String) -> [Measure?] { a.values.map { $0[m] } }
        #expect(column("requests") == [.count(1), .count(2), .count(2)])
        #expect(column("answered") == [.count(1), .count(1), .count(0)])
        #expect(column("answered_in_time") == [.count(1), .count(0), .count(0)])
        #expect(column("answered_in_time_rate") == [.ratio(1, 1), .ratio(0, 2), .ratio(0, 2)])
        #expect(column("granted") == [.count(0), .count(0), .count(2)])
        #expect(column("declined") == [.count(1), .count(0), .count(0)])
        #expect(column("reversed") == [.count(0), .count(1), .count(0)])
        #expect(column("no_resolution") == [.count(0), .count(1), .count(0)])
    }

    @Test func aResolutionCountsFromWhenAppleMadeIt() throws {
        // February 5th at noon: Ben's request is twelve hours old: unanswered, undecided.
        let noon = try Self.answer(now: at(2026, 2, 5, 12))
        #expect(noon.values[1]["requests"] == .count(1) && noon.values[1]["answered"] == .count(0))
        #expect(noon.values[1]["no_resolution"] == .count(1) && noon.values[1]["granted"] == .count(0))
        // The 10th: answered (late) and granted, not yet reversed.
        let tenth = try Self.answer(now: at(2026, 2, 10))
        #expect(tenth.values[1]["answered"] == .count(1) && tenth.values[1]["answered_in_time"] == .count(0))
        #expect(tenth.values[1]["granted"] == .count(1) && tenth.values[1]["reversed"] == .count(0))
        #expect(tenth.values[1]["no_resolution"] == .count(0))
    }

    @Test func theResolutionsAddUpToTheRequestsAtEveryInstant() throws {
        for day in stride(from: at(2026, 1, 1), through: at(2026, 4, 1), by: 6 * 3_600_000) {
            let a = try Self.answer(now: day)
            for v in a.values {
                let parts = ["granted", "declined", "reversed", "no_resolution"].map { v[$0] }
                let sum = parts.reduce(Int64(0)) { total, m in if case .count(let n)? = m { total + n } else { total } }
                #expect(v["requests"] == nil || v["requests"] == .count(sum))
            }
        }
    }

    @Test func aDrillNamesEachRequestAndWhatBecameOfItsAnswer() throws {
        let q = ChartEngineTests.months(.refundRequests, now: at(2026, 4, 1))
        let engine = ChartEngine(ledger: Self.ledger, rates: ChartEngineTests.rates, settings: ChartEngineTests.settings)
        let requests = try engine.drill(q, period: "2026-02-01", measure: "requests")
        #expect(requests.contributions.map(\.appUserID) == ["ben", "cat"])
        #expect(requests.contributions.map(\.detail) == ["sent", "consent_rescinded"])
        let answered = try engine.drill(q, period: "2026-02-01", measure: "answered")
        #expect(answered.contributions.map(\.detail) == ["answered after 780 minutes"])
        #expect(throws: ChartError.derivedMeasure("answered_in_time_rate", parts: ["answered_in_time", "requests"])) {
            try engine.drill(q, period: "2026-02-01", measure: "answered_in_time_rate")
        }
    }

    @Test func splitByCountry() throws {
        let a = try Self.answer(now: at(2026, 4, 1), groupBy: .country)
        #expect(a.groups.map(\.value) == ["DEU", "USA"])
        #expect(a.groups.map { $0.figures[1, "requests"] } == [.count(1), .count(1)])
        #expect(a.groups.map { $0.figures[1, "no_resolution"] } == [.count(1), .count(0)])
    }

    @Test func splitByTheCustomersReason() throws {
        let a = try Self.answer(now: at(2026, 4, 1), groupBy: .reason)
        #expect(a.groups.map(\.value) == ["LEGAL", "UNINTENDED_PURCHASE", "unknown"])
        #expect(a.groups.map { $0.figures[1, "requests"] } == [.count(1), .count(1), .count(0)])
        #expect(a.groups.map { $0.figures[2, "granted"] } == [.count(0), .count(0), .count(2)])
        // Only this chart has reasons.
        #expect(Chart.refundRequests.splits(by: .reason) && !Chart.revenue.splits(by: .reason))
        #expect(Chart.allCases.allSatisfy { $0.splits(by: .country) })
    }

    @Test func aLostRefundNotificationIsReadFromThePurchase() {
        let events = [RefundRequestEvent(transactionID: "t", kind: .requested, at: 10)]
        #expect(RefundRequest.requests(events, refundedAt: 20).map { $0.decision?.kind } == [.granted])
        // A refund before the request (an earlier one) decides nothing of it.
        #expect(RefundRequest.requests(events, refundedAt: 5).map { $0.decision?.kind } == [nil])
    }
}
