package import AppStore
import Clocks
import CoreMetrics
import DatabaseEngine
package import Entitlements
package import JSON
import Logging
package import ReceiptCore
import Storage

/// Answers Apple's `CONSUMPTION_REQUEST` (a customer asked for a refund) with Send Consumption
/// Information, when `appStore.consumption.enabled`: Apple weighs the answer when deciding the
/// refund, and waits 12 hours for it. Every field comes from what receiptd stores or is configured
/// with (Docs/app-store.md "Consumption requests" lists each):
///
/// - `customerConsented`: true. Turning the feature on states that the app's customers consented
///   to share consumption data (Apple refuses the request otherwise). A customer who withdrew
///   their consent (Apple's `RESCIND_CONSENT`, ``ConsentStore``) gets no answer at all.
/// - `sampleContentProvided`: `appStore.consumption.sampleContentProvided` (a property of the app).
/// - `deliveryStatus`: `DELIVERED` when the transaction is stored and an app user holds it (receiptd
///   granted it to them); `UNDELIVERED_OTHER` when no app user holds it.
/// - `consumptionPercentage`: for a purchase with an expiry (a subscription period), the share of
///   the period elapsed when Apple asked, in thousandths of a percent (0…100000); absent for
///   consumables and non-consumables, whose use receiptd cannot see.
/// - `refundPreference`: `appStore.consumption.refundPreference`, absent when not configured.
package struct AnswerConsumptionRequest: UseCase, Sendable {
    package struct Settings: Sendable, Equatable {
        package var enabled: Bool
        package var sampleContentProvided: Bool
        /// `DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`, or nil (no preference stated).
        package var refundPreference: String?

        package init(enabled: Bool = false, sampleContentProvided: Bool = false, refundPreference: String? = nil) {
            self.enabled = enabled
            self.sampleContentProvided = sampleContentProvided
            self.refundPreference = refundPreference
        }

        package static let refundPreferences = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]
    }

    let settings: Settings
    let serverAPI: ServerAPIClient
    package let context: UseCaseContext

    package init(context: UseCaseContext, settings: Settings, serverAPI: ServerAPIClient) {
        self.settings = settings
        self.serverAPI = serverAPI
        self.context = context
    }

    /// The consumption information for `transactionID` as of `requestedAt` (the notification's
    /// signedDate), from stored facts. Pure apart from the read.
    package func body(transactionID: String, requestedAt: Int64) async throws -> JSONValue {
        let (stored, holder) = try await database.read { db in
            let store = ReceiptStore(db)
            let purchase = try store.purchase(transactionID)
            return (purchase, try purchase.flatMap { try store.owner(of: $0.fact.originalTransactionID) })
        }
        return Self.body(purchase: stored?.fact, holder: holder, requestedAt: requestedAt, settings: settings)
    }

    /// Send Consumption Information's v2 body for `purchase` held by `holder` (nil: nobody).
    static func body(purchase: Purchase?, holder: String?, requestedAt: Int64, settings: Settings) -> JSONValue {
        var body: [Identifier: JSONValue] = [
            "customerConsented": .bool(true), "sampleContentProvided": .bool(settings.sampleContentProvided),
            "deliveryStatus": .string(purchase != nil && holder != nil ? "DELIVERED" : "UNDELIVERED_OTHER"),
        ]
        if let purchase, let start = purchase.purchaseDate, let end = purchase.expiresDate, end > start {
            let elapsed = min(max(requestedAt - start, 0), end - start)
            body["consumptionPercentage"] = .int(Int(elapsed * 100_000 / (end - start)))  // exact, rounded down
        }
        if let preference = settings.refundPreference { body["refundPreference"] = .string(preference) }
        return .object(body)
    }

    /// Answers one request (the stored notification `notificationID`) and records what became of
    /// the answer beside the request (``RefundRequestStore``: the refund_requests chart counts
    /// answers and their delay against Apple's 12 hours). Failures are logged and counted
    /// (`consumption_answers_total{outcome}`), never thrown: the notification itself is stored already.
    package func callAsFunction(
        notificationID: Int64, transactionID: String, bundleID: String, environment: StoreEnvironment,
        requestedAt: Int64
    ) async {
        let outcome: String
        do {
            if let rescinded = try await database.read({ db in try ConsentStore(db).rescinded(forTransaction: transactionID) }) {
                // The customer withdrew their consent to share consumption data (RESCIND_CONSENT): nothing is sent.
                logger.info(
                    "consumption information not sent: the customer withdrew their consent",
                    metadata: ["transaction_id": "\(transactionID)", "rescinded_at": "\(rescinded)"])
                return await record(notificationID, "consent_rescinded", sent: false)
            }
            let body = try await body(transactionID: transactionID, requestedAt: requestedAt)
            try await serverAPI.sendConsumption(
                transactionID: transactionID, bundleID: bundleID, environment: environment, body)
            outcome = "sent"
            logger.info("consumption information sent", metadata: ["transaction_id": "\(transactionID)"])
        } catch let failure as ServerAPIFailure {
            outcome = failure.metricName
            logger.warning(
                "consumption information not sent", metadata: ["transaction_id": "\(transactionID)", "error": "\(failure)"])
        } catch {
            outcome = "not_read"
            logger.error("consumption information: cannot read the transaction", metadata: ["error": "\(error)"])
        }
        await record(notificationID, outcome, sent: outcome == "sent")
    }

    /// Counts `outcome` and records it on the request, now when `sent`, with a change for the
    /// purchase's holder (their charts' rollups are recomputed). A request erased meanwhile is
    /// gone, and stays gone: nothing is written for it.
    private func record(_ notificationID: Int64, _ outcome: String, sent: Bool) async {
        Counter(label: "consumption_answers_total", dimensions: [("outcome", outcome)], factory: metrics).increment()
        let now = clock.now()
        do {
            try await database.write { db in
                guard
                    let holder = try RefundRequestStore(db).answered(
                        notificationID: notificationID, answer: outcome, at: sent ? now : nil)
                else { return }
                try ChangeLog(db).append(holder, at: now)
            }
        } catch {
            logger.error("consumption answer not recorded", metadata: ["error": "\(error)"])
        }
    }
}
