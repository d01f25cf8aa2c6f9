import Clocks
import DatabaseEngine
package import Entitlements
package import GooglePlay
import Identifiers
import JSON
import Logging
package import Storage
package import Workers

/// Verify a Google Play purchase for an app user and store what it proves (Docs/google-play.md):
/// the token's subscription (`subscriptionsv2`) or one-time purchase (`productsv2`) asked of the
/// Play Developer API, stated as facts beside the App Store's (``PlayRecord``, ``PlayFacts``),
/// saved through the same save as every other source, the token kept to ask Google again, and
/// the acknowledgement Google requires queued (``AcknowledgePlayPurchases`` makes it). The answer
/// is the user's document; a refusal is a ``ReceiptError``.
package struct VerifyPlayPurchase: UseCase, Sendable {
    package struct Input: Sendable, Equatable {
        package var appUserID: String
        package var packageName: String
        package var purchaseToken: String
        /// The product the app bought, when it says: it picks the API to ask first, and must match.
        package var productID: String?
        /// Who posted it: an app's answer names only the purchase its token proves.
        package var caller: Caller

        package init(
            appUserID: String, packageName: String, purchaseToken: String, productID: String? = nil, caller: Caller = .app
        ) {
            self.caller = caller
            self.appUserID = appUserID
            self.packageName = packageName
            self.purchaseToken = purchaseToken
            self.productID = productID
        }
    }

    /// `googlePlay.*` as this use case needs it.
    package struct Settings: Sendable {
        /// The apps whose purchases are accepted.
        package var packages: [String]
        /// Consume consumables (Config/products.json) once stored, so they can be bought again.
        package var consumeConsumables: Bool

        package init(packages: [String], consumeConsumables: Bool = false) {
            self.packages = packages
            self.consumeConsumables = consumeConsumables
        }
    }

    let api: PlayDeveloperAPI?
    let settings: Settings
    let catalog: Catalog
    package let context: UseCaseContext
    /// Rung when a call to Google is queued (the acknowledgement worker wakes).
    let doorbell: Doorbell?

    package init(context: UseCaseContext, api: PlayDeveloperAPI?, settings: Settings, catalog: Catalog, doorbell: Doorbell? = nil)
    {
        self.api = api
        self.settings = settings
        self.catalog = catalog
        self.context = context
        self.doorbell = doorbell
    }

    /// Holds the input to ``FieldRules`` and Google's id formats.
    package static func validate(_ input: Input) throws(ReceiptError) -> (PlayIdentifier, PlayIdentifier, PlayIdentifier?) {
        _ = try FieldRules.appUserID(input.appUserID)
        guard let package = PlayIdentifier(input.packageName, .packageName) else {
            throw .invalidRequest("`package_name` must be an Android package name: letters, digits, `_` and `.`.")
        }
        guard let token = PlayIdentifier(input.purchaseToken, .purchaseToken) else {
            throw .invalidRequest(
                "`purchase_token` must be a Google Play purchase token: 1 to 1024 letters, digits, `-`, `_` and `.`.")
        }
        var product: PlayIdentifier?
        if let id = input.productID {
            guard let valid = PlayIdentifier(id, .productID) else {
                throw .invalidRequest("`product_id` must be a Google Play product id: letters, digits, `_`, `-` and `.`.")
            }
            product = valid
        }
        return (package, token, product)
    }

    package func callAsFunction(_ input: Input) async throws(ReceiptError) -> SubscriberSnapshot {
        let (package, token, product) = try Self.validate(input)
        guard let api else {
            logger.critical("a Google Play purchase was posted but no service account is configured (googlePlay.*)")
            throw .notConfigured(.googlePlay)
        }
        guard settings.packages.contains(input.packageName) else {
            throw .wrongApp("`package_name` is not a configured app (googlePlay.packages).")
        }
        let begun = clock.now()  // before Google is asked: an erasure since then wins
        do {
            let started = monotonic.now
            let resource: PlayRecord.Resource
            do {
                resource = try await read(api, package: package, token: token, product: input.productID)
            } catch {
                let log = VerificationLogEntry(
                    appUserID: input.appUserID, environment: nil, appleStatus: nil,
                    outcome: .failed(.googlePlay, error.metricName),
                    attempts: 1, latencyMs: (monotonic.now - started).milliseconds)
                let at = clock.now()
                try await database.write { db in try ReceiptStore(db).log(log, at: at, unlessErasedSince: begun) }
                var refused = await refusal(error, user: input.appUserID)
                // While Google is down an app is shown no purchase: its token proved nothing yet.
                if input.caller == .app, case .storeUnavailable(.playStore, _, let seconds, var known?) = refused {
                    known.snapshot.proven = []
                    refused = .storeUnavailable(.playStore, retryAfterSeconds: seconds, lastKnown: known)
                }
                throw refused
            }
            if let product, !PlaySave.products(of: resource).contains(product.text) {
                throw ReceiptError.wrongApp("The purchase token is for another product than `product_id`.")
            }
            let log = VerificationLogEntry(
                appUserID: input.appUserID, environment: PlaySave.environment(of: resource), appleStatus: nil,
                outcome: .googlePlay, attempts: 1, latencyMs: (monotonic.now - started).milliseconds)
            var snapshot = try await store(
                resource, token: token.text, package: package.text, for: input.appUserID, begun: begun, log: log)
            // A backend sees every purchase; an app, the one its token just proved.
            if input.caller == .backend { snapshot.proven = nil }
            return snapshot
        } catch {
            throw ReceiptError(saving: error, logger: logger, "verifying a Google Play purchase")
        }
    }

    /// The token's resource: as a one-time product first when the operator declared `productID`
    /// one, else (undeclared, or a subscription) as a subscription first; the other API when the
    /// first says the token is not of its kind: 404 or 410, and 400, which is what
    /// `subscriptionsv2` answers for a one-time purchase's token.
    func read(_ api: PlayDeveloperAPI, package: PlayIdentifier, token: PlayIdentifier, product: String?)
        async throws(PlayCallFailure) -> PlayRecord.Resource
    {
        let declared = product.flatMap { catalog.declared($0) }
        let productFirst = declared != nil && declared != .autoRenewable
        for asProduct in productFirst ? [true, false] : [false, true] {
            do {
                return asProduct
                    ? .product(try await api.product(package: package, token: token))
                    : .subscription(try await api.subscription(package: package, token: token))
            } catch let failure where asProduct == productFirst {
                let status: Int
                switch failure {
                case .notFound(let s), .refused(let s, _): status = s
                default: throw failure
                }
                logger.debug(
                    "the token is not a \(asProduct ? "one-time purchase" : "subscription")", metadata: ["status": "\(status)"])
                continue
            }
        }
        throw .notFound(status: 404)
    }

    /// What a failed read comes to; transient failures answer what the user had.
    private func refusal(_ failure: PlayCallFailure, user: String) async -> ReceiptError {
        switch failure {
        case .notFound, .refused:
            return .invalidPurchaseToken
        case .forbidden, .credentials:
            logger.critical(
                "Google Play refused receiptd's service account: check the key and its Play Console permissions",
                metadata: ["reason": "\(failure)"])
            return .storeMisconfigured(.playStore)
        case .unavailable(let why, let seconds):
            logger.warning("Google Play unavailable", metadata: ["reason": "\(why)"])
            return .storeUnavailable(.playStore, retryAfterSeconds: max(1, seconds ?? 30), lastKnown: await lastKnown(user))
        case .unexpected(let why):
            logger.error("Google Play answered something its API does not document", metadata: ["reason": "\(why)"])
            return .storeUnavailable(.playStore, retryAfterSeconds: 30, lastKnown: await lastKnown(user))
        }
    }

    private func lastKnown(_ appUserID: String) async -> ReceiptError.LastKnown? {
        await state.lastKnown(appUserID, database: database, now: clock.now())
    }

    /// One write (``PlaySave``), then the document derived as for every source.
    package func store(
        _ resource: PlayRecord.Resource, token: String, package: String, for user: String, begun: Int64,
        log: VerificationLogEntry
    ) async throws -> SubscriberSnapshot {
        let at = clock.now()
        let consume = settings.consumeConsumables && PlaySave.isConsumable(resource, catalog)
        var snapshot = try await state.answer(for: user, database: database, now: at) { [policy, state] db in
            switch try PlaySave(state: state, policy: policy).save(
                resource, token: token, package: package, for: user, posted: true, begun: begun, consume: consume, in: db,
                now: at, log: log)
            {
            case .stored(let changes, let changed): .done(.stored(changes: changes, changed: changed))
            // Posted by a user, so never unowned: refused as held all the same.
            case .inUse(let holder): .done(.inUse(heldBy: holder))
            case .unowned: .done(.inUse(heldBy: ""))
            }
        }
        doorbell?.ring()  // an acknowledgement is owed
        // What the token proves: its reference and its orders (which name no chain: the document
        // shows the purchases holding them whole, ``SubscriberDocument/visible(provenBy:)``).
        let reference = PurchaseTokenReference.of(token)
        let stated = PlayRecord(packageName: package, tokenReference: reference, chain: reference, seenAt: at, resource: resource)
        snapshot.proven = Set(([reference] + stated.facts.purchases.map(\.transactionID)).map { Identifier($0) })
        return snapshot
    }
}
