import JSON
import ReceiptTesting
import Testing

@testable import RevenueCatProtocol

/// CustomerInfo from receiptd's document: field by field, as both SDKs' decoders take it
/// (SDKConformance), and naming no store identifier.
@Suite("CustomerInfo")
struct CustomerInfoTests {
    /// 2026-09-21T14:13:20.000Z
    let now: Int64 = 1_790_000_000_000

    @Test func somebodyNothingIsKnownOfIsAnEmptyCustomerBothSDKsDecode() throws {
        let info = CustomerInfo.json(
            appUserID: "$RCAnonymousID:0123456789abcdef0123456789abcdef", document: nil, firstSeen: now, now: now)
        #expect(
            String(decoding: info.jsonBytes, as: UTF8.self)
                == #"{"request_date":"2026-09-21T14:13:20.000Z","request_date_ms":1790000000000,"subscriber":{"entitlements":{},"first_seen":"2026-09-21T14:13:20.000Z","management_url":null,"non_subscriptions":{},"original_app_user_id":"$RCAnonymousID:0123456789abcdef0123456789abcdef","original_application_version":null,"original_purchase_date":null,"other_purchases":{},"subscriptions":{}}}"#
        )
        for sdk in SDKConformance.SDK.allCases { #expect(SDKConformance.customerInfo(info, sdk: sdk) == []) }
    }

