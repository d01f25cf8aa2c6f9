import Entitlements
import Foundation
import ReceiptTesting
import Testing

@testable import AppStore

private func fixture(_ name: String) throws -> [UInt8] {
    let url = Fixtures.url("AppStore/\(name)")
    return Array(try Data(contentsOf: url))
}

@Suite("verifyReceipt response")
struct VerifyReceiptResponseTests {
    @Test func readsARealisticAnswer() throws {
        let r = try VerifyReceiptResponse(json: fixture("verify-receipt-response.json"))
        #expect(r.status == .valid)
        #expect(r.environment == .sandbox || r.environment == .production)
        let receipt = try #require(r.receipt)
        #expect(!receipt.bundleID.isEmpty)
        #expect(receipt.appItemID != nil)
        // 42 in_app items and 1 latest_receipt_info item, deduplicated by transaction_id.
        let ids = Set(r.transactions.map(\.transactionID))
        #expect(ids.count == r.transactions.count)
        #expect(r.transactions.count >= 42)
        let latest = try #require(r.transactions.first { $0.transactionID == "1000000767477815" })
        #expect(latest.productID == "one_month_subscription")
        #expect(latest.originalTransactionID == "1000000723811158")
        #expect(latest.expiresDateMs == 1_611_147_900_000)
        #expect(latest.ownershipType == "PURCHASED")
        #expect(latest.subscriptionGroupID == "20667927")
        #expect(latest.isTrialPeriod == false)
        let renewal = try #require(r.pendingRenewalInfo.first)
        #expect(renewal.originalTransactionID == "1000000723811158")
        #expect(renewal.autoRenewStatus == false)
        #expect(renewal.expirationIntent == 1)
        #expect(renewal.isInBillingRetryPeriod == false)
        #expect(r.latestReceipt?.isEmpty == false)
    }

    @Test func latestReceiptInfoWinsOverInAppForTheSameTransaction() throws {
        let json = #"""
            {"status":0,"receipt":{"bundle_id":"com.x","in_app":[{"transaction_id":"1","product_id":"p","purchase_date_ms":"5"}]},
             "latest_receipt_info":[{"transaction_id":"1","product_id":"p","purchase_date_ms":"5","subscription_group_identifier":"g",
               "is_upgraded":"true","cancellation_date_ms":"9","cancellation_reason":"1"}]}
            """#
        let r = try VerifyReceiptResponse(json: Array(json.utf8))
        #expect(r.transactions.count == 1)
        #expect(r.transactions[0].subscriptionGroupID == "g")
        #expect(r.transactions[0].isUpgraded)
        #expect(r.transactions[0].cancellationDateMs == 9)
        #expect(r.transactions[0].originalTransactionID == "1")
    }

    @Test(arguments: [
        (#"{"status":21104,"is_retryable":true}"#, true), (#"{"status":21104,"is-retryable":1}"#, true),
        (#"{"status":21104,"is_retryable":"false"}"#, false), (#"{"status":"21104"}"#, false),
    ])
    func theRetryFlagHasTwoSpellings(json: String, retryable: Bool) throws {
        let r = try VerifyReceiptResponse(json: Array(json.utf8))
        #expect(r.status.rawValue == 21104)
        #expect(r.isRetryable == retryable)
    }

    @Test(arguments: ["", "[]", "{}", #"{"status":"x"}"#, "<html>"])
    func answersWithoutAStatusAreMalformed(json: String) {
        #expect(throws: VerifyReceiptResponse.Malformed.self) { try VerifyReceiptResponse(json: Array(json.utf8)) }
    }
}
