import Clocks
import CoreMetrics
import DatabaseEngine
package import Entitlements
package import GooglePlay
import Identifiers
import Logging
package import ReceiptCore
import Storage
package import Workers

/// A Google Play real-time developer notification, as Cloud Pub/Sub pushes it to
/// `POST /v1/notifications/google` (Docs/google-play.md "Notifications"): the push's OIDC token
/// verified (Google's keys, the configured audience and service account), the message applied
/// once (by `messageId`), and the purchase it names asked of Google again, since a notification
/// only says that something changed. The state Google answers is saved for the purchase's holder
/// (known by the token, else by its account id), or kept for whoever posts the token; a voided
/// purchase's order is marked refunded. Pub/Sub retries any answer but 2xx, so Google being
/// unreachable answers 503 and nothing is recorded, and the message comes again.
package struct IngestPlayNotification: UseCase, Sendable {
    /// `googlePlay.notifications.*`.
    package struct Settings: Sendable {
        /// The push subscription's audience and service account; nil accepts pushes without a
        /// token (only when `allowUnauthenticated`).
        package var policy: PushTokenPolicy?
        package var allowUnauthenticated: Bool

        package init(policy: PushTokenPolicy?, allowUnauthenticated: Bool = false) {
            self.policy = policy
            self.allowUnauthenticated = allowUnauthenticated
        }
    }

    /// What became of a message.
    package struct Outcome: Sendable, Equatable {
        /// What became of it.
        package var outcome: NotificationOutcome
        package var appUserID: String?
    }

    let api: PlayDeveloperAPI?
    let settings: Settings
    let keys: SigningKeyCache?
    let packages: [String]
    let catalog: Catalog
    let consumeConsumables: Bool
    package let context: UseCaseContext
    let doorbell: Doorbell?

    package init(
        context: UseCaseContext, api: PlayDeveloperAPI?, settings: Settings, keys: SigningKeyCache?, packages: [String],
        catalog: Catalog, consumeConsumables: Bool = false, doorbell: Doorbell? = nil
    ) {
        self.api = api
        self.settings = settings
        self.keys = keys
        self.packages = packages
        self.catalog = catalog
        self.consumeConsumables = consumeConsumables
        self.context = context
        self.doorbell = doorbell
    }

    /// `authorization`: the request's `Authorization` header, if any; `body`: the push.
    package func callAsFunction(authorization: String?, body: [UInt8]) async throws(ReceiptError) -> Outcome {
        guard let api else { throw .notConfigured(.googlePlay) }
        try await authenticate(authorization)
        let push: PlayPush
        do { push = try PlayPush(body: body) } catch {
            count("malformed", type: "unknown")
            throw .invalidRequest("The body is not a Google Play notification pushed by Pub/Sub: \(error).")
        }
        let notification = push.notification
        let type = notification.typeName
        guard packages.contains(notification.packageName) else {
            count("wrong_app", type: type)
            throw .wrongApp("The notification is for an app that is not configured (googlePlay.packages).")
        }
        do {
            if try await database.read({ db in try PlayStore(db).notificationSeen(push.messageID) }) {
                count("duplicate", type: type)
                return Outcome(outcome: .duplicate, appUserID: nil)
            }
            let outcome = try await apply(push, api: api)
            count(outcome.outcome.rawValue, type: type)
            return outcome
        } catch let error as ReceiptError {
            count(error.code, type: type)
            throw error
        } catch {
            logger.error("a Google Play notification could not be applied", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// The push's OIDC token against Google's keys and the configured audience and account.
    func authenticate(_ authorization: String?) async throws(ReceiptError) {
        guard let policy = settings.policy, let keys else {
            guard settings.allowUnauthenticated else {
                throw .unauthenticatedPush(
                    "Google Play notifications are not set up: googlePlay.notifications.audience and serviceAccountEmail.")
            }
            return
        }
        guard let authorization, authorization.hasPrefix("Bearer ") else {
            count("unauthenticated", type: "unknown")
            throw .unauthenticatedPush("A Pub/Sub push must carry its OIDC token (Authorization: Bearer …).")
        }
        let token = String(authorization.dropFirst(7))
        let signingKeys: SigningKeys
        do { signingKeys = try await keys.keys(for: PushTokenPolicy.keyID(of: token)) } catch {
            logger.warning("Google's signing keys are not available", metadata: ["reason": "\(error)"])
            throw .storeUnavailable(.playStore, retryAfterSeconds: 30, lastKnown: nil)
        }
        do { try policy.verify(token, keys: signingKeys, now: clock.now()) } catch {
            count("unauthenticated", type: "unknown")
            logger.notice("a Google Play push was refused", metadata: ["reason": "\(error)"])
            throw .unauthenticatedPush("The push's OIDC token was refused: \(error).")
        }
    }

    private func apply(_ push: PlayPush, api: PlayDeveloperAPI) async throws -> Outcome {
        let notification = push.notification
        let received = clock.now()
        func record(_ outcome: NotificationOutcome, user: String?, changed: [String] = []) async throws -> Outcome {
            let inserted = try await database.write { db in
                try PlayStore(db).recordNotification(
                    messageID: push.messageID, packageName: notification.packageName, type: notification.typeName,
                    tokenReference: notification.purchaseToken.map(PurchaseTokenReference.of), eventTime: notification.eventTime,
                    receivedAt: received, outcome: outcome.rawValue, appUserID: user)
            }
            return Outcome(outcome: inserted ? outcome : .duplicate, appUserID: user)
        }
        guard let tokenText = notification.purchaseToken else {
            if case .other = notification.kind { return try await record(.ignored, user: nil) }
            return try await record(.test, user: nil)
        }
        guard let package = PlayIdentifier(notification.packageName, .packageName),
            let token = PlayIdentifier(tokenText, .purchaseToken)
        else { throw ReceiptError.invalidRequest("The notification's package name or purchase token is malformed.") }
        let reference = PurchaseTokenReference.of(tokenText)
        // Ask Google: the notification only says that something changed.
        let resource: PlayRecord.Resource
        do {
            resource = try await read(api, package: package, token: token, subscription: notification.isSubscription)
        } catch .notFound, .refused {
            return try await record(.unknownToken, user: nil)
        } catch {
            throw failed(error, "applying a notification")
        }
        // A void is a claim until Google confirms it: what the Voided Purchases API lists for the
        // token the message names is applied, never the `orderId` in the body.
        var voids: [VoidedPurchase] = []
        if case .voidedPurchase = notification.kind {
            do {
                voids = try await confirmedVoids(api, package: package, token: tokenText, at: notification.eventTime)
            } catch {
                throw failed(error, "confirming a void")
            }
            if voids.isEmpty {
                logger.notice("a voided-purchase notification Google does not confirm: nothing voided")
            }
        }
        let consume = consumeConsumables && PlaySave.isConsumable(resource, catalog)
        let at = clock.now()
        do {
            return try await save(
                push, resource: resource, reference: reference, package: package.text, consume: consume, voids: voids, at: at)
        } catch is Duplicate {
            return Outcome(outcome: .duplicate, appUserID: nil)
        }
    }

    /// One durable write: the facts for their holder, a void, and the message's row (which, if
    /// another push of it got there first, rolls it all back).
    private func save(
        _ push: PlayPush, resource: PlayRecord.Resource, reference: String, package: String, consume: Bool,
        voids: [VoidedPurchase], at: Int64
    ) async throws -> Outcome {
        let notification = push.notification
        let tokenText = notification.purchaseToken ?? ""
        let received = at
        let (outcome, user, changed) = try await database.write(durable: true) {
            [state, policy] db -> (NotificationOutcome, String?, [String]) in
            let plays = PlayStore(db)
            var holder = try plays.holder(of: reference)
            if holder == nil, let linked = PlaySave.linkedToken(resource) {
                holder = try plays.holder(of: PurchaseTokenReference.of(linked))
            }
            if holder == nil, let account = Self.accountID(resource) {
                holder = try ReceiptStore(db).subscriber(forAccountToken: account)
            }
            let save = PlaySave(state: state, policy: policy)
            var outcome: NotificationOutcome
            var changed: [String] = []
            switch try save.save(resource, token: tokenText, package: package, for: holder, consume: consume, in: db, now: at)
            {
            case .stored(let changes, let users):
                (outcome, changed) = (changes > 0 ? .applied : .unchanged, users)
            case .inUse:
                outcome = .ownerConflict
            case .unowned:
                outcome = .pendingOwner
            }
            for void in voids {
                guard let orderID = void.orderID else { continue }
                let voided = try save.void(orderID: orderID, at: void.voidedTime, in: db, now: at)
                changed += voided.changed
                if voided.found && outcome == .unchanged { outcome = .applied }
            }
            guard
                try plays.recordNotification(
                    messageID: push.messageID, packageName: notification.packageName, type: notification.typeName,
                    tokenReference: reference, eventTime: notification.eventTime, receivedAt: received,
                    outcome: outcome.rawValue, appUserID: outcome == .pendingOwner || outcome == .ownerConflict ? nil : holder)
            else { throw Duplicate() }
            return (outcome, outcome == .pendingOwner ? nil : holder, changed)
        }
        doorbell?.ring()
        await state.settleStored(changed, database: database, now: at, logger: logger, after: "notification")
        return Outcome(outcome: outcome, appUserID: user)
    }

    /// Pushed twice at once: the other push recorded it (and this transaction rolled back).
    struct Duplicate: Error {}

    func read(_ api: PlayDeveloperAPI, package: PlayIdentifier, token: PlayIdentifier, subscription: Bool?)
        async throws(PlayCallFailure) -> PlayRecord.Resource
    {
        if subscription != false {
            do { return .subscription(try await api.subscription(package: package, token: token)) } catch .notFound
                where subscription == nil
            {}
        }
        return .product(try await api.product(package: package, token: token))
    }

    /// A call to Google that failed while `doing`: the service account refused (misconfigured),
    /// or Google could not answer (Pub/Sub pushes the notification again).
    private func failed(_ failure: PlayCallFailure, _ doing: String) -> ReceiptError {
        switch failure {
        case .forbidden, .credentials:
            logger.critical("Google Play refused receiptd's service account while \(doing)")
            return .storeMisconfigured(.playStore)
        default:
            logger.warning(
                "Google Play unavailable while \(doing); Pub/Sub will push the notification again",
                metadata: ["reason": "\(failure)"])
            return .storeUnavailable(.playStore, retryAfterSeconds: 30, lastKnown: nil)
        }
    }

    /// What Google's Voided Purchases API lists as voided for `token` (exactly), from a day before
    /// the message's event (no further back than the 30 days Google keeps) to now.
    func confirmedVoids(_ api: PlayDeveloperAPI, package: PlayIdentifier, token: String, at eventTime: Int64)
        async throws(PlayCallFailure) -> [VoidedPurchase]
    {
        let now = clock.now()
        let start = max(min(eventTime, now) - 86_400_000, now - 30 * 86_400_000 + 60_000)
        var confirmed: [VoidedPurchase] = []
        var page: String?
        for _ in 0..<20 {
            let (listed, next) = try await api.voidedPurchases(package: package, start: start, end: now, pageToken: page)
            confirmed += listed.filter { $0.purchaseToken.isExactly(token) }
            guard let next else { break }
            page = next
        }
        return confirmed
    }

    static func accountID(_ resource: PlayRecord.Resource) -> String? {
        switch resource {
        case .subscription(let s): s.obfuscatedAccountID
        case .product(let p): p.obfuscatedAccountID
        }
    }

    private func count(_ outcome: String, type: String) {
        Counter(
            label: "google_play_notifications_total", dimensions: [("type", type), ("outcome", outcome)], factory: metrics
        ).increment()
    }
}
