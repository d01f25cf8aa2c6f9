import DatabaseEngine
import Foundation
import HTTPServer
import JSON
import Operations
import ReceiptCore
import ReceiptTesting
import Storage
import Synchronization
import Testing

@testable import ReceiptService

/// GET /v1/subscribers/{id}/export: everything stored about a person, and nobody else.
@Suite("Exporting a subscriber over the API")
struct SubscriberExportTests {
    @Test func theExportHoldsEveryTablesRowsForThePersonAndNoneOfAnothers() async throws {
        try await withService { port, path async throws in
            // Under an anonymous id first, then merged into the account; a purchase later taken by another user.
            #expect(try await postReceipt(port, user: "exp-anon", "active_monthly:exp1").status == 200)
            let merged = try await post(
                port, "/v1/subscribers/exp-a/aliases", #"{"alias":"exp-anon"}"#, key: TestSecrets.secretKey)
            #expect(merged.status == 200)
            #expect(try await postReceipt(port, user: "exp-a", "downgrade_pending:exp4").status == 200)
            #expect(try await postReceipt(port, user: "exp-a", "non_consumable:exp2").status == 200)
            #expect(try await postReceipt(port, user: "exp-thief", "non_consumable:exp2").status == 200)
            #expect(try await postReceipt(port, user: "exp-b", "trial:expb").status == 200)

            // Rows the API does not make in a test: a notification (with a password, should one
            // ever be stored), a shadow diff, a refresh check, a webhook with its delivery.
            let db = try TestDatabase.open(path)
            let original = try #require(
                try db.scalarText("SELECT original_transaction_id FROM ownership WHERE app_user_id = 'exp-a' ORDER BY 1 LIMIT 1"))
            for (n, user) in ["exp-a", "exp-b"].enumerated() {
                _ = try NotificationStore(db).insert(
                    NotificationRecord(
                        dedupeKey: "exp-k\(n)", version: 1, type: "DID_RENEW", originalTransactionID: n == 0 ? original : "other",
                        appUserID: user, outcome: "applied", signedAt: 5, receivedAt: 10,
                        body: #"{"password":"leaked-secret-\#(n)","about":"\#(user)"}"#))
                _ = try ShadowDiffStore(db).insert(
                    ShadowDiffRecord(
                        appUserID: user, transactionID: "t-\(user)", environment: "sandbox", differences: "[]", at: 9))
                try WebhookStore(db).enqueue(
                    WebhookMessage(
                        id: "evt_exp\(n)", appUserID: user, version: 1, type: "renewal", bundleID: "com.example.app",
                        body: #"{"app_user_id":"\#(user)"}"#, createdAt: 7),
                    to: ["crm"], now: 7)
            }
            try db.cached(
                "INSERT INTO refresh_checks (original_transaction_id, checked_at, outcome, failures) VALUES (?, 1, 'valid', 0)"
            ).bind([original]).run()
            // A Google Play token kept for one of the purchases (as a Play purchase would be).
            try PlayStore(db).remember(
                PlayToken(
                    reference: "GPT.exp", purchaseToken: "gp1.active.exp", packageName: "com.example.app", kind: .subscription,
                    productID: "monthly", chain: original),
                acknowledgement: .owed, consume: false, now: 1)
            try OfferStore(db).record(
                OfferSignatureRecord(
                    appUserID: "exp-a", kind: "promotional", productID: "monthly", offerID: "WINBACK50", format: "v1",
                    keyID: "K", nonce: "n", allowed: true, requestedBy: "key:000000000000", issuedAt: 1))
            try AppTransactionStore(db).save(
                AppTransactionRecord(
                    appUserID: "exp-a", appTransactionID: "704289572311", bundleID: "com.example.app", environment: "production",
                    originalApplicationVersion: "2.0", originalPurchaseDate: 1, originalPlatform: "iOS", rawJSON: "{}"),
                now: 1)
            try RetentionStore(db).record(
                RetentionAnswerRecord(
                    requestIdentifier: "exp-rq", appUserID: "exp-a", originalTransactionID: original, productID: "monthly",
                    environment: "production", userLocale: "en-US", rule: "everyone", kind: "message",
                    messageIdentifier: "6b1f0d4e-2a57-4c1e-9d3b-8f0a7e5c2b10", offerID: nil, decision: "retention_rule_matched",
                    periodEnd: 1, responseJSON: "{}", answeredAt: 1))
            // Their app set an attribute (under the anonymous id: it joins the subscriber's); another's stays theirs.
            try AttributeStore(db).set(
                [.init(name: "$email", value: "a@example.com", updatedAt: 1)], for: "exp-anon", began: 0, now: 1)
            try AttributeStore(db).set(
                [.init(name: "$email", value: "b@example.com", updatedAt: 1)], for: "other", began: 0, now: 1)
            // Their Apple Account withdrew consent to consumption sharing; a purchase of theirs awaits Finish Transaction.
            try ConsentStore(db).rescind(
                appTransactionID: "704289572311", bundleID: "com.example.app", environment: "production", at: 1, notificationID: 1
            )
            try ConsentStore(db).rescind(
                appTransactionID: "someone-else", bundleID: "com.example.app", environment: "production", at: 1, notificationID: 2
            )
            let theirs = try #require(
                try db.scalarText("SELECT transaction_id FROM transactions WHERE original_transaction_id = '\(original)' LIMIT 1")
            )
            // A customer of theirs asked Apple for a refund; someone else's request is not theirs.
            try RefundRequestStore(db).record(
                notificationID: 901, type: "CONSUMPTION_REQUEST", originalTransactionID: original, transactionID: theirs, at: 1)
            try RefundRequestStore(db).record(
                notificationID: 902, type: "CONSUMPTION_REQUEST", originalTransactionID: "other", transactionID: "other", at: 1)
            let calls = AppStoreCallStore(db)
            try calls.enqueue(.finishTransaction, subject: theirs, bundleID: "com.example.app", environment: "production", now: 1)
            try calls.enqueue(
                .setAppAccountToken, subject: original, argument: "a0a0a0a0-0000-4000-8000-000000000001",
                bundleID: "com.example.app", environment: "production", now: 1)
            try calls.enqueue(
                .finishTransaction, subject: "not-theirs", bundleID: "com.example.app", environment: "production", now: 1)
            _ = try PlayStore(db).recordNotification(
                messageID: "exp-push", packageName: "com.example.app", type: "SUBSCRIPTION_RENEWED",
                tokenReference: "GPT.exp", eventTime: 1, receivedAt: 1, outcome: "applied", appUserID: "exp-a")

            let promoted = try await post(
                port, "/v1/subscribers/exp-anon/entitlements/premium/promotional", #"{"duration":"P1D","reason":"export"}"#,
                key: TestSecrets.secretKey)
            #expect(promoted.status == 201, "\(promoted.body)")

            let export = try await subscriber(port, "exp-anon", "/export")
            #expect(export.status == 200, "\(export.body)")
            #expect(export.head.lowercased().contains("transfer-encoding: chunked"))
            let json = export.json
            #expect(json["format"] as? String == "receiptd-export/1")
            #expect(json["app_user_id"] as? String == "exp-a" && json["aliases"] as? [String] == ["exp-anon"])
            #expect((json["subscriber"] as? [String: Any])?["app_user_id"] as? String == "exp-a")
            let tables = json["tables"] as? [String: [[String: Any]]] ?? [:]

            // Every table with the person's rows is there, with exactly the rows stored for them.
            let ids = "('exp-a', 'exp-anon')"
            let held = "(SELECT original_transaction_id FROM ownership WHERE app_user_id = 'exp-a')"
            let expected: [String: String] = [
                "subscribers": "app_user_id IN \(ids)", "aliases": "app_user_id IN \(ids)",
                "ownership": "app_user_id IN \(ids)",
                "ownership_transfers":
                    "original_transaction_id IN \(held) OR from_app_user_id IN \(ids) OR to_app_user_id IN \(ids)",
                "transactions": "original_transaction_id IN \(held)",
                "pending_renewal_info": "original_transaction_id IN \(held)",
                "renewal_history": "original_transaction_id IN \(held)",
                "latest_receipts": "original_transaction_id IN \(held)",
                "refresh_checks": "original_transaction_id IN \(held)", "play_tokens": "chain IN \(held)",
                "refund_requests": "original_transaction_id IN \(held)",
                "play_notifications": "app_user_id IN \(ids)", "offer_signatures": "app_user_id IN \(ids)",
                "app_transactions": "app_user_id IN \(ids)",
                "retention_answers": "app_user_id IN \(ids) OR original_transaction_id IN \(held)",
                "notifications": "app_user_id IN \(ids) OR original_transaction_id IN \(held)",
                "verifications": "app_user_id IN \(ids)", "events": "app_user_id IN \(ids)",
                "shadow_diffs": "app_user_id IN \(ids)", "changes": "app_user_id IN \(ids)",
                "webhook_messages": "app_user_id IN \(ids)", "webhook_deliveries": "app_user_id IN \(ids)",
                "promotions": "app_user_id IN \(ids)", "product_states": "app_user_id IN \(ids)",
                "attributes": "app_user_id IN \(ids)",
                "consumption_consent_rescinded":
                    "app_transaction_id IN (SELECT app_transaction_id FROM app_transactions WHERE app_user_id IN \(ids))",
                "app_store_calls":
                    "subject IN \(held) OR subject IN (SELECT transaction_id FROM transactions WHERE original_transaction_id IN \(held))",
            ]
            #expect(Set(tables.keys) == Set(expected.keys))
            for (table, condition) in expected {
                let stored = try db.scalarInt("SELECT count(*) FROM \(table) WHERE \(condition)") ?? -1
                #expect(stored > 0, "\(table): the test stores rows for the person")
                #expect(tables[table]?.count == Int(stored), "\(table)")
            }
            // Stored JSON is embedded; the other side of a transfer and any password are redacted.
            #expect(tables["transactions"]?.allSatisfy { $0["raw_json"] is [String: Any] } == true)
            let transfer = tables["ownership_transfers"]?.first { $0["from_app_user_id"] as? String == "exp-a" }
            #expect(transfer?["to_app_user_id"] as? String == "(another user)", "\(String(describing: transfer))")
            let notification = tables["notifications"]?.first { ($0["body"] as? [String: Any])?["password"] != nil }
            #expect((notification?["body"] as? [String: Any])?["password"] as? String == "(redacted)")
            // Nothing of anyone else's.
            for foreign in ["exp-b", "expb", "exp-thief", "leaked-secret", "t-exp-b", "evt_exp1"] {
                #expect(!export.body.contains(foreign), "\(foreign) is in the export")
            }

            // The same under the canonical id; 404 for nobody; a secret key only.
            let again = try await subscriber(port, "exp-a", "/export")
            #expect((again.json["tables"] as? [String: Any])?.keys.count == tables.count)
            let nobody = try await subscriber(port, "nobody", "/export")
            #expect(nobody.status == 404 && nobody.errorCode == "subscriber_not_found")
            #expect(try await subscriber(port, "exp-a", "/export", key: TestSecrets.publicKey).status == 403)
        }
    }

    /// The document is written part by part, each page of rows its own part: tables opened by
    /// their first page and closed by their last, rows joined by commas across pages, an empty
    /// table as `[]`, and nothing after the end.
    @Test func theExportIsOneJSONDocumentWrittenAPageAtATime() async throws {
        let pages: [ExportSubscriber.Page] = [
            .init(
                table: "subscribers", rows: [[("app_user_id", .text("u")), ("version", .int(3))]], isFirst: true, isLast: true),
            .init(
                table: "transactions", rows: [[("raw_json", .json(.object(strings: ["a": .int(1)])))], [("note", .null)]],
                isFirst: true, isLast: false),
            .init(table: "transactions", rows: [[("transaction_id", .text("t\"3"))]], isFirst: false, isLast: true),
            .init(table: "events", rows: [], isFirst: true, isLast: true),
        ]
        let left = Mutex(pages[...])
        let export = ExportSubscriber.Export(
            appUserID: "u", aliases: ["anon"], exportedAt: 0, subscriber: nil,
            pages: { left.withLock { $0.popFirst() } })
        let response = Responses.export(export)
        #expect(
            response.headers[first: "Content-Type"] == "application/json"
                && response.headers[first: "Cache-Control"] == "no-store")
        var parts: [String] = []
        while let part = try await response.stream?.next() { parts.append(String(decoding: part, as: UTF8.self)) }
        #expect(
            parts == [
                #"{"aliases":["anon"],"app_user_id":"u","exported_at":"1970-01-01T00:00:00.000Z","format":"receiptd-export/1","subscriber":null,"tables":{"#,
                #""subscribers":[{"app_user_id":"u","version":3}]"#,
                #","transactions":[{"raw_json":{"a":1}},{"note":null}"#,
                #",{"transaction_id":"t\"3"}]"#,
                #","events":[]"#,
                "}}",
            ])
        guard case .array(let rows)? = try JSONValue.parse(Array(parts.joined().utf8))["tables"]?["transactions"] else {
            Issue.record("no transactions")
            return
        }
        #expect(rows.count == 3 && rows[2]["transaction_id"]?.string == "t\"3")
    }
}
