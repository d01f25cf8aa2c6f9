import Entitlements
import JSON
import Testing

@testable import GooglePlay

@Suite("Google Play: an answer as facts")
struct PlayFactsTests {
    static let read: Int64 = 1_795_000_000_000  // 2026-11-18T08:53:20Z, inside the sample's first period

    static func record(_ value: JSONValue, chain: String = "GPT.root", periodStart: Int64? = nil) throws -> PlayRecord {
        PlayRecord(
            packageName: "com.example.app", tokenReference: "GPT.token", chain: chain, seenAt: read,
            periodStart: periodStart, resource: .subscription(try SubscriptionPurchase(value)))
    }

    @Test func anActiveSubscriptionIsOnePeriodOfItsChainAndItsRenewalFacts() throws {
        let (purchases, renewals) = try Self.record(PlaySamples.active).facts
        #expect(
            purchases == [
                Purchase(
                    transactionID: "GPA.3391-1234-5678-90123", originalTransactionID: "GPT.root", productID: "pro_monthly",
                    purchaseDate: 1_793_527_200_250, originalPurchaseDate: 1_793_527_200_250, expiresDate: 1_796_119_200_250,
                    ownershipType: "PURCHASED", environment: .production, appAccountToken: "user-42", store: .playStore,
                    commerce: Commerce(
                        price: Price(milliunits: 9_990, currency: "EUR", source: .store), storefront: "DE",
                        transactionReason: "PURCHASE"))
            ])
        #expect(
            renewals == [
                Renewal(
                    originalTransactionID: "GPT.root", productID: "pro_monthly", autoRenewProductID: "pro_monthly",
                    autoRenewStatus: true, isInBillingRetryPeriod: false, environment: .production,
                    storeState: "SUBSCRIPTION_STATE_ACTIVE")
            ])
    }

    @Test func aRenewalOrderBeginsWhereThePeriodBeforeItEnded() throws {
        let renewed = PlaySamples.subscription(
            item: [
                "latestSuccessfulOrderId": .string("GPA.3391-1234-5678-90123..0"),
                "expiryTime": .string("2027-01-01T10:00:00.250Z"),
            ])
        let known = try Self.record(renewed, periodStart: 1_796_119_200_250).facts.purchases[0]
        #expect(known.transactionID == "GPA.3391-1234-5678-90123..0")
        #expect(known.purchaseDate == 1_796_119_200_250 && known.commerce.transactionReason == "RENEWAL")
        // Unknown: when receiptd read it, never after the period's end.
        #expect(try Self.record(renewed).facts.purchases[0].purchaseDate == Self.read)
    }

    @Test func offerPhasesAreTrialsIntroductoryPricesOrTheBasePrice() throws {
        func facts(_ phase: String, offer: String? = "intro") throws -> Purchase {
            var details: [String: JSONValue] = ["basePlanId": .string("monthly")]
            if let offer { details["offerId"] = .string(offer) }
            return try Self.record(
                PlaySamples.subscription(item: [
                    "offerPhase": .object(strings: [phase: .object([:])]), "offerDetails": .object(strings: details),
                ])
            ).facts.purchases[0]
        }
        let trial = try facts("freeTrial")
        #expect(trial.isTrialPeriod && !trial.isInIntroOfferPeriod)
        #expect(trial.commerce.price == Price(milliunits: 0, currency: "EUR", source: .store))
        #expect(trial.commerce.offerDiscountType == "FREE_TRIAL" && trial.commerce.offerType == 1)
        #expect(trial.promotionalOfferID == "intro")
        let intro = try facts("introductoryPrice")
        #expect(intro.isInIntroOfferPeriod && !intro.isTrialPeriod)
        #expect(intro.commerce.price == nil)  // Google states no introductory price here: none is made up
        let base = try facts("basePrice", offer: nil)
        #expect(!base.isTrialPeriod && !base.isInIntroOfferPeriod && base.commerce.offerType == nil)
        #expect(base.commerce.price?.milliunits == 9_990)
        #expect(try facts("prorationPeriod").commerce.price == nil)
    }

    @Test func eachStateIsStatedForTheDerivation() throws {
        func renewal(_ state: String, _ more: [String: JSONValue] = [:]) throws -> Renewal {
            var top = more
            top["subscriptionState"] = .string(state)
            return try Self.record(PlaySamples.subscription(top)).facts.renewals[0]
        }
        let grace = try renewal("SUBSCRIPTION_STATE_IN_GRACE_PERIOD")
        #expect(grace.gracePeriodExpiresDate == 1_796_119_200_250 && grace.isInBillingRetryPeriod == false)
        let hold = try renewal("SUBSCRIPTION_STATE_ON_HOLD")
        #expect(hold.isInBillingRetryPeriod == true && hold.gracePeriodExpiresDate == nil)
        let paused = try renewal(
            "SUBSCRIPTION_STATE_PAUSED", ["pausedStateContext": PlaySamples.json(#"{"autoResumeTime":"2027-01-01T00:00:00Z"}"#)])
        #expect(paused.storeState == "SUBSCRIPTION_STATE_PAUSED" && paused.autoResumeDate == 1_798_761_600_000)
        let canceled = try renewal(
            "SUBSCRIPTION_STATE_CANCELED", ["canceledStateContext": PlaySamples.json(#"{"userInitiatedCancellation":{}}"#)])
        #expect(canceled.expirationIntent == 1)
        let ended = try renewal(
            "SUBSCRIPTION_STATE_EXPIRED", ["canceledStateContext": PlaySamples.json(#"{"systemInitiatedCancellation":{}}"#)])
        #expect(ended.expirationIntent == 2)
    }

    @Test func autoRenewalADeferredReplacementAndAPriceIncreaseAreRenewalFacts() throws {
        let r = try Self.record(
            PlaySamples.subscription(item: [
                "autoRenewingPlan": PlaySamples.json(
                    """
                    {"autoRenewEnabled":false,"priceChangeDetails":{"priceChangeMode":"PRICE_INCREASE","priceChangeState":"OUTSTANDING"}}
                    """),
                "deferredItemReplacement": PlaySamples.json(#"{"productId":"pro_yearly"}"#),
            ])
        ).facts.renewals[0]
        #expect(r.autoRenewStatus == false && r.autoRenewProductID == "pro_yearly" && r.priceConsentStatus == "0")
        let confirmed = try Self.record(
            PlaySamples.subscription(item: [
                "autoRenewingPlan": PlaySamples.json(
                    #"{"autoRenewEnabled":true,"priceChangeDetails":{"priceChangeMode":"PRICE_INCREASE","priceChangeState":"CONFIRMED"}}"#
                )
            ])
        ).facts.renewals[0]
        #expect(confirmed.priceConsentStatus == "1")
        let optOut = try Self.record(
            PlaySamples.subscription(item: [
                "autoRenewingPlan": PlaySamples.json(
                    #"{"autoRenewEnabled":true,"priceChangeDetails":{"priceChangeMode":"OPT_OUT_PRICE_INCREASE"}}"#)
            ])
        ).facts.renewals[0]
        #expect(optOut.priceConsentStatus == nil && optOut.priceIncreaseStatus == "1")
    }

    @Test func anInstallmentPlanIsACommitment() throws {
        let p = try Self.record(
            PlaySamples.subscription(item: [
                "autoRenewingPlan": PlaySamples.json(
                    """
                    {"autoRenewEnabled":true,"recurringPrice":{"currencyCode":"EUR","units":"5"},
                     "installmentDetails":{"initialCommittedPaymentsCount":12,"remainingCommittedPaymentsCount":9}}
                    """)
            ])
        ).facts.purchases[0]
        #expect(p.commerce.billingPlanType == "INSTALLMENTS")
        #expect(p.commerce.commitment == Commitment(billingPeriodNumber: 3, totalBillingPeriods: 12, price: 60_000))
    }

    @Test func aTestPurchaseIsSandboxAndAPendingOneHasNoPeriodYet() throws {
        let test = try Self.record(PlaySamples.subscription(["testPurchase": .object([:])])).facts
        #expect(test.purchases[0].environment == .sandbox && test.renewals[0].environment == .sandbox)
        let pending = try Self.record(
            PlaySamples.subscription(
                ["subscriptionState": .string("SUBSCRIPTION_STATE_PENDING"), "startTime": .null],
                item: ["latestSuccessfulOrderId": .null])
        ).facts
        #expect(pending.purchases[0].transactionID == "GPT.token")
        #expect(pending.purchases[0].expiresDate == Self.read && pending.purchases[0].purchaseDate == Self.read)
        #expect(pending.renewals[0].storeState == "SUBSCRIPTION_STATE_PENDING")
    }

    @Test func anAddOnIsASubscriptionOfItsOwn() throws {
        guard case .object(var top) = PlaySamples.active, case .array(let items) = top[Identifier("lineItems")]! else {
            Issue.record("sample")
            return
        }
        guard case .object(var addOn) = items[0] else { return }
        addOn[Identifier("productId")] = .string("extra_storage")
        top[Identifier("lineItems")] = .array(items + [.object(addOn)])
        let (purchases, renewals) = try Self.record(.object(top)).facts
        #expect(purchases.map(\.originalTransactionID) == ["GPT.root", "GPT.root/extra_storage"])
        #expect(purchases.map(\.transactionID) == ["GPA.3391-1234-5678-90123", "GPA.3391-1234-5678-90123/extra_storage"])
        #expect(renewals.map(\.originalTransactionID) == ["GPT.root", "GPT.root/extra_storage"])
    }

    @Test func aOneTimePurchaseIsATransactionPerItem() throws {
        let record = PlayRecord(
            packageName: "com.example.app", tokenReference: "GPT.p", chain: "GPT.p", seenAt: Self.read,
            resource: .product(try ProductPurchase(PlaySamples.product)))
        let (purchases, renewals) = record.facts
        #expect(renewals.isEmpty)
        #expect(
            purchases == [
                Purchase(
                    transactionID: "GPA.3300-0000-1111-22222", originalTransactionID: "GPA.3300-0000-1111-22222",
                    productID: "coins_100", purchaseDate: 1_795_163_400_000, originalPurchaseDate: 1_795_163_400_000,
                    ownershipType: "PURCHASED", environment: .production, quantity: 2, appAccountToken: "user-7",
                    store: .playStore, commerce: Commerce(storefront: "US", transactionReason: "PURCHASE"))
            ])
        let cancelled = PlayRecord(
            packageName: "com.example.app", tokenReference: "GPT.p", chain: "GPT.p", seenAt: Self.read,
            resource: .product(
                try ProductPurchase(
                    PlaySamples.json(
                        #"{"purchaseStateContext":{"purchaseState":"CANCELLED"},"productLineItem":[{"productId":"gems"}]}"#))))
        #expect(cancelled.facts.purchases[0].cancellationDate == Self.read)
        var dated = cancelled
        dated.cancelledAt = Self.read + 5
        #expect(dated.facts.purchases[0].cancellationDate == Self.read + 5)
        #expect(cancelled.facts.purchases[0].transactionID == "GPT.p")
        let pending = PlayRecord(
            packageName: "com.example.app", tokenReference: "GPT.p", chain: "GPT.p", seenAt: Self.read,
            resource: .product(
                try ProductPurchase(
                    PlaySamples.json(
                        #"{"purchaseStateContext":{"purchaseState":"PENDING"},"productLineItem":[{"productId":"gems"}]}"#))))
        #expect(pending.facts.purchases.isEmpty)
    }
}
