import Testing

@testable import Entitlements

/// Monthly plans with a 12-month commitment: each month entitles like a monthly period; the
/// document and the explanation say where in the commitment it is and whether it renews.
@Suite("Commitments")
struct CommitmentsTests {
    func month(_ k: Int, of first: Int = 0) -> Purchase {
        var p = period("m\(k)", from: Double(k * 30), to: Double(k * 30 + 30))
        p.commerce.billingPlanType = "MONTHLY"
        p.commerce.price = Price(milliunits: 9_990, currency: "EUR", source: .store)
        let commitmentStart = k / 12 * 12
        p.commerce.commitment = Commitment(
            billingPeriodNumber: Int64(k % 12 + 1), totalBillingPeriods: 12, price: 119_880,
            expiresDate: d(Double((commitmentStart + 12) * 30)))
        return p
    }

    func commitmentRenewal(_ renews: Bool?) -> Renewal {
        var r = renewal()
        r.commitment = RenewalCommitment(renewalBillingPlanType: "MONTHLY", autoRenewStatus: renews)
        return r
    }

    @Test func theCurrentMonthSaysWhereInTheCommitmentItIs() throws {
        let facts = Facts(
            purchases: (0..<3).map { month($0) },
            renewals: [RenewalObservation(observedAt: d(61), renewal: commitmentRenewal(true))])
        let status = try #require(Derivation.subscriptions(facts, now: d(65)).first)
        #expect(status.isEntitled && status.state == .active)
        let commitment = try #require(status.commitment)
        #expect(commitment.billingPeriod == 3 && commitment.billingPeriods == 12 && commitment.expiresAt == d(360))
        #expect(commitment.price == 119_880 && commitment.currency == "EUR" && commitment.willRenew == true)
        #expect(status.explanation.decision.hasSuffix("which renews into another unless the customer cancels it."))
        #expect(status.explanation.facts.contains(Fact("commitment_billing_period", .number(3))))
    }

    /// "billing continues through all 12 periods even if the customer cancels the commitment
    /// renewal early": cancelled, the month still entitles, and the explanation says until when.
    @Test func aCancelledCommitmentStillBillsAndEntitlesToItsEnd() throws {
        let facts = Facts(
            purchases: (0..<3).map { month($0) },
            renewals: [RenewalObservation(observedAt: d(61), renewal: commitmentRenewal(false))])
        let status = try #require(Derivation.subscriptions(facts, now: d(65)).first)
        #expect(status.isEntitled && status.willRenew && status.commitment?.willRenew == false)
        #expect(
            status.explanation.decision.contains("cancelled the commitment's renewal, so billing goes on through its last month"))
        #expect(status.explanation.facts.contains(Fact("commitment_auto_renew_status", .flag(false))))
    }

    @Test func anOrdinarySubscriptionHasNoCommitment() throws {
        let status = try #require(Derivation.subscriptions(Facts(purchases: [period("p1", from: 0, to: 30)]), now: d(5)).first)
        #expect(status.commitment == nil)
        #expect(Commitments.status(of: period("p1", from: 0, to: 30), renewal: commitmentRenewal(true)) == nil)
    }

    /// Month 1 of a commitment after a commitment's month is its renewal: one event, dated then.
    @Test func aCommitmentRenewedIsAnEvent() {
        let facts = Facts(purchases: (0..<14).map { month($0) })
        let events = History.events(facts, appUserID: "u", asOf: d(14 * 30)).filter { $0.kind == .commitmentRenewal }
        #expect(events.map(\.key) == ["commitment_renewal:m12"])
        #expect(events.first?.at == d(360))
        #expect(events.first?.facts.contains(Fact("commitment_expires_date", .time(d(720)))) == true)
        // Not before it happened, and never for the first commitment's month 1.
        #expect(History.events(facts, appUserID: "u", asOf: d(359)).allSatisfy { $0.kind != .commitmentRenewal })
        #expect(Commitments.renewalEvents((0..<12).map { month($0) }).isEmpty)
    }
}
