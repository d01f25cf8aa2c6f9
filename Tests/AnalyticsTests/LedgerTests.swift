import Entitlements
import Identifiers
import ReceiptTesting
import Testing

@testable import Analytics

/// Serialized: forty CPU-bound cases at once would hold every thread of the pool the other
/// suites' servers answer on.
@Suite(.serialized) struct LedgerTests {
    /// Random subscriptions (gaps, overlaps, upgrades, refunds, trials, family copies, grace
    /// periods): who pays and who is on a trial, piece by piece, is what evaluating each instant says.
    @Test(arguments: 0..<40)
    func piecesAreEvaluationAtEveryInstant(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let day: Int64 = 86_400_000
        let origin = at(2026, 1, 1)
        var entries: [Ledger.Entry] = []
        var t = origin + Int64.random(in: 0..<(10 * day), using: &rng)
        for n in 0..<Int.random(in: 1...8, using: &rng) {
            let length = [7, 30, 31, 365].randomElement(using: &rng)! * day + Int64.random(in: -3600_000...3600_000, using: &rng)
            let refunded = Int.random(in: 0..<6, using: &rng) == 0 ? t + Int64.random(in: 0..<length, using: &rng) : nil
            entries.append(
                sale(
                    "t\(n)", user: "u", original: "o", from: t, to: t + length, price: 1000,
                    trial: n == 0 && Bool.random(using: &rng), family: Int.random(in: 0..<10, using: &rng) == 0,
                    refundedAt: refunded, upgraded: refunded != nil && Bool.random(using: &rng)))
            // The next period: on time, early (an overlap), or after a gap.
            t += length + Int64.random(in: -2...5, using: &rng) * day
        }
        let renewal = Ledger.RenewalState(
            autoRenewStatus: true, isInBillingRetryPeriod: Bool.random(using: &rng),
            gracePeriodExpiresDate: t + Int64.random(in: -5...16, using: &rng) * day)
        let line = SubscriptionLine.lines(Ledger(entries: entries, renewals: ["o": renewal]), filters: ChartFilters())[0]
        func find(_ pieces: [SubscriptionLine.Piece], _ at: Int64) -> String? {
            pieces.first { $0.start <= at && at < $0.end }?.entry.purchase.transactionID
        }
        let paying = line.payingPieces
        let trials = line.trialPieces
        var probe = origin
        while probe < t + 30 * day {
            #expect(find(paying, probe) == line.payingEntry(at: probe)?.purchase.transactionID, "seed \(seed) at \(probe)")
            let trial = line.entries.last { $0.purchase.isTrial(at: probe) }
            #expect(find(trials, probe) == trial?.purchase.transactionID, "seed \(seed) at \(probe)")
            probe += 3_600_000 + Int64.random(in: 0..<60_000, using: &rng)
        }
        // Each instant where something changes, and the one just before it.
        for cut in entries.flatMap({ [$0.purchase.purchaseDate!, $0.purchase.accessEnd!] })
            + line.paid.flatMap({ [$0.start, $0.end] })
        {
            for probe in [cut - 1, cut] {
                #expect(find(paying, probe) == line.payingEntry(at: probe)?.purchase.transactionID, "seed \(seed) at \(probe)")
            }
        }
    }
}
