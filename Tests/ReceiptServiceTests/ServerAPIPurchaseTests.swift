import AppStoreSimulator
import DatabaseEngine
import Entitlements
import Foundation
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore
@testable import ReceiptService

/// POST /v1/receipts with a transaction id, and app receipts in `server_api` mode: the App Store
/// Server API (the simulator's, signing with Apple's test PKI) asked, its answer stored like any other.
@Suite("Receipts through the App Store Server API", .serialized)
struct ServerAPIPurchaseTests {
    static func configuration(_ verifier: VerifyPurchase.Verifier) -> (String) -> ServiceConfiguration {
        { path in
            var c = testConfiguration(path: path, signedData: .init(roots: [TestPKI.root]))
            c.appStore.verifier = verifier
            return c
        }
    }

    static func subscriptions(_ document: [String: Any]) -> NSDictionary {
        NSDictionary(dictionary: document["subscriptions"] as? [String: Any] ?? [:])
    }

    @Test func aTransactionIDGivesTheSameDocumentAsTheReceiptThroughVerifyReceipt() async throws {
        try await withClockedService(configuration: Self.configuration(.verifyReceipt)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            for scenario in [Scenario.activeMonthly, .upgraded, .gracePeriod, .refunded, .cancelled, .sandboxOnly] {
                let bought = simulator.purchase(scenario, tag: "t")
                let byID = try await postReceipts(
                    port, #"{"app_user_id":"id-\#(scenario.rawValue)","transaction_id":"\#(bought.transactionID)"}"#)
                #expect(byID.status == 200 && Self.subscriptions(byID.json).count >= 1, "\(scenario): \(byID.body)")
                // The same purchase through verifyReceipt (its PKCS#7 receipt): the same subscriptions.
                let byReceipt = try await postReceipts(
                    port, #"{"app_user_id":"rc-\#(scenario.rawValue)","receipt_data":"\#(bought.receiptData)"}"#)
                #expect(byReceipt.status == 200, "\(scenario): \(byReceipt.body)")
                #expect(
                    Self.subscriptions(byID.json).isEqual(to: byReceipt.json["subscriptions"] as? [String: Any] ?? [:]),
                    "\(scenario): \(byID.body)\n\(byReceipt.body)")
            }
            let log = try TestDatabase.open(db).scalarText(
                "SELECT outcome FROM verifications WHERE app_user_id = 'id-active_monthly'")
            #expect(log == "server_api")
        }
    }

    /// Docs/security.md "The public key is public": a bare transaction id is no proof of
    /// possession (Apple prints it in the customer's e-mail). With an app's key it attaches what
    /// nobody holds and never moves what someone else holds (409 `proof_required`); the device's
    /// proof (the receipt, the signed transaction) does; a backend's secret key keeps its power.
    @Test func aBareTransactionIDFromAnAppNeverMovesAPurchaseSomeoneElseHolds() async throws {
        try await withClockedService(configuration: Self.configuration(.verifyReceipt)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.activeMonthly, tag: "victim")
            func owner() throws -> String? { try TestDatabase.open(db).scalarText("SELECT app_user_id FROM ownership") }
            let byID = #"{"app_user_id":"USER","transaction_id":"\#(bought.transactionID)"}"#
            // Nobody holds it yet: an app may attach it by its id.
            #expect(try await postReceipts(port, byID.replacingOccurrences(of: "USER", with: "vic")).status == 200)
            #expect(try owner() == "vic")
            // Someone else's purchase by its id, with the public key: refused, nothing moves.
            let taken = try await postReceipts(port, byID.replacingOccurrences(of: "USER", with: "mallory"))
            #expect(taken.status == 409, "\(taken.body)")
            #expect((taken.json["error"] as? [String: Any])?["code"] as? String == "proof_required")
            #expect(try owner() == "vic")
            let vic = try await request(port, "GET", "/v1/subscribers/vic", key: TestSecrets.secretKey)
            #expect(((vic.json["entitlements"] as? [String: Any])?["premium"] as? [String: Any])?["active"] as? Bool == true)
            // The device's proof moves it (the default policy, `transfer`).
            let receipt = #"{"app_user_id":"mallory","receipt_data":"\#(bought.receiptData)"}"#
            #expect(try await postReceipts(port, receipt).status == 200)
            #expect(try owner() == "mallory")
            // A backend's key keeps today's power: the id moves it back.
            let backend = try await postReceipts(
                port, byID.replacingOccurrences(of: "USER", with: "vic"), key: TestSecrets.secretKey)
            #expect(backend.status == 200, "\(backend.body)")
            #expect(try owner() == "vic")
        }
    }

