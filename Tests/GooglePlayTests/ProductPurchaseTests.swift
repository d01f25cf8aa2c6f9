import JSON
import Testing

@testable import GooglePlay

@Suite("Google Play: a one-time product purchase read")
struct ProductPurchaseTests {
    @Test func everyMemberReceiptdUsesIsRead() throws {
        let p = try ProductPurchase(PlaySamples.product)
        #expect(p.state == .purchased)
        #expect(p.orderID == "GPA.3300-0000-1111-22222")
        #expect(p.completionTime == 1_795_163_400_000)
        #expect(p.regionCode == "US" && !p.isTest && p.isAcknowledged)
        #expect(p.obfuscatedAccountID == "user-7")
        #expect(
            p.lineItems == [
                .init(
                    productID: "coins_100", quantity: 2, refundableQuantity: 2, isConsumed: false, offerID: nil,
                    purchaseOptionID: "buy")
            ])
    }

    @Test func pendingCancelledAndTestPurchasesAreTold() throws {
        let pending = try ProductPurchase(
            PlaySamples.json(
                """
                {"purchaseStateContext":{"purchaseState":"PENDING"},"testPurchaseContext":{"fopType":"TEST"},
                 "productLineItem":[{"productId":"gems","productOfferDetails":{"consumptionState":"CONSUMPTION_STATE_CONSUMED"}}]}
                """))
        #expect(pending.state == .pending && pending.isTest && pending.orderID == nil && pending.completionTime == nil)
        #expect(pending.lineItems[0].isConsumed && !pending.isAcknowledged)
        let cancelled = try ProductPurchase(
            PlaySamples.json(#"{"purchaseStateContext":{"purchaseState":"CANCELLED"},"productLineItem":[{"productId":"gems"}]}"#))
        #expect(cancelled.state == .cancelled)
    }

    @Test func whatIsNotAProductPurchaseIsRefused() {
        for text in [
            "[]", #"{"kind":"androidpublisher#subscriptionPurchaseV2","productLineItem":[{"productId":"a"}]}"#,
            #"{"productLineItem":[]}"#, #"{"productLineItem":[{"quantity":1}]}"#,
            #"{"purchaseCompletionTime":"soon","productLineItem":[{"productId":"a"}]}"#,
        ] {
            #expect(throws: GooglePlayError.self) { _ = try ProductPurchase(PlaySamples.json(text)) }
        }
    }
}
