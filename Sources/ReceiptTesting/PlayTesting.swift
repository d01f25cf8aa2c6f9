package import Entitlements
package import JSON
package import ReceiptCore
import ReceiptService
import Storage

/// A Google Play purchase posted end to end through the use case: the simulator stands in for
/// Google (its token endpoint checks receiptd's signed assertion), storage is real. Shared by the
/// tests of purchases, notifications and the acknowledgement queue.
package enum PlayTesting {
    package static let day: Int64 = 86_400_000

    package static func withPlay(
        consume: Bool = false, products: Catalog = Catalog(["lifetime": .nonConsumable, "coins_100": .consumable]),
        _ body: (TestApp, TestClock) async throws -> Void
    ) async throws {
        try await withScratchDirectory("receiptd-play") { dir in
            let clock = TestClock()
            var configuration = testConfiguration(path: dir + "/db.sqlite")
            configuration.catalog = products
            configuration.googlePlay.packages = ["com.example.app"]
            configuration.googlePlay.simulator = true
            configuration.googlePlay.consumeConsumables = consume
            configuration.googlePlay.timeout = .seconds(20)
            let app = try await TestApp.open(configuration, clock: clock)
            try await body(app, clock)
            await app.stop()
            expectNoSecretLeaked()
        }
    }

    package static func post(_ app: TestApp, _ user: String, _ token: String, product: String? = nil) async throws(ReceiptError)
        -> JSONValue
    {
        let snapshot = try await app.verifyPlayPurchase(
            .init(appUserID: user, packageName: "com.example.app", purchaseToken: token, productID: product))
        return snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: true)
    }
}
