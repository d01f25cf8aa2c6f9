import AppStore
import DatabaseEngine
import Entitlements
import Foundation
import HTTPServer
import JSON
import Logging
import ReceiptTesting
import Storage
import Testing
import X509

@testable import ReceiptCore
@testable import ReceiptService

private let signer = TestPKI.signer
private let testRoot = TestPKI.root

private let day: Int64 = 86_400_000
private let bundle = "com.example.app"
private var wallClock: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

/// receiptd with Apple's test root as trust anchor and app 1234 configured.
private func withService(policy: String = "transfer", _ body: (Int, String) async throws -> Void) async throws {
    try await ReceiptTesting.withService(
        policy: policy, entitlements: ["premium": ["monthly", "premium_monthly", "basic_monthly", "lifetime"]],
        signedData: .init(roots: [testRoot], appAppleIDs: [1234]), body)
}

private func json(_ object: Any) -> JSONValue {
    try! JSONValue.parse(Array(try! JSONSerialization.data(withJSONObject: object)))
}

/// A V2 notification as Apple would send it, its transaction and renewal info signed on their own.
struct V2 {
    var type: String
    var subtype: String? = nil
    var transaction: [String: Any]? = nil
    var renewal: [String: Any]? = nil
    var status: Int? = nil
    /// Replaces `data` (summary, externalPurchaseToken, appData).
    var container: (String, [String: Any])? = nil
    var uuid = UUID().uuidString
    var environment = "Sandbox"

    /// `{"signedPayload": …}`, signed at `signedDate`.
    func body(signedDate: Int64) throws -> String {
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate,
        ]
        if let subtype { payload["subtype"] = subtype }
        if let (key, value) = container {
            payload[key] = value
        } else {
            var data: [String: Any] = ["bundleId": bundle, "environment": environment, "bundleVersion": "1"]
            if environment == "Production" { data["appAppleId"] = 1234 }
            if let status { data["status"] = status }
            if var t = transaction {
                t["signedDate"] = signedDate
                data["signedTransactionInfo"] = try signer.sign(json(t))
            }
            if var r = renewal {
                r["signedDate"] = signedDate
                data["signedRenewalInfo"] = try signer.sign(json(r))
            }
            payload["data"] = data
        }
        let signed = try signer.sign(json(payload))
        return String(decoding: json(["signedPayload": signed]).jsonBytes, as: UTF8.self)
    }
}

private func transaction(
    _ id: String, original: String, product: String = "monthly", from: Int64, until: Int64?, _ extra: [String: Any] = [:]
) -> [String: Any] {
    var t: [String: Any] = [
        "transactionId": id, "originalTransactionId": original, "bundleId": bundle, "productId": product,
        "purchaseDate": from, "originalPurchaseDate": from, "type": "Auto-Renewable Subscription",
        "inAppOwnershipType": "PURCHASED", "environment": "Sandbox", "webOrderLineItemId": "w" + id,
    ]
    if let until { t["expiresDate"] = until }
    return t.merging(extra) { $1 }
}

private func renewal(original: String, product: String = "monthly", autoRenew: Int = 1, _ extra: [String: Any] = [:])
    -> [String: Any]
{
    [
        "originalTransactionId": original, "productId": product, "autoRenewProductId": product, "autoRenewStatus": autoRenew,
        "environment": "Sandbox",
    ].merging(extra) { $1 }
}

private func subscription(_ document: [String: Any], _ product: String) -> [String: Any]? {
    (document["subscriptions"] as? [String: Any])?[product] as? [String: Any]
}

@Suite("Notifications API", .serialized)
struct NotificationProcessorTests {
    /// One row per V2 type and subtype (Docs/apple-protocols.md §3.3–3.4): what happened before, the
    /// notification, and what the subscriber document must then say.
    struct Row {
        var name: String
        var before: [V2] = []
        var notification: V2
        var outcome: String = "applied"
        var check: ([String: Any]) -> Bool
    }

