import JSON
import Testing

@testable import GooglePlay

/// Google's resources as its reference documents them, built member by member so each test says
/// what it changes.
enum PlaySamples {
    static func json(_ text: String) -> JSONValue { try! JSONValue.parse(Array(text.utf8)) }

    /// An active monthly subscription in its first paid period, bought with an account id.
    static let active = json(
        """
        {"kind":"androidpublisher#subscriptionPurchaseV2","regionCode":"DE","startTime":"2026-11-01T10:00:00.250Z",
         "subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","latestOrderId":"GPA.3391-1234-5678-90123",
         "acknowledgementState":"ACKNOWLEDGEMENT_STATE_PENDING",
         "externalAccountIdentifiers":{"obfuscatedExternalAccountId":"user-42"},
         "lineItems":[{"productId":"pro_monthly","expiryTime":"2026-12-01T10:00:00.250Z",
           "latestSuccessfulOrderId":"GPA.3391-1234-5678-90123",
           "autoRenewingPlan":{"autoRenewEnabled":true,"recurringPrice":{"currencyCode":"EUR","units":"9","nanos":990000000}},
           "offerDetails":{"basePlanId":"monthly","offerTags":[]},"offerPhase":{"basePrice":{}}}]}
        """)

    /// `active` with members replaced (top level) and line item members replaced.
    static func subscription(_ top: [String: JSONValue] = [:], item: [String: JSONValue] = [:]) -> JSONValue {
        guard case .object(var members) = active, case .array(var items) = members[Identifier("lineItems")]!,
            case .object(var first) = items[0]
        else { fatalError() }
        for (k, v) in item { first[Identifier(k)] = v }
        items[0] = .object(first)
        members[Identifier("lineItems")] = .array(items)
        for (k, v) in top { members[Identifier(k)] = v }
        return .object(members)
    }

    static let product = json(
        """
        {"kind":"androidpublisher#productPurchaseV2","orderId":"GPA.3300-0000-1111-22222","regionCode":"US",
         "purchaseCompletionTime":"2026-11-20T08:30:00Z","acknowledgementState":"ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
         "purchaseStateContext":{"purchaseState":"PURCHASED"},"obfuscatedExternalAccountId":"user-7",
         "productLineItem":[{"productId":"coins_100","productOfferDetails":{"quantity":2,"refundableQuantity":2,
           "consumptionState":"CONSUMPTION_STATE_YET_TO_BE_CONSUMED","purchaseOptionId":"buy"}}]}
        """)
}

@Suite("Google Play: a subscription purchase read")
struct SubscriptionPurchaseTests {
    @Test func everyMemberReceiptdUsesIsRead() throws {
        let s = try SubscriptionPurchase(PlaySamples.active)
        #expect(s.state == .active)
        #expect(s.startTime == 1_793_527_200_250)
        #expect(s.regionCode == "DE")
        #expect(!s.isTest && !s.isAcknowledged)
        #expect(s.obfuscatedAccountID == "user-42")
        #expect(s.linkedPurchaseToken == nil && s.cancellation == nil && s.autoResumeTime == nil)
        #expect(s.lineItems.count == 1)
        let item = s.lineItems[0]
        #expect(item.productID == "pro_monthly")
        #expect(item.expiryTime == 1_796_119_200_250)
        #expect(item.latestSuccessfulOrderID == "GPA.3391-1234-5678-90123")
        #expect(item.autoRenewEnabled == true && !item.isPrepaid)
        #expect(item.recurringPrice == GoogleMoney(currency: "EUR", milliunits: 9_990))
        #expect(item.basePlanID == "monthly" && item.offerID == nil && item.offerPhase == .basePrice)
        #expect(s.raw == PlaySamples.active)
    }

