import AppStore
import DatabaseEngine
import Foundation
import JSON
import ReceiptService
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

/// The use cases called directly, as the CLI calls them: no HTTP server is bound, no request is
/// parsed. Apple is the simulator on the test clock.
@Suite("VerifyPurchase without HTTP")
struct VerifyPurchaseTests {

    private func purchase(_ user: String, _ scenario: String) -> VerifyPurchase.Input {
        VerifyPurchase.Input(appUserID: user, proof: .receipt(simulatedReceipt(scenario)))
    }

    private func premiumIsActive(_ snapshot: SubscriberSnapshot) -> Bool {
        let rendered = snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: false)
        return rendered["entitlements"]?["premium"]?["active"] == .bool(true)
    }

    /// With no reader connections (`database.readers: 0`) reads queue on the writer's thread.
    @Test(arguments: [2, 0])
    func aVerifiedPurchaseIsStoredAndReadBack(readers: Int) async throws {
        try await withOpenedApp(readers: readers) { app, clock in
            #expect(app.database.readerCount == readers)
            let verified = try await app.verifyPurchase(purchase("alice", "active_monthly:1"))
            #expect(premiumIsActive(verified) && verified.version == 1 && verified.now == clock.now)
            let read = try await app.readSubscriber.document("alice")
            #expect(read.version == verified.version && read.document.fingerprint == verified.document.fingerprint)
            // The same receipt again: nothing new, the version stays.
            #expect(try await app.verifyPurchase(purchase("alice", "active_monthly:1")).version == 1)
            // Time passes beyond the period: the stored document moves on without Apple.
            clock.advance(by: 40 * 86_400_000)
            let later = try await app.readSubscriber.document("alice")
            #expect(!premiumIsActive(later) && later.version == 2)
            let events = try await app.readSubscriber.events("alice", limit: 1, before: nil)
            #expect(events.events.count == 1 && events.next != nil)
        }
    }

    @Test func refusalsAreTypedAndWriteNothing() async throws {
        try await withOpenedApp { app, _ in
            await #expect(throws: ReceiptError.self) { try await app.verifyPurchase(purchase("", "active_monthly:2")) }
            do throws(ReceiptError) {
                _ = try await app.verifyPurchase(VerifyPurchase.Input(appUserID: "bob", proof: .receipt("not base64!")))
                Issue.record("accepted a receipt that is not base64")
            } catch {
                #expect(error.code == "invalid_request")
            }
            do throws(ReceiptError) {
                _ = try await app.readSubscriber.document("bob")
                Issue.record("a subscriber nobody created")
            } catch {
                #expect(error.code == "subscriber_not_found")
            }
            do throws(ReceiptError) {
                _ = try await app.verifyPurchase(purchase("bob", "status_21003:4"))
                Issue.record("Apple's refusal was not reported")
            } catch {
                #expect(error.code == "invalid_receipt" && error.appleStatus == 21003)
            }
            let rows = try await app.database.run { db in try db.scalarInt("SELECT count(*) FROM subscribers") }
            #expect(rows == 0)
        }
    }

    @Test func underKeepAPurchaseStaysWithItsHolder() async throws {
        try await withOpenedApp(policy: "keep") { app, _ in
            _ = try await app.verifyPurchase(purchase("carol", "active_monthly:3"))
            do throws(ReceiptError) {
                _ = try await app.verifyPurchase(purchase("dave", "active_monthly:3"))
                Issue.record("the purchase moved")
            } catch {
                #expect(error.code == "receipt_in_use")
            }
        }
    }
}
