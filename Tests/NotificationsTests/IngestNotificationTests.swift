import AppStore
import DatabaseEngine
import Foundation
import JSON
import ReceiptService
import ReceiptTesting
import Storage
import Testing

@testable import Notifications
@testable import ReceiptCore

/// The use cases called directly, as the CLI calls them: no HTTP server is bound, no request is
/// parsed. Apple is the simulator on the test clock.
@Suite("IngestNotification without HTTP")
struct IngestNotificationTests {

    @Test func aNotificationIsIngestedOnceAndListed() async throws {
        try await withOpenedApp { app, clock in
            let payload: JSONValue = .object([
                "notificationType": .string("TEST"), "notificationUUID": .string(UUID().uuidString),
                "version": .string("2.0"), "signedDate": .int(clock.now),
                "data": .object(["bundleId": .string("com.example.app"), "environment": .string("Sandbox")]),
            ])
            var configuration = app.configuration
            configuration.appStore.signedData = .init(roots: [TestPKI.root], appAppleIDs: [1234])
            // This application trusts Apple's real root only: the test PKI's notification is refused.
            let body = JSONValue.object(["signedPayload": .string(try TestPKI.signer.sign(payload))]).jsonBytes
            do throws(ReceiptError) {
                _ = try await app.ingestNotification(body)
                Issue.record("a notification signed by an untrusted root was stored")
            } catch {
                #expect(error.code == "untrusted_chain")
            }
            try await withScratchDirectory("receiptd-core-trusting") { dir in
                configuration.database.path = dir + "/db.sqlite"
                let trusting = try await TestApp.open(configuration, clock: clock)
                let first = try await trusting.ingestNotification(body)
                #expect(first.outcome == .recorded && !first.duplicate && first.type == "TEST" && first.version == 2)
                let again = try await trusting.ingestNotification(body)
                #expect(again.duplicate && again.id == first.id)
                let page = try await trusting.listings.notifications(limit: 10, before: nil)
                #expect(page.rows.map(\.id) == [first.id] && page.next == nil)
                await trusting.stop()
            }
        }
    }
}
