import Entitlements
import JSON
import Testing

@testable import StoreCalls

@Suite("Consumption information from stored facts")
struct AnswerConsumptionRequestTests {
    let day: Int64 = 86_400_000
    let settings = AnswerConsumptionRequest.Settings(enabled: true)

    func purchase(expires: Int64?) -> Purchase {
        Purchase(transactionID: "2", originalTransactionID: "1", productID: "monthly", purchaseDate: 0, expiresDate: expires)
    }

    @Test func aHeldSubscriptionIsDeliveredAndConsumedByTheShareOfItsPeriodElapsed() {
        let body = AnswerConsumptionRequest.body(
            purchase: purchase(expires: 30 * day), holder: "u", requestedAt: 10 * day, settings: settings)
        #expect(body["customerConsented"] == .bool(true) && body["sampleContentProvided"] == .bool(false))
        #expect(body["deliveryStatus"]?.string == "DELIVERED")
        #expect(body["consumptionPercentage"]?.int64 == 33_333)
        #expect(body["refundPreference"] == nil)
        // Before the period (a clock skew) and after its end: clamped.
        #expect(
            AnswerConsumptionRequest.body(
                purchase: purchase(expires: 30 * day), holder: "u", requestedAt: -5, settings: settings)[
                    "consumptionPercentage"]?.int64 == 0)
        #expect(
            AnswerConsumptionRequest.body(
                purchase: purchase(expires: 30 * day), holder: "u", requestedAt: 99 * day, settings: settings)[
                    "consumptionPercentage"]?.int64 == 100_000)
    }

    @Test func whatReceiptdCannotSeeIsLeftOutAndAnUnheldPurchaseIsUndelivered() {
        let consumable = AnswerConsumptionRequest.body(
            purchase: purchase(expires: nil), holder: "u", requestedAt: day, settings: settings)
        #expect(consumable["consumptionPercentage"] == nil && consumable["deliveryStatus"]?.string == "DELIVERED")
        let unheld = AnswerConsumptionRequest.body(
            purchase: purchase(expires: nil), holder: nil, requestedAt: day, settings: settings)
        #expect(unheld["deliveryStatus"]?.string == "UNDELIVERED_OTHER")
        let unknown = AnswerConsumptionRequest.body(purchase: nil, holder: nil, requestedAt: day, settings: settings)
        #expect(unknown["deliveryStatus"]?.string == "UNDELIVERED_OTHER")
        let configured = AnswerConsumptionRequest.body(
            purchase: nil, holder: nil, requestedAt: day,
            settings: .init(enabled: true, sampleContentProvided: true, refundPreference: "DECLINE"))
        #expect(configured["sampleContentProvided"] == .bool(true) && configured["refundPreference"]?.string == "DECLINE")
    }
}
