import Clocks
import CurlTransport
import Entitlements
import JSON
import ReceiptTesting
import Synchronization
import Testing

@testable import AppStore

/// Answers scripted per URL prefix, recording every request.
final class ScriptedServerAPI: HTTPTransport {
    private let state = Mutex<(script: [(String, TransportResult)], sent: [OutboundRequest])>(([], []))

    /// `answers`: (a URL's path-and-query prefix after the host, the answer), used in order.
    init(_ answers: [(String, TransportResult)]) { state.withLock { $0.script = answers } }

    var sent: [OutboundRequest] { state.withLock { $0.sent } }

    func send(_ request: OutboundRequest) async -> TransportResult {
        state.withLock { s in
            s.sent.append(request)
            guard let i = s.script.firstIndex(where: { request.url.contains($0.0) }) else { return .failure("no script") }
            return s.script.remove(at: i).1
        }
    }
}

enum ServerAPIFixtures {
    static let bundle = "com.example.app"
    static let wall: Int64 = 1_790_000_000_000
    static let day: Int64 = 86_400_000

    static func transaction(_ id: String, original: String = "1000", environment: String = "Production", signedDate: Int64 = wall)
        -> JSONValue
    {
        .object([
            "transactionId": .string(id), "originalTransactionId": .string(original), "bundleId": .string(bundle),
            "productId": .string("monthly"), "purchaseDate": .int(wall - day), "originalPurchaseDate": .int(wall - 40 * day),
            "expiresDate": .int(wall + 29 * day), "type": .string("Auto-Renewable Subscription"),
            "inAppOwnershipType": .string("PURCHASED"), "environment": .string(environment), "signedDate": .int(signedDate),
            "subscriptionGroupIdentifier": .string("g1"), "quantity": .int(1),
        ])
    }

    static func signed(_ payload: JSONValue) -> String { try! TestPKI.signer.sign(payload) }

    static func page(_ ids: [String], revision: String?, hasMore: Bool, environment: String = "Production") -> TransportResult {
        var body: [Identifier: JSONValue] = [
            "hasMore": .bool(hasMore), "bundleId": .string(bundle), "environment": .string(environment),
            "signedTransactions": .array(ids.map { .string(signed(transaction($0, environment: environment))) }),
        ]
        if let revision { body["revision"] = .string(revision) }
        return .response(status: 200, body: JSONValue.object(body).jsonBytes)
    }

