import CurlTransport
import Entitlements
import JSON
import Testing

@testable import AppStore

@Suite("Ids in App Store Server API paths")
struct AppleIdentifierTests {
    typealias F = ServerAPIFixtures

    /// What a client might send instead of an id, of no kind's format: dot segments, escapes of them, separators,
    /// queries, fragments, control bytes, other scripts, nothing, too much.
    static let hostile = [
        "", ".", "..", "%2E%2E", "%2e", "../v1", "1/../2", "1/2", "1?x=y", "1#f", "1;x", "1%00", "1\u{0}", " 1", "1 ",
        "1\r\nHost: evil", "١٢٣", "1.0", "+1", String(repeating: "1", count: 129),
    ]

    @Test func eachKindTakesApplesFormatOnly() {
        for good in ["0", "1", "2000000335310644", String(repeating: "9", count: 64)] {
            #expect(AppleIdentifier(good, .transaction) != nil, "\(good)")
        }
        for good in ["MQ3ZY1C2XV", "mk5tttvwjh", "7"] { #expect(AppleIdentifier(good, .order) != nil, "\(good)") }
        #expect(AppleIdentifier("ce3af791-365e-4c60-841b-1674b43c1609_1698148900000", .testNotificationToken) != nil)
        for bad in Self.hostile { #expect(AppleIdentifier(bad, .transaction) == nil, "\(bad.debugDescription)") }
        for bad in Self.hostile { #expect(AppleIdentifier(bad, .order) == nil, "\(bad.debugDescription)") }
        for bad in Self.hostile {
            #expect(AppleIdentifier(bad, .testNotificationToken) == nil, "\(bad.debugDescription)")
        }
        for bad in ["MQ3ZY1C2XV", "1e3", "-1", String(repeating: "1", count: 65)] {
            #expect(AppleIdentifier(bad, .transaction) == nil)
        }
        #expect(AppleIdentifier("-1", .order) == nil && AppleIdentifier("M-1", .order) == nil)
        #expect(AppleIdentifier("a.b", .testNotificationToken) == nil)
        // Product ids take dots, never dots alone (a dot segment); request identifiers are UUIDs.
        for good in ["com.example.premium.monthly", "premium_1", "pass-30d", "7", "a..b", ".x"] {
            #expect(AppleIdentifier(good, .productID) != nil, "\(good)")
        }
        for bad in Self.hostile + ["...", "a/b", "a b"] where bad != "1.0" {
            #expect(AppleIdentifier(bad, .productID) == nil, "\(bad.debugDescription)")
        }
        #expect(AppleIdentifier("ce3af791-365e-4c60-841b-1674b43c1609", .requestIdentifier) != nil)
        for bad in Self.hostile + ["a_b", "a.b"] {
            #expect(AppleIdentifier(bad, .requestIdentifier) == nil, "\(bad.debugDescription)")
        }
    }

    @Test func everyEndpointPathEndsInExactlyTheIdItTakes() throws {
        let transaction = try #require(AppleIdentifier("2000000335310644", .transaction))
        #expect(ServerAPIEndpoint.transactionInfo.path(transaction) == "/inApps/v1/transactions/2000000335310644")
        #expect(ServerAPIEndpoint.transactionHistory.path(transaction) == "/inApps/v2/history/2000000335310644")
        #expect(ServerAPIEndpoint.subscriptionStatuses.path(transaction) == "/inApps/v1/subscriptions/2000000335310644")
        #expect(ServerAPIEndpoint.refundHistory.path(transaction) == "/inApps/v2/refund/lookup/2000000335310644")
        #expect(ServerAPIEndpoint.extendRenewalDate.path(transaction) == "/inApps/v1/subscriptions/extend/2000000335310644")
        #expect(ServerAPIEndpoint.sendConsumption.path(transaction) == "/inApps/v2/transactions/consumption/2000000335310644")
        #expect(
            ServerAPIEndpoint.appTransactionInfo.path(transaction) == "/inApps/v1/transactions/appTransactions/2000000335310644")
        // Two take the id before a last fixed segment.
        #expect(ServerAPIEndpoint.finishTransaction.path(transaction) == "/inApps/v1/transactions/2000000335310644/finish")
        #expect(
            ServerAPIEndpoint.setAppAccountToken.path(transaction) == "/inApps/v1/transactions/2000000335310644/appAccountToken")
        let order = try #require(AppleIdentifier("MK5TTTVWJH", .order))
        #expect(ServerAPIEndpoint.lookUpOrderID.path(order) == "/inApps/v1/lookup/MK5TTTVWJH")
        #expect(ServerAPIEndpoint.notificationHistory.path() == "/inApps/v1/notifications/history")
        #expect(ServerAPIEndpoint.massExtendRenewalDates.path() == "/inApps/v1/subscriptions/extend/mass")
        let product = try #require(AppleIdentifier("com.example.monthly", .productID))
        let request = try #require(AppleIdentifier("ce3af791-365e-4c60-841b-1674b43c1609", .requestIdentifier))
        #expect(
            ServerAPIEndpoint.massExtensionStatus.path(product, request)
                == "/inApps/v1/subscriptions/extend/mass/com.example.monthly/ce3af791-365e-4c60-841b-1674b43c1609")
        for endpoint in ServerAPIEndpoint.allCases {
            let takesAnID = [
                .transactionInfo, .transactionHistory, .subscriptionStatuses, .refundHistory, .extendRenewalDate,
                .sendConsumption, .lookUpOrderID, .testNotificationStatus, .appTransactionInfo, .finishTransaction,
                .setAppAccountToken,
            ].contains(endpoint)
            #expect((endpoint.idKinds.count == 1) == takesAnID, "\(endpoint)")
        }
        #expect(ServerAPIEndpoint.massExtensionStatus.idKinds == [.productID, .requestIdentifier])
    }

