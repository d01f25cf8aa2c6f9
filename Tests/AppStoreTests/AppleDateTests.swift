import Foundation
import JSON
import Testing

@testable import AppStore

/// A date Apple's JSON carries is a date between 1970 and 9999, or the answer is refused.
@Suite struct AppleDateTests {
    static let edges = [
        #""9223372036854775807""#, "9223372036854775807", "9223372036854775296", #""9223372036854775808""#, "-1",
        #""-9223372036854775808""#, "1e300", #""tomorrow""#, "253402300800000", "true",
    ]

    @Test(arguments: ["purchase_date_ms", "original_purchase_date_ms", "expires_date_ms", "cancellation_date_ms"], edges)
    func transactionDates(_ field: String, _ value: String) {
        let json = #"{"status":0,"latest_receipt_info":[{"transaction_id":"1","product_id":"p","\#(field)":\#(value)}]}"#
        #expect(throws: VerifyReceiptResponse.Malformed.self) { try VerifyReceiptResponse(json: Array(json.utf8)) }
        do {
            _ = try VerifyReceiptResponse(json: Array(json.utf8))
        } catch {
            #expect(error.outOfRange?.field == field)
        }
    }

    @Test(arguments: ["receipt_creation_date_ms", "request_date_ms", "original_purchase_date_ms", "expiration_date_ms"], edges)
    func receiptDates(_ field: String, _ value: String) {
        let json = #"{"status":0,"receipt":{"bundle_id":"com.x","\#(field)":\#(value)}}"#
        #expect(throws: VerifyReceiptResponse.Malformed.self) { try VerifyReceiptResponse(json: Array(json.utf8)) }
    }

    @Test(arguments: edges) func renewalAndNotificationDates(_ value: String) throws {
        let renewal =
            #"{"status":0,"pending_renewal_info":[{"original_transaction_id":"1","grace_period_expires_date_ms":\#(value)}]}"#
        #expect(throws: VerifyReceiptResponse.Malformed.self) { try VerifyReceiptResponse(json: Array(renewal.utf8)) }
        let v1 = try JSONValue.parse(Array(#"{"notification_type":"RENEWAL","auto_renew_status_change_date_ms":\#(value)}"#.utf8))
        #expect(throws: AppleDate.OutOfRange.self) { try NotificationV1(v1) }
        let nested = try JSONValue.parse(
            Array(#"{"notification_type":"RENEWAL","unified_receipt":\#(renewal)}"#.utf8))
        #expect(throws: AppleDate.OutOfRange.self) { try NotificationV1(nested) }
    }

    @Test func absentEmptyAndInRangeDatesRead() throws {
        let json = #"""
            {"status":0,"latest_receipt_info":[{"transaction_id":"1","product_id":"p","purchase_date_ms":"0",
             "expires_date_ms":253402300799999,"cancellation_date_ms":"","original_purchase_date_ms":null}]}
            """#
        let t = try #require(try VerifyReceiptResponse(json: Array(json.utf8)).transactions.first)
        #expect(t.purchaseDateMs == 0 && t.expiresDateMs == 253_402_300_799_999)
        #expect(t.cancellationDateMs == nil && t.originalPurchaseDateMs == nil)
    }
}
