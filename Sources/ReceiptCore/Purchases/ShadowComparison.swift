package import AppStore
import Clocks
import CoreMetrics
import DatabaseEngine
package import Entitlements
package import JSON
import Logging
import Storage
import Synchronization
package import Workers

/// `appStore.verifier` = `shadow`: verifyReceipt answers the client, and the same customer is
/// asked of the App Store Server API in the background. The documents the two answers derive to
/// (alone, at the same instant, under the same rules) are compared; a difference is counted
/// (`shadow_comparisons_total{outcome}`), logged and stored for `GET /v1/admin/shadow-diffs`. A team
/// switches to `server_api` once that list stays empty. Nothing the Server API says is stored.
package final class ShadowComparison: UseCase, Sendable {
    /// How one comparison ended (the metric's `outcome`).
    package enum Outcome: String, Sendable, Equatable {
        case agree
        case differ
        /// The Server API did not answer, or refused: nothing to compare.
        case serverAPIFailed = "server_api_failed"
        /// verifyReceipt's answer held no transaction to ask about.
        case nothingToCompare = "nothing_to_compare"
        /// Too many comparisons already under way: this one was not made.
        case skipped
    }

    /// One field that reads differently; nil: absent on that side.
    package struct Difference: Sendable, Equatable {
        package var path: String
        package var verifyReceipt: JSONValue?
        package var serverAPI: JSONValue?

        var json: JSONValue {
            .object([
                "path": .string(path), "verify_receipt": verifyReceipt ?? .null, "server_api": serverAPI ?? .null,
            ])
        }
    }

    let serverAPI: ServerAPIClient
    package let context: UseCaseContext
    let settings: EntitlementSettings
    /// Comparisons under way at most: the shadow never queues without bound behind a slow Apple.
    let maxInFlight: Int
    private let inFlight = Atomic<Int>(0)
    /// Where the comparisons run.
    let background: BackgroundWork

    package init(
        context: UseCaseContext, serverAPI: ServerAPIClient, settings: EntitlementSettings, maxInFlight: Int = 64,
        background: BackgroundWork = BackgroundWork()
    ) {
        self.background = background
        self.serverAPI = serverAPI
        self.context = context
        self.settings = settings
        self.maxInFlight = maxInFlight
    }

    /// Starts comparing `verifyReceipt` (what verifyReceipt said, already stored for `appUserID`)
    /// with the Server API's answer, without waiting for it.
    func start(_ verifyReceipt: VerifiedFacts, appUserID: String, bundleID: String) {
        guard inFlight.add(1, ordering: .relaxed).newValue <= maxInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            count(.skipped)
            return
        }
        background.start { [self] in
            _ = await compare(verifyReceipt, appUserID: appUserID, bundleID: bundleID)
            inFlight.subtract(1, ordering: .relaxed)
        }
    }

    /// Asks the Server API about the customer of `verifyReceipt`, derives both documents at the
    /// same instant and records what differs.
    package func compare(_ verifyReceipt: VerifiedFacts, appUserID: String, bundleID: String) async -> Outcome {
        let outcome = await outcome(verifyReceipt, appUserID: appUserID, bundleID: bundleID)
        count(outcome)
        return outcome
    }

    private func outcome(_ verifyReceipt: VerifiedFacts, appUserID: String, bundleID: String) async -> Outcome {
        // Any transaction id of the customer will do (§4.3): the newest one.
        guard
            let newest = verifyReceipt.purchases.map(\.fact).max(by: {
                ($0.purchaseDate ?? 0, $0.transactionID) < ($1.purchaseDate ?? 0, $1.transactionID)
            })
        else { return .nothingToCompare }
        let serverAPIFacts: VerifiedFacts
        do {
            serverAPIFacts = try await serverAPI.customer(of: newest.transactionID, bundleID: bundleID).facts
        } catch {
            logger.warning(
                "shadow: the App Store Server API did not answer", metadata: ["user": "\(appUserID)", "error": "\(error)"])
            return .serverAPIFailed
        }
        let now = clock.now()
        let differences = Self.differences(
            document(verifyReceipt, appUserID: appUserID, now: now), document(serverAPIFacts, appUserID: appUserID, now: now))
        guard !differences.isEmpty else { return .agree }
        logger.warning(
            "shadow: verifyReceipt and the App Store Server API disagree",
            metadata: [
                "user": "\(appUserID)", "transaction_id": "\(newest.transactionID)",
                "paths": "\(differences.map(\.path).joined(separator: ","))",
            ])
        let row = ShadowDiffRecord(
            appUserID: appUserID, transactionID: newest.transactionID, environment: verifyReceipt.environment.rawValue,
            differences: String(decoding: JSONValue.array(differences.map(\.json)).jsonBytes, as: UTF8.self), at: now)
        do {
            _ = try await database.write { db in try ShadowDiffStore(db).insert(row) }
        } catch {
            logger.error("shadow: a difference could not be stored", metadata: ["error": "\(error)"])
        }
        return .differ
    }

    /// The document `facts` alone derive to at `now` (its content: no version, no request date).
    /// Money, terms and the `appTransactionId` are left out of both sides: verifyReceipt states
    /// none of them, so only access is compared.
    func document(_ facts: VerifiedFacts, appUserID: String, now: Int64) -> JSONValue {
        let renewals = facts.renewals.enumerated().map {
            RenewalObservation(observedAt: now, sequence: Int64($0.offset), renewal: $0.element.fact)
        }
        let purchases = facts.purchases.map { stated in
            var p = stated.fact
            p.commerce = Commerce()
            p.appTransactionID = nil
            return p
        }
        let derived = Facts(purchases: purchases, renewals: renewals).clamped(to: AppleDate.range)
        return .object(SubscriberDocument(appUserID: appUserID, facts: derived, settings: settings, now: now).content)
    }

    /// Every leaf that differs between two JSON values, by path (`entitlements.pro.expires_at`,
    /// `non_subscriptions.gems[0].quantity`), in path order. Pure.
    package static func differences(_ a: JSONValue?, _ b: JSONValue?, at path: String = "") -> [Difference] {
        switch (a, b) {
        case (.object(let x)?, .object(let y)?):
            return Set(x.keys).union(y.keys).sorted().flatMap { key in
                differences(x[key], y[key], at: path.isEmpty ? key.string : path + "." + key.string)
            }
        case (.array(let x)?, .array(let y)?):
            return (0..<max(x.count, y.count)).flatMap { i in
                differences(i < x.count ? x[i] : nil, i < y.count ? y[i] : nil, at: path + "[\(i)]")
            }
        default:
            return a == b ? [] : [Difference(path: path, verifyReceipt: a, serverAPI: b)]
        }
    }

    private func count(_ outcome: Outcome) {
        Counter(label: "shadow_comparisons_total", dimensions: [("outcome", outcome.rawValue)], factory: metrics).increment()
    }
}