    @Test func contextsAreRead() throws {
        let s = try SubscriptionPurchase(
            PlaySamples.subscription(
                [
                    "subscriptionState": .string("SUBSCRIPTION_STATE_PAUSED"), "testPurchase": .object([:]),
                    "acknowledgementState": .string("ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"),
                    "linkedPurchaseToken": .string("old-token"),
                    "pausedStateContext": PlaySamples.json(#"{"autoResumeTime":"2027-01-01T00:00:00Z"}"#),
                    "canceledStateContext": PlaySamples.json(
                        #"{"userInitiatedCancellation":{"cancelTime":"2026-11-10T00:00:00Z","cancelSurveyResult":{}}}"#),
                ],
                item: [
                    "autoRenewingPlan": PlaySamples.json(
                        """
                        {"autoRenewEnabled":false,"recurringPrice":{"currencyCode":"EUR","units":"9","nanos":990000000},
                         "priceChangeDetails":{"newPrice":{"currencyCode":"EUR","units":"12"},"priceChangeMode":"PRICE_INCREASE",
                           "priceChangeState":"OUTSTANDING","expectedNewPriceChargeTime":"2027-02-01T00:00:00Z"},
                         "installmentDetails":{"initialCommittedPaymentsCount":12,"remainingCommittedPaymentsCount":9}}
                        """),
                    "offerDetails": PlaySamples.json(#"{"basePlanId":"monthly","offerId":"trial-7d"}"#),
                    "offerPhase": PlaySamples.json(#"{"freeTrial":{}}"#),
                    "deferredItemReplacement": PlaySamples.json(#"{"productId":"pro_yearly"}"#),
                ]))
        #expect(s.state == .paused && s.isTest && s.isAcknowledged)
        #expect(s.linkedPurchaseToken == "old-token")
        #expect(s.autoResumeTime == 1_798_761_600_000)
        #expect(s.cancellation == .user && s.cancelTime == 1_794_268_800_000)
        let item = s.lineItems[0]
        #expect(item.autoRenewEnabled == false)
        #expect(
            item.priceChange
                == .init(
                    newPrice: GoogleMoney(currency: "EUR", milliunits: 12_000), mode: "PRICE_INCREASE", state: "OUTSTANDING",
                    expectedNewPriceChargeTime: 1_801_440_000_000))
        #expect(
            item.installments == .init(initialCommittedPayments: 12, remainingCommittedPayments: 9, pendingCancellation: false))
        #expect(item.offerID == "trial-7d" && item.offerPhase == .freeTrial)
        #expect(item.deferredReplacementProductID == "pro_yearly")
    }

    @Test func eachCancellationIsNamed() throws {
        for (member, expected) in [
            ("systemInitiatedCancellation", SubscriptionPurchase.Cancellation.system),
            ("developerInitiatedCancellation", .developer), ("replacementCancellation", .replacement),
        ] {
            let s = try SubscriptionPurchase(
                PlaySamples.subscription(["canceledStateContext": .object(strings: [member: .object([:])])]))
            #expect(s.cancellation == expected)
        }
    }

    @Test func aPrepaidPlanHasNoAutoRenewal() throws {
        let s = try SubscriptionPurchase(
            PlaySamples.subscription(item: ["autoRenewingPlan": .null, "prepaidPlan": PlaySamples.json("{}")]))
        #expect(s.lineItems[0].isPrepaid)
        // `.null` stands for the member's absence here: Google leaves it out.
        let absent = try SubscriptionPurchase(
            PlaySamples.json(
                #"{"subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","lineItems":[{"productId":"p","prepaidPlan":{}}]}"#))
        #expect(absent.lineItems[0].autoRenewEnabled == nil && absent.lineItems[0].isPrepaid)
    }

    @Test func anUnknownStateIsUnspecifiedNotAnError() throws {
        let s = try SubscriptionPurchase(
            PlaySamples.subscription(["subscriptionState": .string("SUBSCRIPTION_STATE_NEW_IN_2027")]))
        #expect(s.state == .unspecified)
    }

    @Test func whatIsNotASubscriptionPurchaseIsRefusedSayingWhy() {
        let cases: [(JSONValue, String)] = [
            (.array([]), "not a JSON object"),
            (PlaySamples.subscription(["kind": .string("androidpublisher#productPurchaseV2")]), "kind"),
            (PlaySamples.subscription(["subscriptionState": .null]), "no subscriptionState"),
            (PlaySamples.subscription(["lineItems": .array([])]), "no line items"),
            (PlaySamples.subscription(item: ["productId": .null]), "no productId"),
            (PlaySamples.subscription(["startTime": .string("yesterday")]), "startTime"),
            (PlaySamples.subscription(item: ["expiryTime": .string("2026-12-01")]), "expiryTime"),
        ]
        for (value, words) in cases {
            #expect {
                _ = try SubscriptionPurchase(value)
            } throws: { error in
                guard case .unexpectedAnswer(let why) = error as? GooglePlayError else { return false }
                return why.contains(words)
            }
        }
    }

    @Test func aPendingPurchaseMayNameNoItemYet() throws {
        let s = try SubscriptionPurchase(
            PlaySamples.json(#"{"subscriptionState":"SUBSCRIPTION_STATE_PENDING","lineItems":[]}"#))
        #expect(s.state == .pending && s.lineItems.isEmpty && s.startTime == nil)
    }
}