    static func error(_ status: Int, _ code: Int64, retryAfter: String? = nil) -> TransportResult {
        .response(status: status, body: Array(#"{"errorCode":\#(code),"errorMessage":"x"}"#.utf8), retryAfter: retryAfter)
    }

    static let verifier = SignedDataVerifier(configuration: .init(roots: [TestPKI.root], bundleIDs: [bundle]), now: { wall })

    static func client(_ transport: ScriptedServerAPI, clock: ManualMonotonicClock = .init(), wallClock: TestClock = .init(wall))
        throws -> ServerAPIClient
    {
        let credentials = try ServerAPIToken.Credentials(
            keyID: "2X9R4HXF34", issuerID: ServerAPITokenTests.issuer, p8: ServerAPITokenTests.p8)
        return ServerAPIClient(
            configuration: .init(productionURL: "https://prod.test", sandboxURL: "https://sandbox.test"),
            token: ServerAPIToken(credentials: credentials, clock: wallClock.wall), transport: transport, verifier: verifier,
            clock: clock, wallClock: wallClock.wall, random: { 0.5 })
    }
}

@Suite("App Store Server API client")
struct ServerAPIClientTests {
    typealias F = ServerAPIFixtures

    @Test func historyFollowsEveryPageByRevisionWithApplesJWTOnEachRequest() async throws {
        let transport = ScriptedServerAPI([
            ("/inApps/v2/history/1000?revision=r1", F.page(["3", "4"], revision: "r2", hasMore: true)),
            ("/inApps/v2/history/1000?revision=r2", F.page(["5"], revision: "r3", hasMore: false)),
            ("/inApps/v2/history/1000", F.page(["1", "2"], revision: "r1", hasMore: true)),
        ])
        let history = try await F.client(transport).transactionHistory(of: "1000", bundleID: F.bundle)
        #expect(history.transactions.map(\.transactionID) == ["1", "2", "3", "4", "5"])
        #expect(history.pages == 3 && history.environment == .production)
        #expect(
            transport.sent.map(\.url) == [
                "https://prod.test/inApps/v2/history/1000", "https://prod.test/inApps/v2/history/1000?revision=r1",
                "https://prod.test/inApps/v2/history/1000?revision=r2",
            ])
        for request in transport.sent {
            #expect(request.method == .get && request.body == nil)
            let bearer = try #require(request.headers.first { $0.hasPrefix("Authorization: Bearer ") })
            let jwt = try ServerAPITokenTests.decode(String(bearer.dropFirst("Authorization: Bearer ".count)))
            #expect(jwt.header == .object(["alg": .string("ES256"), "kid": .string("2X9R4HXF34"), "typ": .string("JWT")]))
            #expect(jwt.claims["bid"] == .string(F.bundle) && jwt.claims["aud"] == .string("appstoreconnect-v1"))
            #expect(jwt.claims["iss"] == .string(ServerAPITokenTests.issuer))
            #expect(jwt.claims["iat"] == .int(F.wall / 1000) && jwt.claims["exp"] == .int(F.wall / 1000 + 600))
        }
    }

    @Test func aTransactionProductionDoesNotKnowIsAskedOfSandboxAndItsPagesStayThere() async throws {
        let transport = ScriptedServerAPI([
            ("prod.test/inApps/v2/history/77", F.error(404, 4_040_010)),
            (
                "sandbox.test/inApps/v2/history/77?revision=s1",
                F.page(["79"], revision: "s2", hasMore: false, environment: "Sandbox")
            ),
            ("sandbox.test/inApps/v2/history/77", F.page(["78"], revision: "s1", hasMore: true, environment: "Sandbox")),
        ])
        let history = try await F.client(transport).transactionHistory(of: "77", bundleID: F.bundle)
        #expect(history.environment == .sandbox && history.transactions.map(\.transactionID) == ["78", "79"])
        #expect(transport.sent.count == 3)
    }

    @Test func unknownEverywhereIsNotFoundAndAnInvalidIDIsSaidSo() async throws {
        let unknown = ScriptedServerAPI([("prod.test", F.error(404, 4_040_010)), ("sandbox.test", F.error(404, 4_040_010))])
        await #expect(throws: ServerAPIFailure.notFound) { try await F.client(unknown).transactionInfo("9", bundleID: F.bundle) }
        let invalid = ScriptedServerAPI([("prod.test", F.error(400, 4_000_006))])
        await #expect(throws: ServerAPIFailure.invalidTransactionID) {
            try await F.client(invalid).transactionInfo("0", bundleID: F.bundle)
        }
        let badKey = ScriptedServerAPI([("prod.test", .response(status: 401, body: []))])
        await #expect(throws: ServerAPIFailure.unauthorized(status: 401)) {
            try await F.client(badKey).transactionInfo("1", bundleID: F.bundle)
        }
    }

    @Test func aMassExtensionIsPostedInTheEnvironmentAskedAndItsStatusReadByProductAndRequest() async throws {
        let id = "ce3af791-365e-4c60-841b-1674b43c1609"
        let transport = ScriptedServerAPI([
            (
                "sandbox.test/inApps/v1/subscriptions/extend/mass",
                .response(status: 200, body: Array(#"{"requestIdentifier":"\#(id)"}"#.utf8))
            ),
            (
                "sandbox.test/inApps/v1/subscriptions/extend/mass/com.example.monthly/\(id)",
                .response(
                    status: 200,
                    body: Array(
                        #"{"requestIdentifier":"\#(id)","complete":true,"completeDate":1790000000000,"succeededCount":30,"failedCount":2}"#
                            .utf8))
            ),
        ])
        let client = try F.client(transport)
        let echoed = try await client.massExtendRenewalDates(
            productID: "com.example.monthly", storefronts: ["USA", "CAN"], days: 7, reasonCode: 3, requestID: id,
            bundleID: F.bundle, environment: .sandbox)
        #expect(echoed == id)
        let posted = try JSONValue.parse(try #require(transport.sent.first?.body))
        #expect(
            posted
                == .object([
                    "productId": .string("com.example.monthly"), "extendByDays": .int(7), "extendReasonCode": .int(3),
                    "requestIdentifier": .string(id), "storefrontCountryCodes": .array([.string("USA"), .string("CAN")]),
                ]))
        #expect(transport.sent.first?.method == .post)
        let status = try await client.massExtensionStatus(
            productID: "com.example.monthly", requestID: id, bundleID: F.bundle, environment: .sandbox)
        #expect(
            status
                == .init(
                    requestIdentifier: id, complete: true, completeDate: 1_790_000_000_000, succeededCount: 30, failedCount: 2))
        #expect(transport.sent.count == 2)
    }

    @Test func a429IsHonouredUntilRetryAfterAndTheLimiterHoldsTheEndpoint() async throws {
        let clock = ManualMonotonicClock()
        let info = JSONValue.object(["signedTransactionInfo": .string(F.signed(F.transaction("5")))]).jsonBytes
        let transport = ScriptedServerAPI([
            ("/inApps/v1/transactions/5", F.error(429, 4_290_000, retryAfter: String(F.wall + 2_000))),
            ("/inApps/v1/transactions/5", .response(status: 200, body: info)),
        ])
        let t = try await F.client(transport, clock: clock).transactionInfo("5", bundleID: F.bundle)
        #expect(t.transactionID == "5")
        #expect(clock.now == .seconds(2), "waited \(clock.now)")
    }

    @Test func eachRetryableCodeIsRetriedAndThenAnswers() async throws {
        for code: Int64 in [4_040_002, 4_040_004, 4_040_006, 5_000_001] {
            let info = JSONValue.object(["signedTransactionInfo": .string(F.signed(F.transaction("5")))]).jsonBytes
            let transport = ScriptedServerAPI([
                ("/transactions/5", F.error(code == 5_000_001 ? 500 : 404, code)),
                ("/transactions/5", .response(status: 200, body: info)),
            ])
            #expect(try await F.client(transport).transactionInfo("5", bundleID: F.bundle).transactionID == "5")
            #expect(transport.sent.count == 2 && transport.sent.allSatisfy { $0.url.hasPrefix("https://prod.test") })
        }
    }

    @Test func aForgedOrExpiredSignedAnswerIsRefused() async throws {
        let good = F.signed(F.transaction("5"))
        let parts = good.split(separator: ".").map(String.init)
        var forgedPayload = F.transaction("5")
        if case .object(var o) = forgedPayload {
            o["expiresDate"] = .int(F.wall + 3_650 * F.day)
            forgedPayload = .object(o)
        }
        let forged = [parts[0], JWSSigner.base64URL(forgedPayload.jsonBytes), parts[2]].joined(separator: ".")
        // Signed after the test leaf expired (2033): not valid at its own signedDate.
        let expired = F.signed(F.transaction("5", signedDate: 2_000_000_000_000))
        for (jws, code) in [(forged, "invalid_signature"), (expired, "certificate_not_valid")] {
            let transport = ScriptedServerAPI([
                (
                    "/transactions/5",
                    .response(status: 200, body: JSONValue.object(["signedTransactionInfo": .string(jws)]).jsonBytes)
                )
            ])
            do {
                _ = try await F.client(transport).transactionInfo("5", bundleID: F.bundle)
                Issue.record("\(code): accepted")
            } catch let error as ServerAPIFailure {
                guard case .signedData(let refusal) = error else {
                    Issue.record("\(error)")
                    continue
                }
                #expect(refusal.code == code)
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func statusesCarryEachSubscriptionsVerifiedTransactionAndRenewal() async throws {
        let renewal = F.signed(
            .object([
                "originalTransactionId": .string("1000"), "productId": .string("monthly"),
                "autoRenewProductId": .string("monthly"), "autoRenewStatus": .int(1),
                "environment": .string("Production"), "signedDate": .int(F.wall),
            ]))
        let body = JSONValue.object([
            "environment": .string("Production"), "bundleId": .string(F.bundle),
            "data": .array([
                .object([
                    "subscriptionGroupIdentifier": .string("g1"),
                    "lastTransactions": .array([
                        .object([
                            "status": .int(1), "originalTransactionId": .string("1000"),
                            "signedTransactionInfo": .string(F.signed(F.transaction("9"))),
                            "signedRenewalInfo": .string(renewal),
                        ])
                    ]),
                ])
            ]),
        ]).jsonBytes
        let transport = ScriptedServerAPI([("/inApps/v1/subscriptions/9", .response(status: 200, body: body))])
        let statuses = try await F.client(transport).subscriptionStatuses(of: "9", bundleID: F.bundle)
        #expect(statuses.subscriptions.count == 1)
        #expect(statuses.subscriptions[0].status == 1 && statuses.subscriptions[0].groupID == "g1")
        #expect(statuses.subscriptions[0].transaction?.transactionID == "9")
        #expect(statuses.subscriptions[0].renewal?.autoRenewStatus == true)
    }

    @Test func applesFixtureBodiesDecode() throws {
        let history = try ServerAPIResponses.transactionPage(Fixtures.bytes("AppStoreServerAPI/transactionHistoryResponse.json"))
        #expect(
            history
                == .init(
                    revision: "revision_output", hasMore: true,
                    signedTransactions: ["signed_transaction_value", "signed_transaction_value2"]))
        let statuses = try ServerAPIResponses.statuses(
            Fixtures.bytes("AppStoreServerAPI/getAllSubscriptionStatusesResponse.json"))
        #expect(statuses.last.map(\.originalTransactionID) == ["3749183", "5314314134", "3413453"])
        #expect(statuses.last.map(\.status) == [1, 5, 2])
        let notifications = try ServerAPIResponses.notificationPage(
            Fixtures.bytes("AppStoreServerAPI/getNotificationHistoryResponse.json"))
        #expect(notifications.signedPayloads == ["signed_payload_one", "signed_payload_two"])
        #expect(notifications.hasMore && notifications.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a")
        #expect(
            ServerAPIResponses.error(Fixtures.bytes("AppStoreServerAPI/transactionIdNotFoundError.json"))?.code == 4_040_010)
        #expect(
            ServerAPIResponses.error(Fixtures.bytes("AppStoreServerAPI/apiTooManyRequestsException.json"))?.code == 4_290_000)
    }
}
