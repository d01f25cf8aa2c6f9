import Clocks
import CryptoExtras
import CurlTransport
import GooglePlaySimulator
import Logging
import ReceiptTesting
import Testing

@testable import GooglePlay

/// The client against the simulator over loopback: the real transport, the real JWT check.
@Suite("Google Play: the Play Developer API client")
struct PlayDeveloperAPITests {
    static let key = ServiceAccountTests.key
    static let email = "receiptd@app.iam.gserviceaccount.com"
    static let package = PlayIdentifier("com.example.app", .packageName)!

    struct Setup {
        let served: GooglePlaySimulator.Served
        let api: PlayDeveloperAPI
        let clock: TestClock
        let transport: CurlMultiTransport
        var simulator: GooglePlaySimulator { served.simulator }
    }

    static func withSetup(
        signingKey: _RSA.Signing.PrivateKey = key, lifetime: Int64 = 3_600, _ body: (Setup) async throws -> Void
    ) async throws {
        let clock = TestClock()
        let served = try GooglePlaySimulator.serve(
            configuration: .init(
                packageNames: ["com.example.app"], clientEmail: email, publicKey: key.publicKey, tokenURI: "",
                tokenLifetimeSeconds: lifetime),
            clock: clock.wall, logger: Logger(label: "test"))
        let transport = CurlMultiTransport(configuration: .init(connectTimeout: .seconds(2), allowHTTP: true))
        let account = try ServiceAccountKey(
            json: ServiceAccountKey.keyFile(
                clientEmail: email, privateKeyID: "k1", privateKey: signingKey, tokenURI: served.tokenURI))
        let api = PlayDeveloperAPI(
            key: account, transport: transport, configuration: .init(apiBase: served.apiBase, timeout: hangGuard),
            clock: clock.wall)
        do {
            try await body(Setup(served: served, api: api, clock: clock, transport: transport))
        } catch {
            transport.shutdown()
            await served.stop()
            throw error
        }
        transport.shutdown()
        await served.stop()
    }

    static func token(_ text: String) -> PlayIdentifier { PlayIdentifier(text, .purchaseToken)! }