    @Test func appleIsAskedForTheAppTransactionOfACustomerWhoseAppNeverPostedIt() async throws {
        let configuration = { (path: String) -> ServiceConfiguration in
            var c = Self.configuration(.verifyReceipt)(path)
            c.grandfathering = ["pro": Grandfathering(beforeVersion: "3.0")]
            return c
        }
        try await withClockedService(configuration: configuration) { app, port, _, _ in
            let simulator = try #require(app.appStore)
            // A first purchase years ago: the simulator's AppTransaction says version 2.0.
            let old = simulator.purchase(.longHistory, tag: "gary")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"gary","transaction_id":"\#(old.transactionID)"}"#).status == 200)
            let fetched = try await post(port, "/v1/subscribers/gary/app-transaction", "", key: TestSecrets.secretKey)
            #expect(fetched.status == 200, "\(fetched.body)")
            #expect(
                fetched.json["original_application_version"] as? String == "2.0"
                    && fetched.json["environment"] as? String == "production")
            #expect(simulator.serverAPI.requestTargets.contains { $0.contains("/inApps/v1/transactions/appTransactions/") })
            let gary = try await request(port, "GET", "/v1/subscribers/gary", key: TestSecrets.secretKey)
            let pro = (gary.json["entitlements"] as? [String: Any])?["pro"] as? [String: Any]
            #expect(pro?["period_type"] as? String == "grandfathered", "\(gary.body)")
            // A recent first purchase: version 3.1, not grandfathered.
            let new = simulator.purchase(.activeMonthly, tag: "hana")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"hana","transaction_id":"\#(new.transactionID)"}"#).status == 200)
            let hana = try await post(port, "/v1/subscribers/hana/app-transaction", "", key: TestSecrets.secretKey)
            #expect(hana.json["original_application_version"] as? String == "3.1", "\(hana.body)")
            let doc = try await request(port, "GET", "/v1/subscribers/hana", key: TestSecrets.secretKey)
            #expect((doc.json["entitlements"] as? [String: Any])?["pro"] == nil)
            // Nobody, or nobody with an App Store purchase to ask by; and support's key only.
            #expect(try await post(port, "/v1/subscribers/nobody/app-transaction", "", key: TestSecrets.secretKey).status == 404)
            _ = try await post(
                port, "/v1/subscribers/ivo/entitlements/premium/promotional", #"{"duration":"P1D","reason":"test"}"#,
                key: TestSecrets.secretKey)
            let none = try await post(port, "/v1/subscribers/ivo/app-transaction", "", key: TestSecrets.secretKey)
            #expect(none.status == 400 && none.body.contains("no App Store purchase"), "\(none.body)")
            #expect(try await post(port, "/v1/subscribers/gary/app-transaction", "", key: TestSecrets.publicKey).status == 403)
        }
    }

    @Test func anUnknownOrMalformedTransactionIDIsRefusedAndStoresNothingButTheLog() async throws {
        try await withClockedService(configuration: Self.configuration(.verifyReceipt)) { _, port, db, _ in
            let before = try tableSnapshot(db)
            let unknown = try await postReceipts(port, #"{"app_user_id":"u","transaction_id":"2000000999"}"#)
            #expect(
                unknown.status == 422 && (unknown.json["error"] as? [String: Any])?["code"] as? String == "invalid_transaction_id"
            )
            for body in [
                #"{"app_user_id":"u","transaction_id":""}"#, #"{"app_user_id":"u","transaction_id":"1/../2"}"#,
                #"{"app_user_id":"u","transaction_id":7}"#,
                #"{"app_user_id":"u","transaction_id":"1","receipt_data":"QUJDRA=="}"#,
            ] {
                let r = try await postReceipts(port, body)
                #expect(
                    r.status == 400 && (r.json["error"] as? [String: Any])?["code"] as? String == "invalid_request", "\(body)")
            }
            #expect(try tableSnapshot(db) == before)
        }
    }

    /// Ids made of dot segments (or their escapes) once reached other Server API paths through
    /// libcurl, and Apple's 401 there read as the operator's misconfiguration: any app client could
    /// raise that alarm. They are refused as the asker's error now, and Apple is never asked.
    @Test func hostileIdsAreTheAskersErrorAndNeverReachApple() async throws {
        try await withClockedService(configuration: Self.configuration(.verifyReceipt)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            let before = try tableSnapshot(db)
            for id in [".", "..", "%2E%2E", "./1", "../v1", "1/..", "1%2F..", "1?x", "1#", "MQ3ZY1C2XV", "1 "] {
                let r = try await postReceipts(port, #"{"app_user_id":"u","transaction_id":"\#(id)"}"#)
                #expect(r.status == 400 && r.errorCode == "invalid_request", "\(id): \(r.body)")
            }
            for path in ["..", "%2E%2E", "%2e%2E", ".", "%2E", "M%2F..", "M.1"] {
                let r = try await get(port, "/v1/admin/orders/\(path)", key: TestSecrets.secretKey)
                #expect([400, 404].contains(r.status) && r.errorCode != "app_store_misconfigured", "\(path): \(r.body)")
            }
            #expect(simulator.serverAPI.requestTargets == [])
            #expect(try tableSnapshot(db) == before)
            // A real id is asked about at exactly its own paths.
            let bought = simulator.purchase(.activeMonthly, tag: "p")
            let ok = try await postReceipts(port, #"{"app_user_id":"u","transaction_id":"\#(bought.transactionID)"}"#)
            #expect(ok.status == 200, "\(ok.body)")
            let asked = Set(simulator.serverAPI.requestTargets.map { $0.split(separator: "?")[0] })
            #expect(
                asked.isSubset(of: [
                    "/serverapi/production/inApps/v1/subscriptions/\(bought.transactionID)",
                    "/serverapi/production/inApps/v2/history/\(bought.transactionID)",
                ]) && !asked.isEmpty, "\(asked)")
        }
    }

    @Test func serverAPIModeReadsTheReceiptForItsTransactionIDAndAsksTheServerAPI() async throws {
        try await withClockedService(configuration: Self.configuration(.serverAPI)) { app, port, db, _ in
            let bought = try #require(app.appStore).purchase(.activeMonthly, tag: "m")
            let r = try await postReceipts(port, #"{"app_user_id":"sam","receipt_data":"\#(bought.receiptData)"}"#)
            #expect(r.status == 200 && entitlement(r.json, "premium")?["active"] as? Bool == true, "\(r.body)")
            #expect(
                try TestDatabase.open(db).scalarText("SELECT outcome FROM verifications WHERE app_user_id = 'sam'")
                    == "server_api")
            // Xcode's receipt with no purchase: nothing to ask Apple about, nothing stored.
            let empty = try await postReceipts(
                port, #"{"app_user_id":"eve","receipt_data":"\#(Fixtures.text("AppStoreServerAPI/xcode-app-receipt-empty"))"}"#)
            #expect(empty.status == 200 && (empty.json["subscriptions"] as? [String: Any])?.isEmpty == true, "\(empty.body)")
            // A receipt that is not PKCS#7 is refused before Apple is asked.
            let scripted = try await postReceipts(port, receiptBody(user: "bob", "active_monthly:b"))
            #expect(scripted.status == 400, "\(scripted.body)")
        }
    }
}
