import GooglePlay
import JSON
import Testing

@testable import GooglePlaySimulator

@Suite("Google Play simulator: scripted purchases")
struct PlayScenarioTests {
    static let anchor: Int64 = 1_790_000_000_000
    static let day: Int64 = 86_400_000

    static func script(_ scenario: PlayScenario, now: Int64 = anchor, voidedAt: Int64? = nil) -> PlayScript {
        PlayScript(scenario: scenario, tag: "t", anchor: anchor, now: now, acknowledged: false, voidedAt: voidedAt)
    }

    @Test(arguments: PlayScenario.allCases.filter(\.isSubscription))
    func everySubscriptionScenarioIsAResourceReceiptdReads(_ scenario: PlayScenario) throws {
        let s = try SubscriptionPurchase(Self.script(scenario).subscription)
        let expected: SubscriptionPurchase.State =
            switch scenario {
            case .canceled: .canceled
            case .expired, .replaced: .expired
            case .gracePeriod: .inGracePeriod
            case .accountHold: .onHold
            case .paused: .paused
            case .pending: .pending
            case .pendingCanceled: .pendingPurchaseCanceled
            default: .active
            }
        #expect(s.state == expected)
        #expect(s.lineItems.map(\.productID) == [scenario.productID])
        #expect(s.obfuscatedAccountID == "acct-t" && !s.isAcknowledged)
        #expect(s.isTest == (scenario == .test))
        #expect(PlayScenario.parse(scenario.token(tag: "t"))! == (scenario, "t"))
    }

    @Test(arguments: PlayScenario.allCases.filter { !$0.isSubscription })
    func everyProductScenarioIsAResourceReceiptdReads(_ scenario: PlayScenario) throws {
        let p = try ProductPurchase(Self.script(scenario).product(consumed: false))
        #expect(p.state == (scenario == .productPending ? .pending : scenario == .productCancelled ? .cancelled : .purchased))
        #expect(p.lineItems.map(\.productID) == [scenario.productID])
        #expect((p.orderID == nil) == (scenario == .productPending))
    }

    @Test func theScenariosSayWhatTheirNamesSay() throws {
        let trial = try SubscriptionPurchase(Self.script(.trial).subscription)
        #expect(trial.lineItems[0].offerPhase == .freeTrial && trial.lineItems[0].expiryTime == Self.anchor + 6 * Self.day)
        let grace = try SubscriptionPurchase(Self.script(.gracePeriod).subscription)
        #expect(grace.lineItems[0].expiryTime == Self.anchor + 2 * Self.day)
        let paused = try SubscriptionPurchase(Self.script(.paused).subscription)
        #expect(paused.autoResumeTime == Self.anchor + 20 * Self.day)
        let upgraded = try SubscriptionPurchase(Self.script(.upgraded).subscription)
        #expect(upgraded.linkedPurchaseToken == "gp1.replaced.t" && upgraded.lineItems[0].productID == "yearly")
        let replaced = try SubscriptionPurchase(Self.script(.replaced).subscription)
        #expect(replaced.cancellation == .replacement && replaced.lineItems[0].expiryTime == Self.anchor)
        let increase = try SubscriptionPurchase(Self.script(.priceIncrease).subscription)
        #expect(increase.lineItems[0].priceChange?.state == "OUTSTANDING")
        let installments = try SubscriptionPurchase(Self.script(.installments).subscription)
        #expect(installments.lineItems[0].installments?.initialCommittedPayments == 12)
        let pending = try SubscriptionPurchase(Self.script(.pending).subscription)
        #expect(pending.startTime == nil && pending.lineItems[0].latestSuccessfulOrderID == nil)
    }

    @Test func aRenewingSubscriptionRenewsAsTheClockMoves() throws {
        func item(_ days: Int64) throws -> SubscriptionPurchase.LineItem {
            try SubscriptionPurchase(Self.script(.renewing, now: Self.anchor + days * Self.day).subscription).lineItems[0]
        }
        let first = try item(0)
        #expect(first.expiryTime == Self.anchor + 25 * Self.day && !(first.latestSuccessfulOrderID ?? "").contains(".."))
        let second = try item(26)
        #expect(
            second.expiryTime == Self.anchor + 55 * Self.day
                && second.latestSuccessfulOrderID == first.latestSuccessfulOrderID! + "..0")
        #expect(try item(56).latestSuccessfulOrderID == first.latestSuccessfulOrderID! + "..1")
    }

    @Test func aVoidedPurchaseIsRevoked() throws {
        let voided = try SubscriptionPurchase(Self.script(.active, voidedAt: Self.anchor + Self.day).subscription)
        #expect(voided.state == .expired && voided.lineItems[0].expiryTime == Self.anchor + Self.day)
        #expect(voided.lineItems[0].autoRenewEnabled == false)
        let product = try ProductPurchase(Self.script(.lifetime, voidedAt: Self.anchor).product(consumed: false))
        #expect(product.state == .cancelled && product.lineItems[0].refundableQuantity == 0)
    }

    @Test func orderIDsAreStableAndGooglesShape() {
        let id = Self.script(.active).orderID
        #expect(id == Self.script(.active).orderID && id != Self.script(.trial).orderID)
        #expect(id.hasPrefix("GPA.33") && id.utf8.count == "GPA.3312-3456-7890-123456".utf8.count)
    }
}
