import AppStore
import CurlTransport
import Entitlements
import Foundation
import HTTPServer
import JSON
import Logging
import ReceiptTesting
import Synchronization
import Testing

@testable import AppStoreSimulator

/// The simulator on a loopback port, and a client that reaches it through real libcurl.
private func withSimulator(
    secret: String? = "s3cret", _ body: (VerifyReceiptClient) async throws -> Void
) async throws {
    let simulator = AppStoreSimulator(configuration: .init(bundleID: "com.example.app", sharedSecret: "s3cret"))
    let server = HTTPServer(
        configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
        responder: simulator, logger: Logger(label: "simulator"))
    let port = try server.start()
    let transport = CurlMultiTransport(configuration: .init(allowHTTP: true))
    let client = VerifyReceiptClient(
        configuration: .init(
            productionURL: "http://127.0.0.1:\(port)/production/verifyReceipt",
            sandboxURL: "http://127.0.0.1:\(port)/sandbox/verifyReceipt", sharedSecret: secret,
            policy: VerifyReceiptPolicy(maxRetries: 2, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))),
        transport: transport)
    try await body(client)
    transport.shutdown()
    server.shutdown()
    await server.waitUntilStopped()
}

/// AppStore's wire transactions as Entitlements' facts (ReceiptService will do this from storage).
private func statuses(_ response: VerifyReceiptResponse) -> (subs: [SubscriptionStatus], other: [NonSubscriptionPurchase]) {
    let purchases = response.transactions.map {
        Purchase(
            transactionID: $0.transactionID, originalTransactionID: $0.originalTransactionID, productID: $0.productID,
            purchaseDate: $0.purchaseDateMs, originalPurchaseDate: $0.originalPurchaseDateMs, expiresDate: $0.expiresDateMs,
            cancellationDate: $0.cancellationDateMs, isTrialPeriod: $0.isTrialPeriod,
            isInIntroOfferPeriod: $0.isInIntroOfferPeriod,
            isUpgraded: $0.isUpgraded, ownershipType: $0.ownershipType)
    }
    let renewals = response.pendingRenewalInfo.map {
        Renewal(
            originalTransactionID: $0.originalTransactionID, autoRenewProductID: $0.autoRenewProductID,
            autoRenewStatus: $0.autoRenewStatus, expirationIntent: $0.expirationIntent,
            gracePeriodExpiresDate: $0.gracePeriodExpiresDateMs, isInBillingRetryPeriod: $0.isInBillingRetryPeriod)
    }
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    return (
        Derivation.subscriptions(
            Facts(purchases: purchases, renewals: renewals.map { RenewalObservation(observedAt: now, renewal: $0) }), now: now),
        Derivation.nonSubscriptions(Facts(purchases: purchases), now: now)
    )
}

@Suite("App Store simulator", .serialized)
struct AppStoreSimulatorTests {
    @Test func eachScriptedSubscriptionHasItsDocumentedState() async throws {
        let expected: [(String, SubscriptionState, String, Int64?)] = [
            ("active_monthly", .active, "normal", nil), ("trial", .active, "trial", nil), ("intro", .active, "intro", nil),
            ("expired_voluntary", .expired, "normal", 1), ("expired_billing_error", .expired, "normal", 2),
            ("expired_price_increase", .expired, "normal", 3), ("expired_not_for_sale", .expired, "normal", 4),
            ("expired_other", .expired, "normal", 5), ("refunded", .refunded, "normal", nil),
            ("grace_period", .gracePeriod, "normal", 2), ("billing_retry", .billingRetry, "normal", 2),
            ("family_shared", .active, "normal", nil), ("family_revoked", .revoked, "normal", nil),
            ("cancelled", .active, "normal", nil), ("downgrade_pending", .active, "normal", nil),
            ("price_increase_pending", .active, "normal", nil), ("offer_code", .active, "normal", nil),
            ("promotional_offer", .active, "normal", nil), ("past_refund", .active, "normal", nil),
        ]
        try await withSimulator { client in
            for (scenario, state, periodType, intent) in expected {
                let v = await client.verify(receiptData: Scenario.receiptData(scenario))
                guard case .valid(let response, .production) = v.result else {
                    Issue.record("\(scenario): \(v.result)")
                    continue
                }
                #expect(response.receipt?.bundleID == "com.example.app")
                #expect(response.pendingRenewalInfo.first?.expirationIntent == intent, "\(scenario)")
                let subs = statuses(response).subs
                #expect(subs.map(\.state) == [state], "\(scenario)")
                #expect(subs.first?.periodType == periodType, "\(scenario)")
                #expect(subs.first?.ownership == (scenario.hasPrefix("family_") ? "family_shared" : "purchased"))
            }
        }
    }