    @Test func signsInOnceAndReadsSubscriptionsAndProducts() async throws {
        try await Self.withSetup { s in
            let active = Self.token(s.simulator.purchase(.active, tag: "a"))
            let subscription = try await s.api.subscription(package: Self.package, token: active)
            #expect(subscription.state == .active && subscription.lineItems[0].productID == "monthly")
            #expect(subscription.lineItems[0].recurringPrice == GoogleMoney(currency: "EUR", milliunits: 9_990))
            let coins = Self.token(s.simulator.purchase(.coins, tag: "a"))
            let product = try await s.api.product(package: Self.package, token: coins)
            #expect(product.state == .purchased && product.lineItems[0].productID == "coins_100")
            // A burst at once signs in once, and the token is kept across calls.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { _ = try await s.api.subscription(package: Self.package, token: active) } }
                try await group.waitForAll()
            }
            #expect(s.simulator.calls["token"] == 1)
        }
    }

    @Test func aRefusedTokenIsTakenAnewOnceAndTheCallTriedAgain() async throws {
        try await Self.withSetup { s in
            let active = Self.token(s.simulator.purchase(.active, tag: "a"))
            _ = try await s.api.subscription(package: Self.package, token: active)
            s.simulator.revokeAccessTokens()
            _ = try await s.api.subscription(package: Self.package, token: active)
            #expect(s.simulator.calls["token"] == 2 && s.simulator.calls["unauthorized"] == 1)
        }
    }

    @Test func aTokenIsTakenAnewAMinuteBeforeItExpires() async throws {
        try await Self.withSetup(lifetime: 120) { s in
            let active = Self.token(s.simulator.purchase(.active, tag: "a"))
            _ = try await s.api.subscription(package: Self.package, token: active)
            s.clock.advance(by: 59_000)
            _ = try await s.api.subscription(package: Self.package, token: active)
            #expect(s.simulator.calls["token"] == 1)
            s.clock.advance(by: 2_000)  // 61 s in: within the minute before expiry
            _ = try await s.api.subscription(package: Self.package, token: active)
            #expect(s.simulator.calls["token"] == 2 && s.simulator.calls["unauthorized"] == nil)
        }
    }

    @Test func anotherKeysAssertionIsRefusedAsCredentials() async throws {
        let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try await Self.withSetup(signingKey: stranger) { s in
            let active = Self.token(s.simulator.purchase(.active, tag: "a"))
            await #expect(
                throws: PlayCallFailure.credentials(
                    "Google Play credentials: the token endpoint refused the service account: invalid_grant")
            ) {
                _ = try await s.api.subscription(package: Self.package, token: active)
            }
        }
    }

    @Test func googlesRefusalsAreTold() async throws {
        try await Self.withSetup { s in
            let coins = Self.token(s.simulator.purchase(.coins, tag: "a"))
            // Unknown token; a product's token read as a subscription; an app not in Play Console.
            await #expect(throws: PlayCallFailure.notFound(status: 404)) {
                _ = try await s.api.subscription(package: Self.package, token: Self.token("never-issued"))
            }
            // A one-time purchase's token read as a subscription: Google answers 400, not 404.
            await #expect(throws: PlayCallFailure.refused(status: 400, reason: "invalidValue")) {
                _ = try await s.api.subscription(package: Self.package, token: coins)
            }
            await #expect(throws: PlayCallFailure.notFound(status: 404)) {
                _ = try await s.api.product(package: PlayIdentifier("com.other.app", .packageName)!, token: coins)
            }
            // Acknowledging under another product.
            await #expect(throws: PlayCallFailure.refused(status: 400, reason: "productNotOwnedByUser")) {
                try await s.api.acknowledge(
                    subscription: false, package: Self.package, product: PlayIdentifier("lifetime", .productID)!, token: coins)
            }
            s.simulator.setOutage(milliseconds: 60_000)
            await #expect(throws: PlayCallFailure.unavailable("HTTP 503", retryAfterSeconds: nil)) {
                _ = try await s.api.product(package: Self.package, token: coins)
            }
        }
    }

    @Test func acknowledgingAndConsumingReachGoogle() async throws {
        try await Self.withSetup { s in
            let active = s.simulator.purchase(.active, tag: "a")
            #expect(try await !s.api.subscription(package: Self.package, token: Self.token(active)).isAcknowledged)
            try await s.api.acknowledge(
                subscription: true, package: Self.package, product: PlayIdentifier("monthly", .productID)!,
                token: Self.token(active))
            #expect(s.simulator.acknowledgement(of: active)! == (true, false))
            #expect(try await s.api.subscription(package: Self.package, token: Self.token(active)).isAcknowledged)
            let coins = s.simulator.purchase(.coins, tag: "a")
            try await s.api.consume(
                package: Self.package, product: PlayIdentifier("coins_100", .productID)!, token: Self.token(coins))
            #expect(s.simulator.acknowledgement(of: coins)! == (true, true))
        }
    }

    @Test func googlesErrorReasonIsKeptOnlyWhenItIsACode() {
        #expect(
            PlayDeveloperAPI.errorReason(Array(#"{"error":{"code":400,"errors":[{"reason":"invalid"}],"status":"X"}}"#.utf8))
                == "invalid")
        #expect(
            PlayDeveloperAPI.errorReason(Array(#"{"error":{"code":400,"status":"INVALID_ARGUMENT"}}"#.utf8)) == "INVALID_ARGUMENT"
        )
        #expect(PlayDeveloperAPI.errorReason(Array(#"{"error":{"status":"token gp1.secret leaked"}}"#.utf8)) == nil)
        #expect(PlayDeveloperAPI.errorReason(Array("<html>".utf8)) == nil)
    }

    @Test func identifiersAreOnePathSegment() {
        #expect(PlayIdentifier("gp1.active.u-1_2", .purchaseToken) != nil)
        for bad in ["", ".", "..", "a/b", "a%2Fb", "a?b", "a#b", "a:acknowledge", "a b", String(repeating: "a", count: 1_025)] {
            #expect(PlayIdentifier(bad, .purchaseToken) == nil, "\(bad)")
        }
        #expect(PlayIdentifier("com.example.app", .packageName) != nil && PlayIdentifier("com-example", .packageName) == nil)
        #expect(PlayIdentifier("gp1.x.y", .purchaseToken)!.description == PurchaseTokenReference.of("gp1.x.y"))
    }
}