    /// The issue's finding: `..` and `.` asked `/inApps/v1/` and `/inApps/v2/history/`, and Apple's
    /// 401 for those read as the operator's misconfiguration. Now nothing is sent at all.
    @Test func aHostileIdIsRefusedBeforeAnyRequestOnEveryEndpoint() async throws {
        let transport = ScriptedServerAPI([])
        let client = try F.client(transport)
        for bad in Self.hostile {
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.transactionInfo(bad, bundleID: F.bundle)
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.transactionHistory(of: bad, bundleID: F.bundle)
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.finishTransaction(bad, bundleID: F.bundle, environment: .sandbox)
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.setAppAccountToken(
                    "a0a0a0a0-0000-4000-8000-000000000001", originalTransactionID: bad, bundleID: F.bundle, environment: .sandbox)
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.subscriptionStatuses(of: bad, bundleID: F.bundle)
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.refundHistory(of: bad, bundleID: F.bundle)
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.extendRenewalDate(
                    originalTransactionID: bad, bundleID: F.bundle, days: 1, reasonCode: 0, requestID: "r")
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.transaction)) {
                try await client.sendConsumption(transactionID: bad, bundleID: F.bundle, environment: .production, .object([:]))
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.testNotificationToken)) {
                try await client.testNotificationStatus(bad, bundleID: F.bundle, environment: .production)
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.order)) {
                try await client.lookUpOrder(bad, bundleID: F.bundle)
            }
            let uuid = "ce3af791-365e-4c60-841b-1674b43c1609"
            if bad != "1.0" {
                await #expect(throws: ServerAPIFailure.invalidIdentifier(.productID)) {
                    try await client.massExtensionStatus(
                        productID: bad, requestID: uuid, bundleID: F.bundle, environment: .production)
                }
                await #expect(throws: ServerAPIFailure.invalidIdentifier(.productID)) {
                    try await client.massExtendRenewalDates(
                        productID: bad, storefronts: [], days: 1, reasonCode: 3, requestID: uuid, bundleID: F.bundle,
                        environment: .production)
                }
            }
            await #expect(throws: ServerAPIFailure.invalidIdentifier(.requestIdentifier)) {
                try await client.massExtensionStatus(
                    productID: "com.example.monthly", requestID: bad, bundleID: F.bundle, environment: .production)
            }
        }
        #expect(transport.sent.isEmpty, "\(transport.sent.map(\.url))")
    }

    @Test func aValidIdGoesOutAsItsOwnSegment() async throws {
        let transport = ScriptedServerAPI([
            ("prod.test/inApps/v1/lookup/MK5TTTVWJH", .response(status: 200, body: Array(#"{"status":1}"#.utf8)))
        ])
        let found = try await F.client(transport).lookUpOrder("MK5TTTVWJH", bundleID: F.bundle)
        #expect(!found.valid)
        #expect(transport.sent.map(\.url) == ["https://prod.test/inApps/v1/lookup/MK5TTTVWJH"])
    }
}