    /// A document as receiptd renders it: an active subscription, a refunded one whose period
    /// has not ended, one in its grace period, two lifetime purchases bought at one instant and a
    /// promotion.
    let document = #"""
        {"aliases":[],"app_user_id":"u","entitlements":{
          "premium":{"active":true,"environment":"sandbox","expires_at":"2026-10-16T14:13:20.000Z","grace_period_expires_at":null,"original_transaction_id":"1001","ownership":"purchased","period_type":"trial","product_id":"monthly","state":"active","store":"app_store","will_renew":true},
          "refunded":{"active":false,"environment":"production","expires_at":"2026-10-01T00:00:00.000Z","grace_period_expires_at":null,"original_transaction_id":"2001","ownership":"purchased","period_type":"normal","product_id":"yearly","state":"refunded","store":"app_store","will_renew":false},
          "graced":{"active":true,"environment":"production","expires_at":"2026-09-20T00:00:00.000Z","grace_period_expires_at":"2026-09-30T00:00:00.000Z","original_transaction_id":"GPA.3-1","ownership":"purchased","period_type":"normal","product_id":"play_sub","state":"grace_period","store":"play_store","will_renew":true},
          "forever":{"active":true,"environment":"production","expires_at":null,"grace_period_expires_at":null,"original_transaction_id":"3002","ownership":"purchased","period_type":"normal","product_id":"lifetime","state":"active","store":"app_store","will_renew":false},
          "gift":{"active":true,"environment":null,"expires_at":"2026-12-01T00:00:00.000Z","grace_period_expires_at":null,"original_transaction_id":null,"ownership":"promotional","period_type":"promotional","product_id":null,"promotion_id":"7","state":"active","store":"promotional","will_renew":false}},
        "non_subscriptions":{"lifetime":[
          {"active":true,"environment":"production","expires_at":null,"ownership":"purchased","price":{"amount":"4.990","currency":"EUR","source":"store"},"product_type":"non_consumable","purchased_at":"2026-09-01T00:00:00.000Z","quantity":1,"refunded_at":null,"store":"app_store","transaction_id":"3002"},
          {"active":true,"environment":"production","expires_at":null,"ownership":"purchased","price":null,"product_type":"non_consumable","purchased_at":"2026-09-01T00:00:00.000Z","quantity":1,"refunded_at":null,"store":"app_store","transaction_id":"3001"}]},
        "subscriptions":{
          "monthly":{"active":true,"billing_issue_detected_at":null,"environment":"sandbox","expiration_reason":null,"expires_at":"2026-10-16T14:13:20.000Z","grace_period_expires_at":null,"offer":null,"original_purchased_at":"2026-08-17T14:13:20.000Z","original_transaction_id":"1001","ownership":"family_shared","period_type":"trial","price":{"amount":"9.990","currency":"USD","source":"store"},"price_increase":null,"product_id":"monthly","purchased_at":"2026-09-16T14:13:20.000Z","refunded_at":null,"renews_into":null,"state":"active","store":"app_store","store_transaction_id":"1002","unsubscribe_detected_at":null,"will_renew":true},
          "yearly":{"active":false,"billing_issue_detected_at":null,"environment":"production","expiration_reason":null,"expires_at":"2026-10-01T00:00:00.000Z","grace_period_expires_at":null,"offer":null,"original_purchased_at":null,"original_transaction_id":"2001","ownership":"purchased","period_type":"normal","price":null,"price_increase":null,"product_id":"yearly","purchased_at":"2025-10-01T00:00:00.000Z","refunded_at":"2026-09-10T00:00:00.000Z","renews_into":null,"state":"refunded","store":"app_store","store_transaction_id":"2001","unsubscribe_detected_at":null,"will_renew":false},
          "play_sub":{"active":true,"billing_issue_detected_at":"2026-09-20T00:00:00.000Z","environment":"production","expiration_reason":null,"expires_at":"2026-09-20T00:00:00.000Z","grace_period_expires_at":"2026-09-30T00:00:00.000Z","offer":null,"original_purchased_at":"2026-08-20T00:00:00.000Z","original_transaction_id":"GPA.3-1","ownership":"purchased","period_type":"normal","price":null,"price_increase":null,"product_id":"play_sub","purchased_at":"2026-08-20T00:00:00.000Z","refunded_at":null,"renews_into":null,"state":"grace_period","store":"play_store","store_transaction_id":"GPA.3-1..0","unsubscribe_detected_at":null,"will_renew":true}},
        "request_date":"2026-09-21T14:13:20.000Z","version":3}
        """#

    @Test func everyEntitlementNamesAProductTheSDKsFindAndSaysWhatReceiptdDecided() throws {
        let info = CustomerInfo.json(appUserID: "u", document: try JSONValue.parse(Array(document.utf8)), firstSeen: 5, now: now)
        for sdk in SDKConformance.SDK.allCases { #expect(SDKConformance.customerInfo(info, sdk: sdk) == []) }
        let subscriber = try #require(info["subscriber"])
        let entitlements = try #require(subscriber["entitlements"])
        // Active: to its period's end; in grace: to the grace period's end; refunded before its
        // end: ends when refunded; lifetime: null; a promotion: a product of its own.
        #expect(entitlements["premium"]?["expires_date"] == .string("2026-10-16T14:13:20.000Z"))
        #expect(entitlements["premium"]?["purchase_date"] == .string("2026-09-16T14:13:20.000Z"))
        #expect(entitlements["graced"]?["expires_date"] == .string("2026-09-30T00:00:00.000Z"))
        #expect(entitlements["refunded"]?["expires_date"] == .string("2026-09-10T00:00:00.000Z"))
        #expect(entitlements["forever"]?["expires_date"] == .null)
        #expect(entitlements["forever"]?["product_identifier"] == .string("lifetime"))
        #expect(entitlements["gift"]?["product_identifier"] == .string("rc_promo_gift"))
        let subscriptions = try #require(subscriber["subscriptions"])
        #expect(subscriptions["rc_promo_gift"]?["store"] == .string("promotional"))
        #expect(subscriptions["rc_promo_gift"]?["expires_date"] == .string("2026-12-01T00:00:00.000Z"))
        let monthly = try #require(subscriptions["monthly"])
        #expect(monthly["is_sandbox"] == .bool(true) && monthly["period_type"] == .string("trial"))
        #expect(monthly["ownership_type"] == .string("FAMILY_SHARED"))
        #expect(String(decoding: monthly["price"]!.jsonBytes, as: UTF8.self) == #"{"amount":9.99,"currency":"USD"}"#)
        // Android needs original_purchase_date: the purchase date where receiptd knows no other.
        #expect(subscriptions["yearly"]?["original_purchase_date"] == .string("2025-10-01T00:00:00.000Z"))
        #expect(subscriptions["play_sub"]?["billing_issues_detected_at"] == .string("2026-09-20T00:00:00.000Z"))
        // The latest subscription bought decides where the customer manages it.
        #expect(subscriber["management_url"] == .string("https://apps.apple.com/account/subscriptions"))
        // Oldest first, as the SDKs read the last as the latest; two at one instant, two ids.
        guard case .array(let lifetime)? = subscriber["non_subscriptions"]?["lifetime"] else {
            Issue.record("no lifetime purchases")
            return
        }
        #expect(lifetime.count == 2 && lifetime[0]["id"] != lifetime[1]["id"])
        #expect(lifetime[1]["price"]?["amount"] == JSONValue.number(4.99, text: "4.99"))
        // No store identifier: the public key reads this for anyone.
        let text = String(decoding: info.jsonBytes, as: UTF8.self)
        for id in ["1001", "1002", "2001", "3001", "3002", "GPA.3-1"] { #expect(!text.contains(id), "\(id) is in \(text)") }
        #expect(!text.contains("transaction_id"))
    }

    /// What the listener sends (the `subscriber` member written once, then the request's time
    /// around it) is byte for byte the whole answer written at once.
    @Test func theAnswerWrittenAroundAKeptSubscriberIsTheAnswer() throws {
        let parsed = try JSONValue.parse(Array(document.utf8))
        let whole = CustomerInfo.json(appUserID: "u", document: parsed, firstSeen: 5, now: now)
        let kept = CustomerInfo.subscriber(appUserID: "u", document: parsed, firstSeen: 5, now: now)
        #expect(CustomerInfo.body(subscriber: kept.json.jsonBytes, now: now) == whole.jsonBytes)
        // A promotion's product has no purchase time of its own: the request's, so never kept.
        #expect(kept.dependsOnNow)
    }

    @Test func theSameDocumentGivesTheSameIDs() throws {
        let parsed = try JSONValue.parse(Array(document.utf8))
        let one = CustomerInfo.json(appUserID: "u", document: parsed, firstSeen: 5, now: now)
        let two = CustomerInfo.json(appUserID: "u", document: parsed, firstSeen: 5, now: now + 60_000)
        #expect(one["subscriber"]?["non_subscriptions"] == two["subscriber"]?["non_subscriptions"])
    }

    /// The decoder is no stricter than the SDKs (their own fixtures pass), and it can fail.
    @Test(arguments: ["CustomerInfo.json", "CustomerInfo-v2.json"])
    func revenueCatsOwnFixturesPassTheConformanceDecoder(file: String) throws {
        let fixture = try JSONValue.parse(Fixtures.bytes("RevenueCat/" + file))
        for sdk in SDKConformance.SDK.allCases { #expect(SDKConformance.customerInfo(fixture, sdk: sdk) == []) }
        guard case .object(var top) = fixture, case .object(var subscriber)? = top["subscriber"] else { return }
        subscriber["non_subscriptions"] = nil
        top["subscriber"] = .object(subscriber)
        // Android requires the object; iOS reads it as empty.
        let missing = "subscriber.non_subscriptions must be an object"
        #expect(SDKConformance.customerInfo(.object(top), sdk: .android).contains("android: " + missing))
        #expect(!SDKConformance.customerInfo(.object(top), sdk: .ios).contains("ios: " + missing))
    }

    @Test func amountsAreTheDecimalTextNeverARoundedBinaryNumber() {
        #expect(CustomerInfo.decimalNumber("9.990") == .number(9.99, text: "9.99"))
        #expect(CustomerInfo.decimalNumber("0.000") == .number(0, text: "0"))
        #expect(CustomerInfo.decimalNumber("1200") == .number(1200, text: "1200"))
        #expect(CustomerInfo.decimalNumber("1234567.891") == .number(1234567.891, text: "1234567.891"))
        #expect(CustomerInfo.decimalNumber("1.2.3") == nil)
        #expect(CustomerInfo.decimalNumber("-1") == nil)
        #expect(CustomerInfo.decimalNumber("") == nil)
    }
}