    static func rows(now: Int64) -> [Row] {
        let (past, future) = (now - 10 * day, now + 20 * day)
        let (lapsedFrom, lapsedUntil) = (now - 40 * day, now - 10 * day)
        func active(_ o: String, _ extra: [String: Any] = [:]) -> [String: Any] {
            transaction(o + "-1", original: o, from: past, until: future, extra)
        }
        func lapsed(_ o: String) -> [String: Any] { transaction(o + "-0", original: o, from: lapsedFrom, until: lapsedUntil) }
        func state(_ product: String, _ state: String, _ active: Bool) -> ([String: Any]) -> Bool {
            { d in
                subscription(d, product)?["state"] as? String == state && subscription(d, product)?["active"] as? Bool == active
            }
        }
        func subscribed(_ o: String) -> V2 {
            V2(type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: active(o), renewal: renewal(original: o), status: 1)
        }
        return [
            Row(
                name: "SUBSCRIBED/INITIAL_BUY",
                notification: V2(
                    type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: active("o1"), renewal: renewal(original: "o1"),
                    status: 1),
                // The client's signed transaction told the period; the notification adds its renewal info.
                check: { d in state("monthly", "active", true)(d) && subscription(d, "monthly")?["will_renew"] as? Bool == true }),
            Row(
                name: "SUBSCRIBED/RESUBSCRIBE",
                before: [
                    V2(
                        type: "EXPIRED", subtype: "VOLUNTARY", transaction: lapsed("o2"),
                        renewal: renewal(original: "o2", autoRenew: 0))
                ],
                notification: V2(
                    type: "SUBSCRIBED", subtype: "RESUBSCRIBE", transaction: active("o2"), renewal: renewal(original: "o2"),
                    status: 1),
                check: state("monthly", "active", true)),
            Row(
                name: "DID_RENEW",
                before: [
                    V2(type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: lapsed("o3"), renewal: renewal(original: "o3"))
                ],
                notification: V2(type: "DID_RENEW", transaction: active("o3"), renewal: renewal(original: "o3"), status: 1),
                check: { d in
                    state("monthly", "active", true)(d)
                        && (subscription(d, "monthly")?["expires_at"] as? String)?.isEmpty == false
                }),
            Row(
                name: "DID_RENEW/BILLING_RECOVERY",
                before: [
                    V2(
                        type: "DID_FAIL_TO_RENEW", transaction: lapsed("o4"),
                        renewal: renewal(original: "o4", ["isInBillingRetryPeriod": true, "expirationIntent": 2]), status: 3)
                ],
                notification: V2(
                    type: "DID_RENEW", subtype: "BILLING_RECOVERY", transaction: active("o4"),
                    renewal: renewal(original: "o4", ["isInBillingRetryPeriod": false]), status: 1),
                check: state("monthly", "active", true)),
            Row(
                name: "DID_CHANGE_RENEWAL_PREF/UPGRADE",
                before: [subscribed("o5")],
                notification: V2(
                    type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE",
                    transaction: transaction(
                        "o5-2", original: "o5", product: "premium_monthly", from: now - day, until: now + 29 * day),
                    renewal: renewal(original: "o5", product: "premium_monthly"), status: 1),
                check: { d in state("premium_monthly", "active", true)(d) && state("monthly", "upgraded", false)(d) }),
            Row(
                name: "DID_CHANGE_RENEWAL_PREF/DOWNGRADE",
                before: [subscribed("o6")],
                notification: V2(
                    type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE",
                    renewal: renewal(original: "o6", ["autoRenewProductId": "basic_monthly"]), status: 1),
                check: { d in
                    state("monthly", "active", true)(d)
                        && subscription(d, "monthly")?["renews_into"] as? String == "basic_monthly"
                }),
            Row(
                name: "DID_CHANGE_RENEWAL_PREF (downgrade cancelled)",
                before: [
                    subscribed("o7"),
                    V2(
                        type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE",
                        renewal: renewal(original: "o7", ["autoRenewProductId": "basic_monthly"])),
                ],
                notification: V2(type: "DID_CHANGE_RENEWAL_PREF", renewal: renewal(original: "o7"), status: 1),
                check: { d in state("monthly", "active", true)(d) && subscription(d, "monthly")?["renews_into"] is NSNull }),
            Row(
                name: "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED",
                before: [subscribed("o8")],
                notification: V2(
                    type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED",
                    renewal: renewal(original: "o8", autoRenew: 0),
                    status: 1),
                check: { d in
                    state("monthly", "active", true)(d) && subscription(d, "monthly")?["will_renew"] as? Bool == false
                        && subscription(d, "monthly")?["unsubscribe_detected_at"] is String
                }),
            Row(
                name: "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED",
                before: [
                    subscribed("o9"),
                    V2(
                        type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED",
                        renewal: renewal(original: "o9", autoRenew: 0)),
                ],
                notification: V2(
                    type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED", renewal: renewal(original: "o9"), status: 1),
                check: { d in
                    subscription(d, "monthly")?["will_renew"] as? Bool == true
                        && subscription(d, "monthly")?["unsubscribe_detected_at"] is NSNull
                }),
            Row(
                name: "OFFER_REDEEMED/UPGRADE",
                before: [subscribed("o10")],
                notification: V2(
                    type: "OFFER_REDEEMED", subtype: "UPGRADE",
                    transaction: transaction(
                        "o10-2", original: "o10", product: "premium_monthly", from: now - day, until: now + 29 * day,
                        ["offerType": 3, "offerIdentifier": "SPRING", "offerDiscountType": "PAY_AS_YOU_GO"]),
                    renewal: renewal(original: "o10", product: "premium_monthly"), status: 1),
                check: { d in
                    let offer = subscription(d, "premium_monthly")?["offer"] as? [String: Any]
                    return state("premium_monthly", "active", true)(d) && offer?["type"] as? String == "offer_code"
                        && offer?["id"] as? String == "SPRING"
                }),
            Row(
                name: "OFFER_REDEEMED (next renewal)",
                before: [subscribed("o11")],
                notification: V2(
                    type: "OFFER_REDEEMED",
                    renewal: renewal(original: "o11", ["offerType": 2, "offerIdentifier": "loyal"]), status: 1),
                check: state("monthly", "active", true)),
            Row(
                name: "DID_FAIL_TO_RENEW/GRACE_PERIOD",
                notification: V2(
                    type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: lapsed("o12"),
                    renewal: renewal(
                        original: "o12",
                        ["isInBillingRetryPeriod": true, "gracePeriodExpiresDate": now + 6 * day, "expirationIntent": 2]),
                    status: 4),
                check: state("monthly", "grace_period", true)),
            Row(
                name: "DID_FAIL_TO_RENEW",
                notification: V2(
                    type: "DID_FAIL_TO_RENEW", transaction: lapsed("o13"),
                    renewal: renewal(original: "o13", ["isInBillingRetryPeriod": true, "expirationIntent": 2]), status: 3),
                check: state("monthly", "billing_retry", false)),
            Row(
                name: "GRACE_PERIOD_EXPIRED",
                before: [
                    V2(
                        type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: lapsed("o14"),
                        renewal: renewal(
                            original: "o14", ["isInBillingRetryPeriod": true, "gracePeriodExpiresDate": now + 6 * day]))
                ],
                notification: V2(
                    type: "GRACE_PERIOD_EXPIRED", transaction: lapsed("o14"),
                    renewal: renewal(original: "o14", ["isInBillingRetryPeriod": true, "gracePeriodExpiresDate": now - day]),
                    status: 3),
                check: state("monthly", "billing_retry", false)),
            Row(
                name: "EXPIRED/VOLUNTARY",
                notification: V2(
                    type: "EXPIRED", subtype: "VOLUNTARY", transaction: lapsed("o15"),
                    renewal: renewal(original: "o15", autoRenew: 0, ["expirationIntent": 1]), status: 2),
                check: { d in
                    state("monthly", "expired", false)(d)
                        && subscription(d, "monthly")?["expiration_reason"] as? String == "customer_cancelled"
                }),
            Row(
                name: "EXPIRED/BILLING_RETRY",
                notification: V2(
                    type: "EXPIRED", subtype: "BILLING_RETRY", transaction: lapsed("o16"),
                    renewal: renewal(original: "o16", autoRenew: 0, ["expirationIntent": 2, "isInBillingRetryPeriod": false]),
                    status: 2),
                check: { d in subscription(d, "monthly")?["expiration_reason"] as? String == "billing_error" }),
            Row(
                name: "EXPIRED/PRICE_INCREASE",
                notification: V2(
                    type: "EXPIRED", subtype: "PRICE_INCREASE", transaction: lapsed("o17"),
                    renewal: renewal(original: "o17", autoRenew: 0, ["expirationIntent": 3]), status: 2),
                check: { d in subscription(d, "monthly")?["expiration_reason"] as? String == "price_increase_declined" }),
            Row(
                name: "EXPIRED/PRODUCT_NOT_FOR_SALE",
                notification: V2(
                    type: "EXPIRED", subtype: "PRODUCT_NOT_FOR_SALE", transaction: lapsed("o18"),
                    renewal: renewal(original: "o18", autoRenew: 0, ["expirationIntent": 4]), status: 2),
                check: { d in subscription(d, "monthly")?["expiration_reason"] as? String == "product_unavailable" }),
            Row(
                name: "PRICE_INCREASE/PENDING",
                before: [subscribed("o19")],
                notification: V2(
                    type: "PRICE_INCREASE", subtype: "PENDING", renewal: renewal(original: "o19", ["priceIncreaseStatus": 0]),
                    status: 1),
                check: { d in subscription(d, "monthly")?["price_increase"] as? String == "pending_consent" }),
            Row(
                name: "PRICE_INCREASE/ACCEPTED",
                before: [subscribed("o20")],
                notification: V2(
                    type: "PRICE_INCREASE", subtype: "ACCEPTED", renewal: renewal(original: "o20", ["priceIncreaseStatus": 1]),
                    status: 1),
                check: { d in subscription(d, "monthly")?["price_increase"] as? String == "agreed" }),
            Row(
                name: "REFUND",
                before: [subscribed("o21")],
                notification: V2(
                    type: "REFUND",
                    transaction: active(
                        "o21",
                        [
                            "revocationDate": now - 60_000, "revocationReason": 1, "revocationType": "REFUND_PRORATED",
                            "revocationPercentage": 40_000, "storefront": "USA",
                        ]), status: 5),
                check: { d in
                    state("monthly", "refunded", false)(d) && (d["entitlements"] as? [String: Any])?["premium"] != nil
                        && subscription(d, "monthly")?["refund_type"] as? String == "refund_prorated"
                        && subscription(d, "monthly")?["refund_percentage"] as? String == "40.000"
                }),
            Row(
                name: "REFUND_REVERSED",
                before: [subscribed("o22"), V2(type: "REFUND", transaction: active("o22", ["revocationDate": now - 60_000]))],
                notification: V2(type: "REFUND_REVERSED", transaction: active("o22"), status: 1),
                check: state("monthly", "active", true)),
            Row(
                name: "REFUND_DECLINED", before: [subscribed("o23")],
                notification: V2(type: "REFUND_DECLINED", transaction: active("o23")), outcome: "unchanged",
                check: state("monthly", "active", true)),
            Row(
                name: "CONSUMPTION_REQUEST", before: [subscribed("o24")],
                notification: V2(type: "CONSUMPTION_REQUEST", transaction: active("o24"), status: 1), outcome: "unchanged",
                check: state("monthly", "active", true)),
            Row(
                name: "REVOKE",
                before: [
                    V2(
                        type: "SUBSCRIBED", subtype: "INITIAL_BUY",
                        transaction: active("o25", ["inAppOwnershipType": "FAMILY_SHARED"]),
                        renewal: renewal(original: "o25"))
                ],
                notification: V2(
                    type: "REVOKE",
                    transaction: active("o25", ["inAppOwnershipType": "FAMILY_SHARED", "revocationDate": now - 60_000]), status: 5
                ),
                check: state("monthly", "revoked", false)),
            Row(
                name: "RENEWAL_EXTENDED", before: [subscribed("o26")],
                notification: V2(
                    type: "RENEWAL_EXTENDED",
                    transaction: transaction("o26-1", original: "o26", from: past, until: future + 7 * day)),
                check: { d in subscription(d, "monthly")?["expires_at"] as? String == CivilTimeText.rfc3339(future + 7 * day) }),
            Row(
                name: "RENEWAL_EXTENSION/FAILURE", before: [subscribed("o27")],
                notification: V2(type: "RENEWAL_EXTENSION", subtype: "FAILURE", transaction: active("o27")), outcome: "unchanged",
                check: state("monthly", "active", true)),
            Row(
                name: "ONE_TIME_CHARGE",
                notification: V2(
                    type: "ONE_TIME_CHARGE",
                    transaction: transaction(
                        "o28", original: "o28", product: "lifetime", from: past, until: nil, ["type": "Non-Consumable"])),
                outcome: "unchanged",  // the app posted this very purchase first
                check: { d in
                    ((d["entitlements"] as? [String: Any])?["premium"] as? [String: Any])?["product_id"] as? String == "lifetime"
                }),
        ]
    }

    @Test func everyV2TypeMovesTheDocumentAsAppleDocuments() async throws {
        try await withService { port, path in
            let now = wallClock
            var signedAt = now - 3_600_000
            for (i, row) in Self.rows(now: now).enumerated() {
                let user = "user-\(i)"
                let first = row.before.first ?? row.notification
                // The app posts its StoreKit 2 transaction first, so the purchase has an owner.
                let opening =
                    first.transaction
                    ?? transaction(
                        "x", original: (first.renewal?["originalTransactionId"] as? String)!, from: now - 10 * day,
                        until: now + 20 * day)
                var signedOpening = opening
                signedOpening["signedDate"] = signedAt
                let posted = try await request(
                    port, "POST", "/v1/receipts",
                    String(
                        decoding: json(["app_user_id": user, "signed_transaction": try signer.sign(json(signedOpening))])
                            .jsonBytes, as: UTF8.self),
                    key: TestSecrets.publicKey)
                #expect(posted.status == 200, "\(row.name): \(posted.body)")
                for n in row.before + [row.notification] {
                    signedAt += 1000
                    let r = try await request(port, "POST", "/v1/notifications/apple", try n.body(signedDate: signedAt))
                    #expect(r.status == 200, "\(row.name): \(r.body)")
                    if n.uuid == row.notification.uuid {
                        #expect(r.json["outcome"] as? String == row.outcome, "\(row.name): \(r.body)")
                    }
                }
                let document = try await request(port, "GET", "/v1/subscribers/\(user)", key: TestSecrets.secretKey)
                #expect(row.check(document.json), "\(row.name): \(document.body)")
                if row.name == "REFUND_REVERSED" {
                    // What the refund took is back, and the history tells both: the refund, then its reversal.
                    let events = try await request(
                        port, "GET", "/v1/subscribers/\(user)/events?limit=20", key: TestSecrets.secretKey)
                    let types = (events.json["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
                    #expect(types.contains("refund_reversed") && types.contains("refund"), "\(events.body)")
                }
            }
            // Rows stored from signed payloads re-map from their raw JSON to exactly what is stored.
            let rederivation = Rederivation(
                state: SubscriberState(
                    settings: EntitlementSettings(
                        rules: EntitlementRules(["premium": ["monthly", "premium_monthly", "basic_monthly", "lifetime"]]),
                        catalog: Catalog(), policy: DerivationPolicy())))
            let report = try rederivation.run(try TestDatabase.open(path), now: wallClock, dryRun: true)
            #expect(report.subscribers == Self.rows(now: now).count && report.changed == 0, "\(report)")
        }
    }

    @Test func typesWithoutPurchaseDataAreRecordedAsSeen() async throws {
        try await withService { port, db in
            let containers: [(String, String?, (String, [String: Any])?)] = [
                ("TEST", nil, nil),
                (
                    "RENEWAL_EXTENSION", "SUMMARY",
                    (
                        "summary",
                        [
                            "bundleId": bundle, "environment": "Sandbox", "productId": "monthly", "succeededCount": 3,
                            "failedCount": 0,
                        ]
                    )
                ),
                (
                    "EXTERNAL_PURCHASE_TOKEN", "UNREPORTED",
                    ("externalPurchaseToken", ["externalPurchaseId": "SANDBOX_1", "bundleId": bundle, "appAppleId": 1234])
                ),
                ("METADATA_UPDATE", nil, nil), ("MIGRATION", nil, nil), ("PRICE_CHANGE", nil, nil),
                ("RESCIND_CONSENT", nil, ("appData", ["bundleId": bundle, "environment": "Sandbox", "appAppleId": 1234])),
                ("A_TYPE_FROM_2030", "AND_ITS_SUBTYPE", nil),
            ]
            let before = try tableSnapshot(db).filter { !$0.hasPrefix("notifications:") }
            for (type, subtype, container) in containers {
                let r = try await request(
                    port, "POST", "/v1/notifications/apple",
                    try V2(type: type, subtype: subtype, container: container).body(signedDate: wallClock))
                #expect(r.status == 200 && r.json["outcome"] as? String == "recorded", "\(type): \(r.body)")
            }
            #expect(try tableSnapshot(db).filter { !$0.hasPrefix("notifications:") } == before)
            let listed = try await request(port, "GET", "/v1/notifications?limit=200", key: TestSecrets.secretKey)
            let items = listed.json["notifications"] as? [[String: Any]] ?? []
            #expect(Set(items.compactMap { $0["type"] as? String }) == Set(containers.map(\.0)))
            #expect(items.first?["subtype"] as? String == "AND_ITS_SUBTYPE" && items.first?["outcome"] as? String == "recorded")
        }
    }

    @Test func duplicatesChangeNothingAndOlderStatementsNeverOverwriteNewer() async throws {
        try await withService { port, db in
            let now = wallClock
            let t = transaction("d-1", original: "d", from: now - day, until: now + 29 * day)
            var opening = t
            opening["signedDate"] = now - 10_000
            _ = try await request(
                port, "POST", "/v1/receipts",
                String(
                    decoding: json(["app_user_id": "dana", "signed_transaction": try signer.sign(json(opening))]).jsonBytes,
                    as: UTF8.self),
                key: TestSecrets.publicKey)
            let refund = try V2(type: "REFUND", transaction: t.merging(["revocationDate": now - 1000]) { $1 }).body(
                signedDate: now)
            let first = try await request(port, "POST", "/v1/notifications/apple", refund)
            #expect(first.json["outcome"] as? String == "applied" && first.json["duplicate"] as? Bool == false)
            let stored = try tableSnapshot(db)
            let again = try await request(port, "POST", "/v1/notifications/apple", refund)
            #expect(again.status == 200 && again.json["duplicate"] as? Bool == true)
            #expect(again.json["notification_id"] as? String == first.json["notification_id"] as? String)
            #expect(try tableSnapshot(db) == stored)
            // A renewal notification signed before the refund, delivered after it (a retry): stored, not applied over it.
            let late = try V2(type: "DID_RENEW", transaction: t).body(signedDate: now - 5000)
            let r = try await request(port, "POST", "/v1/notifications/apple", late)
            #expect(r.status == 200 && r.json["outcome"] as? String == "unchanged")
            let document = try await request(port, "GET", "/v1/subscribers/dana", key: TestSecrets.secretKey)
            #expect(subscription(document.json, "monthly")?["state"] as? String == "refunded")
        }
    }

    @Test func notificationsBeforeTheOwnerAreKeptThenAttached() async throws {
        try await withService { port, _ in
            let now = wallClock
            let t = transaction("early-1", original: "early", from: now - day, until: now + 29 * day)
            let n = V2(
                type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: t,
                renewal: renewal(original: "early", autoRenew: 0))
            let r = try await request(port, "POST", "/v1/notifications/apple", try n.body(signedDate: now - 5000))
            #expect(r.json["outcome"] as? String == "pending_owner")
            var opening = t
            opening["signedDate"] = now - 1000
            let posted = try await request(
                port, "POST", "/v1/receipts",
                String(
                    decoding: json(["app_user_id": "erin", "signed_transaction": try signer.sign(json(opening))]).jsonBytes,
                    as: UTF8.self),
                key: TestSecrets.publicKey)
            // The notification's renewal info (auto-renew off) is now part of erin's facts.
            #expect(subscription(posted.json, "monthly")?["will_renew"] as? Bool == false, "\(posted.body)")
            let listed = try await request(port, "GET", "/v1/notifications?limit=1", key: TestSecrets.secretKey)
            let item = (listed.json["notifications"] as? [[String: Any]])?.first
            #expect(item?["outcome"] as? String == "attached" && item?["app_user_id"] as? String == "erin")
        }
    }

    @Test func anAppAccountTokenNamingASubscriberAttachesDirectly() async throws {
        try await withService { port, _ in
            let now = wallClock
            let user = "7e3c1a2b-1111-4c4c-9d9d-0123456789ab"
            var first = transaction("tok-a", original: "tok-a", from: now - day, until: now + 29 * day)
            first["signedDate"] = now - 9000
            _ = try await request(
                port, "POST", "/v1/receipts",
                String(
                    decoding: json(["app_user_id": user, "signed_transaction": try signer.sign(json(first))]).jsonBytes,
                    as: UTF8.self),
                key: TestSecrets.publicKey)
            let other = transaction(
                "tok-b", original: "tok-b", product: "lifetime", from: now - 1000, until: nil,
                ["type": "Non-Consumable", "appAccountToken": user.uppercased()])
            let r = try await request(
                port, "POST", "/v1/notifications/apple", try V2(type: "ONE_TIME_CHARGE", transaction: other).body(signedDate: now)
            )
            #expect(r.json["outcome"] as? String == "applied", "\(r.body)")
            let document = try await request(port, "GET", "/v1/subscribers/\(user)", key: TestSecrets.secretKey)
            #expect((document.json["non_subscriptions"] as? [String: Any])?["lifetime"] != nil, "\(document.body)")
        }
    }

    @Test func refusedNotificationsStoreNothingAndSayWhy() async throws {
        try await withService { port, db in
            let now = wallClock
            let before = try tableSnapshot(db)
            let good = try V2(type: "TEST").body(signedDate: now)
            let signed = (try JSONSerialization.jsonObject(with: Data(good.utf8)) as! [String: String])["signedPayload"]!
            let parts = signed.split(separator: ".").map(String.init)
            let tampered =
                #"{"signedPayload":"\#(parts[0]).\#(JWSSigner.base64URL(Array(#"{"notificationType":"TEST","notificationUUID":"x"}"#.utf8))).\#(parts[2])"}"#
            let production = try V2(type: "TEST", environment: "Production").body(signedDate: now)
            var wrongApp = V2(type: "TEST", container: ("data", ["bundleId": "com.someone.else", "environment": "Sandbox"]))
            wrongApp.uuid = "w"
            let cases: [(String, Int, String)] = [
                ("not json", 400, "invalid_request"), (#"{"hello":1}"#, 400, "invalid_request"),
                (#"{"signedPayload":"a.b"}"#, 400, "invalid_jws"), (tampered, 422, "invalid_signature"),
                (try wrongApp.body(signedDate: now), 422, "wrong_app"),
            ]
            for (body, status, code) in cases {
                let r = try await request(port, "POST", "/v1/notifications/apple", body)
                #expect(
                    r.status == status && (r.json["error"] as? [String: Any])?["code"] as? String == code, "\(body): \(r.body)")
            }
            #expect(try tableSnapshot(db) == before)
            // Production data must name app 1234: it does here, so it is recorded.
            #expect(try await request(port, "POST", "/v1/notifications/apple", production).status == 200)
        }
    }

    /// The realistic V1 capture (Fixtures/AppStore): 54 transactions of one purchase.
    static func v1(_ edit: (inout [String: Any]) -> Void = { _ in }) throws -> String {
        let url = Fixtures.url("AppStore/v1-server-notification.json")
        var body = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        body["password"] = TestSecrets.sharedSecret
        body["bid"] = bundle
        edit(&body)
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    /// The app of `user` posts the newest transaction of the V1 capture's purchase as StoreKit 2 data.
    static func postCapturesNewest(_ port: Int, user: String) async throws -> Reply {
        let newest: [String: Any] = [
            "transactionId": "1000000746095599", "originalTransactionId": "1000000723811158", "bundleId": bundle,
            "productId": "one_month_subscription", "purchaseDate": 1_606_292_762_000, "expiresDate": 1_606_293_062_000,
            "type": "Auto-Renewable Subscription", "environment": "Production", "signedDate": wallClock,
        ]
        let body = json(["app_user_id": user, "signed_transaction": try signer.sign(json(newest))])
        return try await request(
            port, "POST", "/v1/receipts", String(decoding: body.jsonBytes, as: UTF8.self), key: TestSecrets.publicKey)
    }

    @Test func aPurchaseOfAnErasedPersonReportedLaterWaitsForAnOwnerAndNeverBringsThemBack() async throws {
        try await withService { port, db in
            #expect(try await Self.postCapturesNewest(port, user: "gone-user").status == 200)
            let erased = try await request(port, "DELETE", "/v1/subscribers/gone-user", key: TestSecrets.secretKey)
            #expect(erased.status == 200)

            // Apple reports on the erased person's purchase: like an unknown one, it waits for a holder.
            let later = try await request(port, "POST", "/v1/notifications/apple", try Self.v1())
            #expect(later.status == 200 && later.json["outcome"] as? String == "pending_owner", "\(later.body)")
            #expect(try await subscriber(port, "gone-user").status == 404)
            let stored = try TestDatabase.open(db)
            #expect(try stored.scalarInt("SELECT count(*) FROM subscribers") == 0)
            #expect(try stored.scalarInt("SELECT count(*) FROM ownership") == 0)
            #expect(
                try stored.scalarInt(
                    "SELECT count(*) FROM notifications WHERE outcome = 'pending_owner' AND app_user_id IS NULL") == 1)
        }
    }

    @Test func v1WithTheRealisticCaptureIsCheckedStoredAndAppliedLikeAReceipt() async throws {
        try await withService { port, db in
            let before = try tableSnapshot(db)
            let wrongSecret = try await request(port, "POST", "/v1/notifications/apple", try Self.v1 { $0["password"] = "guess" })
            #expect(
                wrongSecret.status == 401
                    && (wrongSecret.json["error"] as? [String: Any])?["code"] as? String == "invalid_password")
            let noSecret = try await request(port, "POST", "/v1/notifications/apple", try Self.v1 { $0["password"] = nil })
            #expect(noSecret.status == 401)
            let otherApp = try await request(
                port, "POST", "/v1/notifications/apple", try Self.v1 { $0["bid"] = "com.some.thing" })
            #expect(otherApp.status == 422 && (otherApp.json["error"] as? [String: Any])?["code"] as? String == "wrong_app")
            #expect(try tableSnapshot(db) == before)

            // Nobody holds purchase 1000000723811158 yet: kept, waiting for its owner.
            let first = try await request(port, "POST", "/v1/notifications/apple", try Self.v1())
            #expect(first.status == 200 && first.json["outcome"] as? String == "pending_owner", "\(first.body)")
            let again = try await request(port, "POST", "/v1/notifications/apple", try Self.v1())
            #expect(again.json["duplicate"] as? Bool == true)
            let stored = try TestDatabase.open(db).scalarText("SELECT body FROM notifications WHERE version = 1") ?? ""
            #expect(stored.contains("<redacted>") && !stored.contains(TestSecrets.sharedSecret))

            // The app posts the newest of those transactions as StoreKit 2 data: the 54 join its user.
            let posted = try await Self.postCapturesNewest(port, user: "vera")
            let month = subscription(posted.json, "one_month_subscription")
            #expect(
                month?["state"] as? String == "expired" && month?["expiration_reason"] as? String == "customer_cancelled",
                "\(posted.body)")
            #expect(subscription(posted.json, "one_year_subscription")?["active"] as? Bool == false)
            let count = try TestDatabase.open(db).scalarInt(
                "SELECT count(*) FROM transactions t JOIN ownership o USING (original_transaction_id) WHERE o.app_user_id = 'vera'"
            )
            #expect(count == 54)

            // A later V1 for the same purchase: a recovered renewal, applied at once to vera.
            let now = wallClock
            let recovered = try await request(
                port, "POST", "/v1/notifications/apple",
                try Self.v1 { body in
                    body["notification_type"] = "DID_RECOVER"
                    var unified = body["unified_receipt"] as! [String: Any]
                    var latest = unified["latest_receipt_info"] as! [[String: Any]]
                    latest.append([
                        "transaction_id": "1000000999000001", "original_transaction_id": "1000000723811158",
                        "product_id": "one_month_subscription", "purchase_date_ms": String(now - day),
                        "expires_date_ms": String(now + 29 * day), "quantity": "1",
                    ])
                    unified["latest_receipt_info"] = latest
                    unified["pending_renewal_info"] = [
                        [
                            "original_transaction_id": "1000000723811158", "product_id": "one_month_subscription",
                            "auto_renew_product_id": "one_month_subscription", "auto_renew_status": "1",
                        ]
                    ]
                    body["unified_receipt"] = unified
                })
            #expect(recovered.json["outcome"] as? String == "applied", "\(recovered.body)")
            let document = try await request(port, "GET", "/v1/subscribers/vera", key: TestSecrets.secretKey)
            #expect(subscription(document.json, "one_month_subscription")?["state"] as? String == "active")
            #expect(subscription(document.json, "one_month_subscription")?["will_renew"] as? Bool == true)
            // The same events a receipt would give: cancelled, expired, then renewed after the lapse.
            let events = try await request(port, "GET", "/v1/subscribers/vera/events?limit=10", key: TestSecrets.secretKey)
            let types = (events.json["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
            #expect(Array(types.prefix(3)) == ["renewal", "expiration", "cancellation"], "\(events.body)")
            // The first V1 turned auto-renew off: dated by Apple's auto_renew_status_change_date, not by its arrival.
            let cancellation = (events.json["events"] as? [[String: Any]] ?? []).first { $0["type"] as? String == "cancellation" }
            #expect(cancellation?["at"] as? String == "2020-11-25T08:30:02.000Z", "\(events.body)")
        }
    }

    @Test func signedTransactionsFromClientsAreVerifiedWithoutApple() async throws {
        try await withService { port, db in
            let now = wallClock
            var t = transaction("sk2-1", original: "sk2", from: now - day, until: now + 29 * day)
            t["signedDate"] = now
            let jws = try signer.sign(json(t))
            let parts = jws.split(separator: ".").map(String.init)
            var forged = t
            forged["expiresDate"] = now + 3650 * day
            let tampered = [parts[0], JWSSigner.base64URL(json(forged).jsonBytes), parts[2]].joined(separator: ".")
            let otherApp = try signer.sign(json(t.merging(["bundleId": "com.someone.else"]) { $1 }))
            let before = try tableSnapshot(db)
            let cases: [(String, Int, String)] = [
                (#"{"app_user_id":"sam","signed_transaction":"\#(tampered)"}"#, 422, "invalid_signature"),
                (#"{"app_user_id":"sam","signed_transaction":"\#(otherApp)"}"#, 422, "wrong_app"),
                (#"{"app_user_id":"sam","signed_transaction":"x.y"}"#, 400, "invalid_jws"),
                (#"{"app_user_id":"sam","signed_transaction":42}"#, 400, "invalid_request"),
                (#"{"app_user_id":"sam","signed_transaction":"\#(jws)","receipt_data":"QQ=="}"#, 400, "invalid_request"),
                (
                    #"{"app_user_id":"sam","signed_transaction":"\#(jws)","signed_renewal_info":"\#(try signer.sign(json(renewal(original: "other"))))"}"#,
                    400, "invalid_request"
                ),
            ]
            for (body, status, code) in cases {
                let r = try await request(port, "POST", "/v1/receipts", body, key: TestSecrets.publicKey)
                #expect(
                    r.status == status && (r.json["error"] as? [String: Any])?["code"] as? String == code, "\(code): \(r.body)")
            }
            #expect(try tableSnapshot(db) == before)
            let ok = try await request(
                port, "POST", "/v1/receipts",
                #"{"app_user_id":"sam","signed_transaction":"\#(jws)","signed_renewal_info":"\#(try signer.sign(json(renewal(original: "sk2", autoRenew: 0).merging(["signedDate": now]) { $1 })))"}"#,
                key: TestSecrets.publicKey)
            #expect(ok.status == 200 && subscription(ok.json, "monthly")?["state"] as? String == "active", "\(ok.body)")
            #expect(subscription(ok.json, "monthly")?["will_renew"] as? Bool == false)
            let log = try TestDatabase.open(db).scalarText("SELECT outcome FROM verifications ORDER BY id DESC LIMIT 1")
            #expect(log == "signed_transaction")
        }
    }

    @Test func aStorageFaultAnswers503SoAppleRetries() async throws {
        try await withService { port, path in
            try TestDatabase.open(path).execute("ALTER TABLE notifications RENAME TO notifications_gone")
            let r = try await request(port, "POST", "/v1/notifications/apple", try V2(type: "TEST").body(signedDate: wallClock))
            #expect(r.status == 503 && (r.json["error"] as? [String: Any])?["code"] as? String == "temporarily_unavailable")
        }
    }

    @Test func listingNeedsTheSecretKeyAndAValidLimit() async throws {
        try await withService { port, _ in
            #expect(try await request(port, "GET", "/v1/notifications").status == 401)
            #expect(try await request(port, "GET", "/v1/notifications", key: TestSecrets.publicKey).status == 403)
            #expect(try await request(port, "GET", "/v1/notifications?limit=0", key: TestSecrets.secretKey).status == 400)
            #expect(try await request(port, "GET", "/v1/notifications?cursor=x", key: TestSecrets.secretKey).status == 400)
            for i in 0..<3 {
                _ = try await request(
                    port, "POST", "/v1/notifications/apple", try V2(type: "TEST", uuid: "t\(i)").body(signedDate: wallClock))
            }
            let first = try await request(port, "GET", "/v1/notifications?limit=2", key: TestSecrets.secretKey)
            #expect((first.json["notifications"] as? [Any])?.count == 2)
            let cursor = try #require(first.json["next_cursor"] as? String)
            let second = try await request(port, "GET", "/v1/notifications?limit=2&cursor=\(cursor)", key: TestSecrets.secretKey)
            #expect((second.json["notifications"] as? [Any])?.count == 1 && second.json["next_cursor"] is NSNull)
        }
    }
}

/// RFC 3339 as the document writes it.
enum CivilTimeText {
    static func rfc3339(_ ms: Int64) -> String { SubscriberDocument.time(ms).string ?? "" }
}

/// Numbers out of range in what Apple (or a stranger) posts are refused with the route's
/// code, nothing is stored, and the service stays up.
@Suite struct HostileNotificationTests {
    static var edges: [Any] { ["9223372036854775807", Int64.max, "9223372036854775296", "-1", "9223372036854775808"] }

    @Test func aSignedDateAtInt64sEdgeIsInvalidJWSOnBothRoutes() async throws {
        try await withService { port, db in
            let before = try tableSnapshot(db)
            for value in Self.edges {
                var t = transaction("e-1", original: "e", from: wallClock - day, until: wallClock + day)
                t["signedDate"] = value
                let transactionJWS = try signer.sign(json(t))
                let notification = try signer.sign(
                    json([
                        "notificationType": "DID_RENEW", "notificationUUID": UUID().uuidString, "signedDate": value,
                        "data": [
                            "bundleId": bundle, "appAppleId": 1234, "environment": "Sandbox",
                            "signedTransactionInfo": transactionJWS,
                        ],
                    ]))
                let v2 = try await request(port, "POST", "/v1/notifications/apple", #"{"signedPayload":"\#(notification)"}"#)
                #expect(v2.status == 400 && (v2.json["error"] as? [String: Any])?["code"] as? String == "invalid_jws", "\(v2)")
                let sk2 = try await request(
                    port, "POST", "/v1/receipts", #"{"app_user_id":"mallory","signed_transaction":"\#(transactionJWS)"}"#,
                    key: TestSecrets.publicKey)
                #expect(sk2.status == 400 && (sk2.json["error"] as? [String: Any])?["code"] as? String == "invalid_jws", "\(sk2)")
            }
            #expect(try tableSnapshot(db) == before)
            #expect(try await request(port, "GET", "/healthz").status == 200)
        }
    }

    @Test(arguments: [
        "grace_period_expires_date_ms", "expires_date_ms", "purchase_date_ms", "cancellation_date_ms",
        "original_purchase_date_ms",
    ])
    func aV1DateAtInt64sEdgeIsRefusedAndNothingStored(_ field: String) async throws {
        try await withService { port, db in
            let before = try tableSnapshot(db)
            for value in Self.edges {
                let body = try NotificationProcessorTests.v1 { body in
                    var unified = body["unified_receipt"] as! [String: Any]
                    if field == "grace_period_expires_date_ms" {
                        var renewals = unified["pending_renewal_info"] as! [[String: Any]]
                        renewals[0][field] = value
                        renewals[0]["is_in_billing_retry_period"] = "1"
                        unified["pending_renewal_info"] = renewals
                    } else {
                        var latest = unified["latest_receipt_info"] as! [[String: Any]]
                        latest[0][field] = value
                        unified["latest_receipt_info"] = latest
                    }
                    body["unified_receipt"] = unified
                }
                let r = try await request(port, "POST", "/v1/notifications/apple", body)
                #expect(r.status == 400 && (r.json["error"] as? [String: Any])?["code"] as? String == "invalid_request", "\(r)")
                #expect("\(r.body)".contains(field))
            }
            // Without the shared secret nothing of the body is read: the password is what is refused.
            let stranger = try NotificationProcessorTests.v1 { body in
                body["password"] = "guess"
                body["auto_renew_status_change_date_ms"] = "9223372036854775807"
            }
            #expect(try await request(port, "POST", "/v1/notifications/apple", stranger).status == 401)
            #expect(try tableSnapshot(db) == before)
            #expect(try await request(port, "GET", "/healthz").status == 200)
        }
    }
}
