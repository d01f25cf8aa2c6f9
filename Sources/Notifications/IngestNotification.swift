package import AppStore
import Clocks
import Crypto
import DatabaseEngine
import Entitlements
import FoundationEssentials
import JSON
import Logging
package import ReceiptCore
import Storage
package import StoreCalls
package import Workers

/// An App Store Server Notification (V1 or V2, told apart by shape): verified, stored once
/// (deduplicated), applied to its subscriber like any verified receipt, and only then reported
/// as received, so Apple's delivery is acknowledged only for what is durable.
package struct IngestNotification: UseCase, Sendable {
    let verifier: SignedDataVerifier
    package let context: UseCaseContext
    let bundleIDs: [String]
    /// V1's proof of origin: the shared secret of the app's App Store Connect account (by `bid`);
    /// nil: that app's V1 notifications are refused.
    let sharedSecret: @Sendable (_ bundleID: String) -> String?
    /// Answers `CONSUMPTION_REQUEST`s (`appStore.consumption.enabled`); nil: they are only stored.
    let consumption: AnswerConsumptionRequest?
    /// Where the consumption answers run.
    let background: BackgroundWork

    package init(
        context: UseCaseContext, verifier: SignedDataVerifier, bundleIDs: [String],
        sharedSecret: @escaping @Sendable (_ bundleID: String) -> String?, consumption: AnswerConsumptionRequest? = nil,
        background: BackgroundWork = BackgroundWork()
    ) {
        self.background = background
        self.consumption = consumption
        self.verifier = verifier
        self.context = context
        self.bundleIDs = bundleIDs
        self.sharedSecret = sharedSecret
    }

    /// A verified notification, ready to store.
    struct Incoming: Sendable {
        var row: NotificationRecord
        /// The purchase facts it carries (empty for TEST, SUMMARY and the like).
        var facts: VerifiedFacts
        /// StoreKit's appAccountToken, to find the user when nobody holds the purchase yet.
        var accountToken: String?
        /// `RESCIND_CONSENT`: the Apple Account (its verified AppTransaction) that withdrew its
        /// consent to share consumption data.
        var rescinding: SignedAppTransaction? = nil
        /// `RENEWAL_EXTENSION`/`SUMMARY`: a mass extension finished at Apple (``MassExtensions``).
        var extensionSummary: ExtensionSummary? = nil
        /// `CONSUMPTION_REQUEST`: the customer's reason for asking a refund.
        var refundReason: String? = nil
    }

    /// The `summary` of a `RENEWAL_EXTENSION`/`SUMMARY` notification.
    struct ExtensionSummary: Sendable, Equatable {
        var requestID: String
        var productID: String
        var succeeded: Int64?
        var failed: Int64?

        init?(_ n: SignedNotification) {
            guard n.notificationType == .renewalExtension, n.subtype == .summary, let summary = n.raw["summary"],
                let requestID = summary["requestIdentifier"]?.string, let productID = summary["productId"]?.string
            else { return nil }
            self.requestID = requestID.lowercased()
            self.productID = productID
            succeeded = summary["succeededCount"]?.int64
            failed = summary["failedCount"]?.int64
        }
    }

    /// How a delivery ended.
    package struct Outcome: Sendable, Equatable {
        package var id: Int64
        /// What became of it (a duplicate: what became of its first delivery).
        package var outcome: NotificationOutcome
        package var duplicate: Bool
        package var appUserID: String?
        /// 1 or 2, the type and subtype as Apple named them (verified, so safe as metric labels).
        package var version = 0
        package var type: String = ""
        package var subtype: String?
    }

    /// Verifies and stores the notification `body` (the bytes Apple posted).
    package func callAsFunction(_ body: [UInt8]) async throws(ReceiptError) -> Outcome {
        let incoming = try await verify(body)
        do {
            var outcome = try await store(incoming)
            (outcome.version, outcome.type, outcome.subtype) = (incoming.row.version, incoming.row.type, incoming.row.subtype)
            if !outcome.duplicate { answerConsumption(incoming.row, id: outcome.id) }
            return outcome
        } catch {
            // The database failed: Apple must deliver again (a 5xx means retry).
            logger.error("notification not stored", metadata: ["error": "\(error)"])
            throw .notStored
        }
    }

    /// A new `CONSUMPTION_REQUEST`, once stored: answered in the background (Apple waits 12 hours;
    /// its delivery is acknowledged now).
    private func answerConsumption(_ row: NotificationRecord, id: Int64) {
        guard let consumption, row.version == 2, row.type == "CONSUMPTION_REQUEST", let transactionID = row.transactionID,
            let bundleID = row.bundleID, let environment = row.environment.flatMap(StoreEnvironment.init(rawValue:))
        else { return }
        let requestedAt = row.signedAt ?? row.receivedAt
        background.start {
            await consumption(
                notificationID: id, transactionID: transactionID, bundleID: bundleID, environment: environment,
                requestedAt: requestedAt)
        }
    }

    /// V2 (`{"signedPayload"}`) or V1 (`notification_type`); verified, mapped.
    func verify(_ body: [UInt8]) async throws(ReceiptError) -> Incoming {
        guard let json = try? JSONValue.parse(body), case .object(let fields) = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        let received = clock.now()
        if case .string(let jws)? = fields["signedPayload"] {
            let n: SignedNotification
            do {
                n = try await verifier.notification(jws)
            } catch {
                throw .signedData(error)
            }
            let row = NotificationRecord(
                dedupeKey: n.notificationUUID, version: 2, type: n.notificationType.rawValue, subtype: n.subtype?.rawValue,
                environment: n.environment.flatMap(StoreEnvironment.init(appleName:))?.rawValue, bundleID: n.bundleID,
                originalTransactionID: n.transaction?.originalTransactionID ?? n.renewal?.originalTransactionID,
                transactionID: n.transaction?.transactionID, appleStatus: n.status,
                outcome: NotificationOutcome.received.rawValue, signedAt: n.signedDate,
                receivedAt: received, body: String(decoding: body, as: UTF8.self))
            let facts = AppleFacts.facts(transaction: n.transaction, renewal: n.renewal, statedAt: n.signedDate)
            return Incoming(
                row: row, facts: facts, accountToken: n.transaction?.appAccountToken ?? n.renewal?.appAccountToken,
                rescinding: n.notificationType == .rescindConsent && n.appTransaction?.appTransactionID != nil
                    ? n.appTransaction : nil, extensionSummary: ExtensionSummary(n),
                refundReason: n.consumptionRequestReason)
        }
        guard fields["notification_type"]?.string != nil else {
            throw .invalidRequest("Neither a V2 notification (signedPayload) nor a V1 one (notification_type).")
        }
        // The password first: nothing else of a V1 body is read for a stranger but `bid`, which
        // names whose secret it must be (each App Store Connect account has its own; one app's
        // never opens another's). Constant time: SHA-256 digests compare in constant time,
        // whatever the lengths.
        guard let app = fields["bid"]?.string, let secret = sharedSecret(app),
            let password = fields["password"]?.string,
            SHA256.hash(data: Array(password.utf8)) == SHA256.hash(data: Array(secret.utf8))
        else { throw .wrongNotificationPassword }
        let parsed: NotificationV1?
        do {
            parsed = try NotificationV1(json)
        } catch {
            throw .invalidRequest("The notification's \(error).")
        }
        guard let n = parsed else { throw .invalidRequest("A V1 notification needs `notification_type`.") }
        guard let bundle = n.bundleID, bundleIDs.contains(bundle) else {
            throw .wrongApp("`bid` \(n.bundleID ?? "(absent)") is not a configured app.")
        }
        guard let unified = n.unifiedReceipt, unified.status == .valid else {
            throw .invalidRequest("`unified_receipt` is missing or its status is not 0.")
        }
        let environment = unified.environment ?? n.environment ?? .production
        var facts = AppleFacts.facts(of: unified, environment: environment, bundleID: bundle)
        // Auto-renew switched on or off: Apple dates the switch (Docs/apple-protocols.md §2.2), so the history does too.
        if n.notificationType == .didChangeRenewalStatus { facts.renewalChangedAt = n.autoRenewStatusChangeDateMs }
        let redacted = n.redacted.jsonBytes
        let newest = facts.purchases.map(\.fact).max {
            ($0.purchaseDate ?? 0, $0.transactionID) < ($1.purchaseDate ?? 0, $1.transactionID)
        }
        let row = NotificationRecord(
            dedupeKey: "v1:" + SHA256.hash(data: redacted).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(),
            version: 1,
            type: n.notificationType.rawValue, environment: environment.rawValue, bundleID: bundle,
            originalTransactionID: n.originalTransactionID ?? newest?.originalTransactionID, transactionID: newest?.transactionID,
            outcome: NotificationOutcome.received.rawValue, receivedAt: received, body: String(decoding: redacted, as: UTF8.self))
        return Incoming(row: row, facts: facts, accountToken: nil)
    }

    /// One durable save (see ``DatabaseQueue/write(durable:_:)``): the delivery (once), its facts
    /// under their holder (or waiting for one); then, off the writer, the state of everyone whose
    /// facts changed. The notification is stored once the save returns: a failure to derive after
    /// it is logged, and the next read derives again.
    func store(_ incoming: Incoming) async throws -> Outcome {
        let at = incoming.row.receivedAt
        let (outcome, changed) = try await database.write(durable: true) { [policy, state] db throws -> (Outcome, [String]) in
            let notifications = NotificationStore(db)
            guard let id = try notifications.insert(incoming.row) else {
                let stored = try notifications.find(dedupeKey: incoming.row.dedupeKey)
                return (
                    Outcome(
                        id: stored?.id ?? 0, outcome: NotificationOutcome(stored: stored?.outcome), duplicate: true,
                        appUserID: stored?.appUserID),
                    []
                )
            }
            if let app = incoming.rescinding, let appTransactionID = app.appTransactionID {
                // Consumption requests about this customer's purchases go unanswered from now on.
                let consent = ConsentStore(db)
                try consent.rescind(
                    appTransactionID: appTransactionID, bundleID: app.bundleID, environment: incoming.row.environment ?? "",
                    at: incoming.row.signedAt ?? at, notificationID: id)
                let person = try consent.person(of: appTransactionID)
                return (try finish(id, .consentRescinded, person, in: notifications), [])
            }
            if let summary = incoming.extensionSummary {
                // Apple finished a mass extension: its new expiries are fetched from now on.
                _ = try MassExtensionStore(db).summarized(
                    summary.requestID, productID: summary.productID, succeeded: summary.succeeded, failed: summary.failed,
                    at: incoming.row.signedAt ?? at, now: at)
            }
            // A refund request, or Apple's decision on one (Docs/analytics.md, refund_requests).
            var refundNews = false
            if incoming.row.version == 2, let original = incoming.row.originalTransactionID,
                let transaction = incoming.row.transactionID
            {
                refundNews = try RefundRequestStore(db).record(
                    notificationID: id, type: incoming.row.type, originalTransactionID: original,
                    transactionID: transaction, at: incoming.row.signedAt ?? at, reason: incoming.refundReason)
            }
            let facts = incoming.facts
            guard !facts.isEmpty else {
                return (try finish(id, .recorded, nil, in: notifications), [])
            }
            let store = ReceiptStore(db)
            // Before reading who holds the purchases (PostgreSQL: a post taking them waits, or is waited for).
            let originals = [incoming.row.originalTransactionID].compactMap({ $0 }) + facts.originals
            try store.lock(purchases: originals, subscriber: nil)
            var holder = try store.owners(of: originals).lazy.compactMap(\.self).first
            if holder == nil, let token = incoming.accountToken { holder = try store.subscriber(forAccountToken: token) }
            guard let user = holder else {
                _ = try store.saveUnowned(facts, now: at)
                return (try finish(id, .pendingOwner, nil, in: notifications), [])
            }
            switch try state.store(facts, for: user, policy: policy, in: db, now: at) {
            case .stored(let changes, let changed):
                if refundNews { try ChangeLog(db).append(user, at: at) }  // their charts count it
                return (try finish(id, changes > 0 ? .applied : .unchanged, user, in: notifications), changed)
            case .inUse, .proofRequired:
                // Under `keep`, the purchases are split between users: keep the facts, attach to nobody.
                let saved = try store.saveUnowned(facts, now: at)
                return (try finish(id, .ownerConflict, nil, in: notifications), saved.changed)
            }
        }
        await state.settleStored(changed, database: database, now: at, logger: logger, after: "notification")
        return outcome
    }

    /// Records what became of the stored notification `id`, for `user` when it has a holder.
    private func finish(_ id: Int64, _ outcome: NotificationOutcome, _ user: String?, in notifications: NotificationStore)
        throws -> Outcome
    {
        try notifications.finish(id, outcome: outcome.rawValue, appUserID: user)
        return Outcome(id: id, outcome: outcome, duplicate: false, appUserID: user)
    }
}
