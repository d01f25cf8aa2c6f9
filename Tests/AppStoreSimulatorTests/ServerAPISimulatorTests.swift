import AppStore
import Clocks
import Crypto
import CurlTransport
import Entitlements
import JSON
import Logging
import ReceiptTesting
import Testing

@testable import AppStoreSimulator

@Suite("Simulator: App Store Server API")
struct ServerAPISimulatorTests {
    static let key = P256.Signing.PrivateKey()
    static let issuer = "00000000-0000-4000-8000-000000000001"

    /// A simulator with `key`'s public half configured, and a real client (libcurl) pointed at it.
    static func withSimulator(
        requestsPerSecond: Int = 10_000, signWith: P256.Signing.PrivateKey = key,
        _ body: (AppStoreSimulator, ServerAPIClient) async throws -> Void
    ) async throws {
        var logger = Logger(label: "simulator")
        logger.logLevel = .error
        let served = try AppStoreSimulator.serve(
            configuration: .init(
                serverAPIKey: .init(keyID: "SIMKEY1234", issuerID: issuer, publicKey: key.publicKey),
                serverAPIRequestsPerSecond: requestsPerSecond, serverAPIPageSize: 2),
            logger: logger)
        let transport = CurlMultiTransport(configuration: .init(allowHTTP: true))
        let client = ServerAPIClient(
            configuration: .init(
                productionURL: served.serverAPIProductionURL, sandboxURL: served.serverAPISandboxURL,
                // Bounds, not expectations: the hang guard, since the whole run starting at once on
                // two loaded cores kept the simulator's handlers from answering for over a minute.
                policy: .init(maxRetries: 2, baseDelay: .milliseconds(5), attemptTimeout: hangGuard, deadline: hangGuard * 2)),
            token: ServerAPIToken(credentials: .init(keyID: "SIMKEY1234", issuerID: issuer, key: signWith)), transport: transport,
            verifier: SignedDataVerifier(
                configuration: .init(roots: [SimulatorPKI.root], bundleIDs: ["com.example.app"]), now: { WallClock.system.now() }),
            limiter: ServerAPIRateLimiter(share: 100))
        do {
            try await body(served.simulator, client)
        } catch {
            transport.shutdown()
            await served.stop()
            throw error
        }
        transport.shutdown()
        await served.stop()
    }

    @Test func historyStatusesAndInfoTellTheScenarioSignedWithTheTestPKI() async throws {
        try await Self.withSimulator { simulator, client in
            let bought = simulator.purchase(.renewing, tag: "h1")
            let history = try await client.transactionHistory(of: bought.transactionID, bundleID: "com.example.app")
            #expect(history.environment == .production && !history.transactions.isEmpty)
            #expect(history.transactions.last?.transactionID == bought.transactionID)
            let statuses = try await client.subscriptionStatuses(of: bought.transactionID, bundleID: "com.example.app")
            #expect(statuses.subscriptions.map(\.status) == [1])
            #expect(statuses.subscriptions.first?.renewal?.autoRenewStatus == true)
            let info = try await client.transactionInfo(bought.transactionID, bundleID: "com.example.app")
            #expect(info.productID == "monthly")
            // The PKCS#7 receipt names the same purchase.
            #expect(try AppReceipt.transactionID(base64: bought.receiptData) == history.transactions.last?.originalTransactionID)
        }
    }

    @Test func historyPagesAndASandboxPurchaseIsFoundAfterProductionSays4040010() async throws {
        try await Self.withSimulator { simulator, client in
            let upgraded = simulator.purchase(.upgraded, tag: "p1")
            let long = simulator.purchase(.pastRefund, tag: "p2")
            let history = try await client.transactionHistory(of: long.transactionID, bundleID: "com.example.app")
            #expect(history.transactions.count == 2 && history.pages == 1)
            let three = try await client.transactionHistory(of: upgraded.transactionID, bundleID: "com.example.app")
            #expect(three.transactions.count == 2)
            let sandbox = simulator.purchase(.sandboxOnly, tag: "s1")
            let found = try await client.transactionHistory(of: sandbox.transactionID, bundleID: "com.example.app")
            #expect(found.environment == .sandbox)
            await #expect(throws: ServerAPIFailure.notFound) {
                try await client.transactionInfo("999999", bundleID: "com.example.app")
            }
        }
    }

    @Test func aJWTFromAnotherKeyIsRefusedWith401() async throws {
        try await Self.withSimulator(signWith: P256.Signing.PrivateKey()) { simulator, client in
            let bought = simulator.purchase(.activeMonthly, tag: "k1")
            await #expect(throws: ServerAPIFailure.unauthorized(status: 401)) {
                try await client.transactionInfo(bought.transactionID, bundleID: "com.example.app")
            }
        }
    }

    @Test func drivenTooHardItAnswers429WithRetryAfterAndTheClientWaits() async throws {
        try await Self.withSimulator(requestsPerSecond: 1) { simulator, client in
            let bought = simulator.purchase(.activeMonthly, tag: "r1")
            // Three calls at once at one a second: at least one is refused with 429 and waited out
            // until its Retry-After, and every call still answers. (One after another, a loaded
            // machine could take a second per call and never be throttled.)
            let products = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await client.transactionInfo(bought.transactionID, bundleID: "com.example.app").productID
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(products == ["monthly", "monthly", "monthly"])
            #expect(simulator.serverAPI.throttledCount >= 1)
        }
    }

    @Test func notificationHistoryPagesWhatWasSent() async throws {
        try await Self.withSimulator { simulator, client in
            let bought = simulator.purchase(.activeMonthly, tag: "n1")
            let start = WallClock.system.now() - 1_000
            let sent = (0..<3).compactMap { _ in simulator.notification("DID_RENEW", transactionID: bought.transactionID) }
            #expect(sent.count == 3)
            var token: String?
            var seen: [String] = []
            repeat {
                let page = try await client.notificationHistory(
                    bundleID: "com.example.app", environment: .production, startDate: start, endDate: start + 60_000,
                    paginationToken: token)
                seen += page.signedPayloads
                token = page.hasMore ? page.paginationToken : nil
            } while token != nil
            #expect(seen == sent)
        }
    }
}