    @Test func upgradesAndOneTimePurchases() async throws {
        try await withSimulator { client in
            guard case .valid(let upgraded, _) = await client.verify(receiptData: Scenario.receiptData("upgraded")).result else {
                Issue.record("upgraded")
                return
            }
            #expect(
                statuses(upgraded).subs.map { "\($0.productID):\($0.state.rawValue)" } == [
                    "monthly:upgraded", "premium_monthly:active",
                ])
            guard case .valid(let lifetime, _) = await client.verify(receiptData: Scenario.receiptData("non_consumable:7")).result
            else {
                Issue.record("non_consumable")
                return
            }
            #expect(statuses(lifetime).other.map(\.productID) == ["lifetime"])
            #expect(statuses(lifetime).subs.isEmpty)
            guard case .valid(let coins, _) = await client.verify(receiptData: Scenario.receiptData("consumable")).result else {
                Issue.record("consumable")
                return
            }
            #expect(statuses(coins).other.map(\.productID) == ["coins_100"])
        }
    }

    @Test func environmentsRetriesAndFailures() async throws {
        try await withSimulator { client in
            let sandbox = await client.verify(receiptData: Scenario.receiptData("sandbox_only"))
            #expect(sandbox.environment == .sandbox && sandbox.attempts == 2)
            let production = await client.verify(receiptData: Scenario.receiptData("production_only"))
            #expect(production.environment == .production && production.attempts == 1)
            for scenario in ["unavailable_once", "retryable_once"] {
                let v = await client.verify(receiptData: Scenario.receiptData(scenario))
                guard case .valid = v.result else {
                    Issue.record("\(scenario): \(v.result)")
                    continue
                }
                #expect(v.attempts == 2, "\(scenario)")
            }
            let malformed = await client.verify(receiptData: Scenario.receiptData("status_21002"))
            guard case .unavailable(let s, _) = malformed.result else {
                Issue.record("21002: \(malformed.result)")
                return
            }
            #expect(s?.rawValue == 21002 && malformed.attempts == 3)
            #expect(
                await client.verify(receiptData: Scenario.receiptData("status_21003")).result
                    == .invalidReceipt(AppleStatus(rawValue: 21003)))
            #expect(
                await client.verify(receiptData: Scenario.receiptData("status_21010")).result
                    == .invalidReceipt(AppleStatus(rawValue: 21010)))
            #expect(
                await client.verify(receiptData: "not base64!").result
                    == .unavailable(status: AppleStatus(rawValue: 21002), reason: "Apple asked to try again; 2 retries used"))
        }
    }

    @Test func anOutageDrillAnswers503UntilItEndsAndCountsTheCalls() async throws {
        let simulator = AppStoreSimulator(configuration: .init())
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
            responder: simulator, logger: Logger(label: "simulator"))
        let port = try server.start()
        let transport = CurlMultiTransport(configuration: .init(allowHTTP: true))
        defer { transport.shutdown() }
        let base = "http://127.0.0.1:\(port)"
        func status(_ path: String, _ body: String) async -> Int? {
            guard
                case .response(let status, _, _) = await transport.post(
                    url: base + path, json: Array(body.utf8), timeout: hangGuard)
            else { return nil }
            return status
        }
        let verify = #"{"receipt-data":"\#(Scenario.receiptData("active_monthly"))"}"#
        #expect(await status("/production/verifyReceipt", verify) == 200)
        #expect(await status("/control/outage", #"{"seconds":60}"#) == 204)
        #expect(await status("/production/verifyReceipt", verify) == 503)
        #expect(await status("/control/outage", #"{"seconds":0}"#) == 204)
        #expect(await status("/production/verifyReceipt", verify) == 200)
        #expect(await status("/control/outage", #"{"seconds":"x"}"#) == 400)
        #expect(simulator.callCounts == (3, 1))
        server.shutdown()
        await server.waitUntilStopped()
    }

    @Test func timeMovesRenewingAndRecoveringSubscriptions() {
        // `statuses` judges at the real now: the simulator's clock starts there and moves ahead.
        let clock = Mutex<Int64>(Int64(Date().timeIntervalSince1970 * 1000))
        let simulator = AppStoreSimulator(configuration: .init(), now: { clock.withLock { $0 } })
        func subs(_ content: String) -> [SubscriptionStatus] {
            let body = Array(#"{"receipt-data":"\#(Scenario.receiptData(content))"}"#.utf8)
            let answer = simulator.answer(requestBody: body, environment: "Production")
            guard let response = try? VerifyReceiptResponse(json: answer.jsonBytes) else { return [] }
            return statuses(response).subs
        }
        let day: Int64 = 86_400_000
        let first = subs("renewing")
        #expect(first.map(\.state) == [.active])
        #expect(subs("billing_retry_recovers").map(\.state) == [.billingRetry])
        clock.withLock { $0 += 26 * day }
        // The new period is there (judged now, both periods are in the future or current).
        let later = subs("renewing")
        #expect((later.first?.expiresAt ?? 0) == (first.first?.expiresAt ?? 0) + 30 * day)
        let recovered = subs("billing_retry_recovers")
        #expect(recovered.map(\.state) == [.active])
        #expect((recovered.first?.expiresAt ?? 0) > (first.first?.expiresAt ?? 0))
    }

    @Test func aLongHistoryHoldsAThousandPeriodsTheLastRunning() throws {
        let simulator = AppStoreSimulator(configuration: .init())
        let body = Array(#"{"receipt-data":"\#(Scenario.receiptData("long_history:x"))"}"#.utf8)
        let response = try VerifyReceiptResponse(json: simulator.answer(requestBody: body, environment: "Production").jsonBytes)
        #expect(response.transactions.count == 1000)
        #expect(Set(response.transactions.map(\.transactionID)).count == 1000)
        #expect(statuses(response).subs.map(\.state) == [.active])
    }

    /// A commitment plan through verifyReceipt: 14 monthly periods, the last running, and none of
    /// the commitment's terms (only the App Store Server API states them).
    @Test func aCommitmentPlanThroughVerifyReceiptIsPlainMonths() throws {
        let simulator = AppStoreSimulator(configuration: .init())
        let body = Array(#"{"receipt-data":"\#(Scenario.receiptData("commitment:x"))"}"#.utf8)
        let answer = simulator.answer(requestBody: body, environment: "Production")
        #expect(!String(decoding: answer.jsonBytes, as: UTF8.self).contains("commitment"))
        let response = try VerifyReceiptResponse(json: answer.jsonBytes)
        #expect(response.transactions.count == 14)
        #expect(statuses(response).subs.map(\.state) == [.active])
    }

    @Test func aWrongSharedSecretIs21004() async throws {
        try await withSimulator(secret: "wrong") { client in
            #expect(
                await client.verify(receiptData: Scenario.receiptData("active_monthly")).result
                    == .misconfigured(AppleStatus(rawValue: 21004))
            )
        }
    }

    @Test func differentTagsGiveDifferentTransactions() async throws {
        try await withSimulator { client in
            guard case .valid(let a, _) = await client.verify(receiptData: Scenario.receiptData("active_monthly:a")).result,
                case .valid(let b, _) = await client.verify(receiptData: Scenario.receiptData("active_monthly:b")).result
            else {
                Issue.record("not valid")
                return
            }
            #expect(Set(a.transactions.map(\.transactionID)).isDisjoint(with: b.transactions.map(\.transactionID)))
        }
    }

    @Test func eachEnvironmentRefersTheOtherOnesReceipts() {
        let simulator = AppStoreSimulator(configuration: .init())
        func status(_ content: String, _ environment: String) -> String {
            let body = Array(#"{"receipt-data":"\#(Scenario.receiptData(content))"}"#.utf8)
            let text = String(decoding: simulator.answer(requestBody: body, environment: environment).jsonBytes, as: UTF8.self)
            return String(text.split(separator: "\"status\":")[1].prefix { $0.isNumber })
        }
        #expect(status("production_only", "Sandbox") == "21008")
        #expect(status("production_only", "Production") == "0")
        #expect(status("sandbox_only", "Production") == "21007")
        #expect(status("sandbox_only", "Sandbox") == "0")
    }
}
