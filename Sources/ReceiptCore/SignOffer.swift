import Clocks
import CoreMetrics
import Crypto
import Entitlements
import FoundationEssentials
import Logging
import Offers
import Storage

/// Signs the offers StoreKit asks a server for (Docs/offers.md), after deciding from the stored
/// history that the customer may have them: a promotional offer (the original API's signature,
/// or StoreKit's 2025 signed request) and an introductory-offer eligibility decision (signed
/// either way). Every signature is recorded (``OfferStore``): who, which offer, when, which key.
package struct SignOffer: Sendable {
    /// The key offers are signed with: the In-App Purchase key, or one of its own.
    package struct Key: Sendable {
        package var keyID: String
        package var issuerID: String
        package var key: P256.Signing.PrivateKey

        package init(keyID: String, issuerID: String, key: P256.Signing.PrivateKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.key = key
        }
    }

    package enum Format: String, Sendable, CaseIterable {
        case v1
        case jws
    }

    package struct Promotional: Sendable, Equatable {
        package var appUserID: String
        package var productID: String
        package var offerID: String
        /// The app account token StoreKit sends with the purchase (`applicationUsername`), if any.
        package var applicationUsername: String?
        package var format: Format
        /// The customer's transaction the JWS names; by default their newest of the product's group.
        package var transactionID: String?
        package var bundleID: String?

        package init(
            appUserID: String, productID: String, offerID: String, applicationUsername: String? = nil, format: Format = .v1,
            transactionID: String? = nil, bundleID: String? = nil
        ) {
            self.appUserID = appUserID
            self.productID = productID
            self.offerID = offerID
            self.applicationUsername = applicationUsername
            self.format = format
            self.transactionID = transactionID
            self.bundleID = bundleID
        }
    }

    /// What the app hands StoreKit, and why it was allowed.
    package struct Signed: Sendable {
        package var format: Format
        package var keyID: String
        package var nonce: String
        /// UNIX milliseconds (the original API's `timestamp`).
        package var timestamp: Int64
        /// Base64 DER (v1), or the compact JWS.
        package var signature: String
        /// An introductory decision's answer (a promotional signature is only issued when allowed).
        package var allowed: Bool
        package var explanation: Explanation
    }

    /// Each app's signing key: its App Store Connect account's (``AppStoreAccounts``).
    let keys: @Sendable (_ bundleID: String) -> Key?
    package let rules: OfferRules
    let bundleIDs: [String]
    let policy: DerivationPolicy
    let database: DatabaseQueue
    let logger: Logger
    let clock: WallClock
    let nonce: @Sendable () -> UUID
    let metrics: any MetricsFactory
    /// Signatures one customer may be given a minute (their app may not ask faster).
    let perCustomerPerMinute: Int

    /// One key for every app (one App Store Connect account).
    package init(
        key: Key?, rules: OfferRules, bundleIDs: [String], policy: DerivationPolicy, database: DatabaseQueue, logger: Logger,
        clock: WallClock, nonce: @escaping @Sendable () -> UUID = { UUID() },
        metrics: any MetricsFactory = NOOPMetricsHandler.instance, perCustomerPerMinute: Int = 10
    ) {
        self.init(
            keys: { _ in key }, rules: rules, bundleIDs: bundleIDs, policy: policy, database: database, logger: logger,
            clock: clock, nonce: nonce, metrics: metrics, perCustomerPerMinute: perCustomerPerMinute)
    }

    /// Each app's key, by its bundle id.
    package init(
        keys: @escaping @Sendable (_ bundleID: String) -> Key?, rules: OfferRules, bundleIDs: [String],
        policy: DerivationPolicy, database: DatabaseQueue, logger: Logger, clock: WallClock,
        nonce: @escaping @Sendable () -> UUID = { UUID() }, metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        perCustomerPerMinute: Int = 10
    ) {
        self.metrics = metrics
        self.perCustomerPerMinute = perCustomerPerMinute
        self.keys = keys
        self.rules = rules
        self.bundleIDs = bundleIDs
        self.policy = policy
        self.database = database
        self.logger = logger
        self.clock = clock
        self.nonce = nonce
    }

    /// A promotional offer's signature, when the rules allow it; else ``ReceiptError/offerNotEligible(_:)``.
    package func promotional(_ input: Promotional, requestedBy: String) async throws(ReceiptError) -> Signed {
        _ = try FieldRules.appUserID(input.appUserID)
        try Self.identifier(input.productID, "product_id")
        try Self.identifier(input.offerID, "offer_id")
        let bundle = try self.bundle(input.bundleID)
        let key = try configured(bundle)
        let now = clock.now()
        let (facts, ids, appTransactionID) = try await history(input.appUserID)
        try await pace(ids, now: now)
        let issued = try await read { db in try OfferStore(db).issued(input.offerID, to: ids) }
        let storefront = facts.purchases.max { ($0.purchaseDate ?? 0) < ($1.purchaseDate ?? 0) }?.commerce.storefront
        let decision = Eligibility.promotional(
            offerID: input.offerID, productID: input.productID, rules: rules, facts: facts, storefront: storefront,
            issued: issued, policy: policy, now: now)
        guard decision.rule == "offer_eligible" else {
            count("promotional", input.format, outcome: decision.rule)
            throw .offerNotEligible(decision.rule, decision.decision)
        }
        // Any transaction of theirs names them; a customer who bought nothing, their appTransactionId.
        let signed = try sign(
            input, key: key, bundle: bundle,
            transactionID: input.transactionID ?? newestTransaction(of: input.productID, facts: facts) ?? appTransactionID,
            decision: decision, now: now)
        count("promotional", input.format, outcome: "signed")
        try await write(record(signed, user: ids.first ?? input.appUserID, input, requestedBy: requestedBy, at: now))
        return signed
    }

    /// A promotional offer signed with `key`, the rules already having allowed it.
    package func sign(
        _ input: Promotional, key: Key, bundle: String, transactionID: String?, decision: Explanation, now: Int64
    ) throws(ReceiptError) -> Signed {
        let uuid = nonce()
        do {
            switch input.format {
            case .v1:
                let s = try PromotionalOfferSignature.sign(
                    bundleID: bundle, keyID: key.keyID, key: key.key, productID: input.productID, offerID: input.offerID,
                    applicationUsername: input.applicationUsername ?? "", nonce: uuid, timestamp: now)
                return Signed(
                    format: .v1, keyID: key.keyID, nonce: s.nonce, timestamp: now, signature: s.signature, allowed: true,
                    explanation: decision)
            case .jws:
                let jws = try OfferJWS.sign(
                    .promotionalOffer(productID: input.productID, offerID: input.offerID, transactionID: transactionID),
                    bundleID: bundle, keyID: key.keyID, issuerID: key.issuerID, key: key.key, nonce: uuid, issuedAt: now / 1_000)
                return Signed(
                    format: .jws, keyID: key.keyID, nonce: uuid.uuidString.lowercased(), timestamp: now, signature: jws,
                    allowed: true, explanation: decision)
            }
        } catch {
            logger.error("an offer could not be signed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// The audit row of a promotional signature.
    package func record(_ s: Signed, user: String, _ input: Promotional, requestedBy: String, at now: Int64)
        -> OfferSignatureRecord
    {
        OfferSignatureRecord(
            appUserID: user, kind: "promotional", productID: input.productID, offerID: input.offerID, format: s.format.rawValue,
            keyID: s.keyID, nonce: s.nonce, allowed: true, requestedBy: requestedBy, issuedAt: now)
    }

    /// StoreKit's introductory-offer eligibility for `productID`: decided by Apple's once-per-group
    /// rule and signed either way (StoreKit takes a signed "no" too).
    package func introductory(
        appUserID: String, productID: String, transactionID: String?, bundleID: String?, requestedBy: String
    ) async throws(ReceiptError) -> Signed {
        _ = try FieldRules.appUserID(appUserID)
        try Self.identifier(productID, "product_id")
        let bundle = try self.bundle(bundleID)
        let key = try configured(bundle)
        let now = clock.now()
        let (facts, ids, appTransactionID) = try await history(appUserID)
        try await pace(ids, now: now)
        let decision = Eligibility.introductory(productID: productID, rules: rules, facts: facts, now: now)
        guard
            let transaction = transactionID ?? newestTransaction(of: productID, facts: facts)
                ?? facts.purchases.last?.transactionID ?? appTransactionID
        else {
            throw .invalidRequest(
                "`transaction_id` is required for a customer with no purchase and no AppTransaction posted: any transaction of theirs, or their appTransactionId."
            )
        }
        let allowed = decision.rule == "introductory_offer_eligible"
        let uuid = nonce()
        let jws: String
        do {
            jws = try OfferJWS.sign(
                .introductoryOfferEligibility(productID: productID, allowIntroductoryOffer: allowed, transactionID: transaction),
                bundleID: bundle, keyID: key.keyID, issuerID: key.issuerID, key: key.key, nonce: uuid, issuedAt: now / 1_000)
        } catch {
            logger.error("an eligibility decision could not be signed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        let signed = Signed(
            format: .jws, keyID: key.keyID, nonce: uuid.uuidString.lowercased(), timestamp: now, signature: jws, allowed: allowed,
            explanation: decision)
        count("introductory", .jws, outcome: allowed ? "signed" : "signed_not_allowed")
        try await write(
            OfferSignatureRecord(
                appUserID: ids.first ?? appUserID, kind: "introductory", productID: productID, offerID: nil, format: "jws",
                keyID: key.keyID, nonce: signed.nonce, allowed: allowed, requestedBy: requestedBy, issuedAt: now))
        return signed
    }

    /// A customer's offers as support sees them: each configured promotional offer and each
    /// subscription group's introductory offer, with the decision for this customer now and why,
    /// and the signatures given, newest first.
    package struct Overview: Sendable {
        package var promotional: [(offerID: String, productID: String, decision: Explanation)]
        package var introductory: [(group: String, productID: String, decision: Explanation)]
        package var given: [OfferSignatureRecord]
    }

    package func overview(_ appUserID: String, limit: Int = 50) async throws(ReceiptError) -> Overview {
        _ = try FieldRules.appUserID(appUserID)
        let now = clock.now()
        let (facts, ids, _) = try await history(appUserID)
        let given = try await read { db in try OfferStore(db).signatures(of: ids, limit: limit) }
        var promotional: [(String, String, Explanation)] = []
        for (offer, rule) in rules.offers.sorted(by: { $0.key < $1.key }) {
            let product = rule.products.first ?? rules.groups.sorted(by: { $0.key < $1.key }).first?.value.first ?? ""
            let issued = given.filter { $0.kind == "promotional" && $0.offerID == offer }.map(\.issuedAt)
            let storefront = facts.purchases.max { ($0.purchaseDate ?? 0) < ($1.purchaseDate ?? 0) }?.commerce.storefront
            promotional.append(
                (
                    offer, product,
                    Eligibility.promotional(
                        offerID: offer, productID: product, rules: rules, facts: facts, storefront: storefront, issued: issued,
                        policy: policy, now: now)
                ))
        }
        let introductory = rules.groups.sorted(by: { $0.key < $1.key }).compactMap {
            group, products -> (String, String, Explanation)? in
            guard let product = products.first else { return nil }
            return (group, product, Eligibility.introductory(productID: product, rules: rules, facts: facts, now: now))
        }
        return Overview(promotional: promotional, introductory: introductory, given: given)
    }

    /// At most ``perCustomerPerMinute`` signatures a minute for one customer, whatever key asks.
    private func pace(_ ids: [String], now: Int64) async throws(ReceiptError) {
        let recent = try await read { db in try OfferStore(db).count(of: ids, since: now - 60_000) }
        guard recent < perCustomerPerMinute else {
            count("any", nil, outcome: "rate_limited")
            throw .offerRateLimited(retryAfterSeconds: 60)
        }
    }

    /// `offers_signatures_total{kind, format, outcome}`: `signed`, a refusing rule, `rate_limited`.
    package func count(_ kind: String, _ format: Format?, outcome: String) {
        Counter(
            label: "offers_signatures_total",
            dimensions: [("kind", kind), ("format", format?.rawValue ?? "any"), ("outcome", outcome)], factory: metrics
        ).increment()
    }

    /// The key `bundleID`'s offers are signed with; nil when its account has none.
    package func key(for bundleID: String) -> Key? { keys(bundleID) }

    private func configured(_ bundleID: String) throws(ReceiptError) -> Key {
        guard let key = keys(bundleID) else { throw .offersNotConfigured }
        return key
    }

    package func bundle(_ given: String?) throws(ReceiptError) -> String {
        if let given {
            try FieldRules.bundleID(given)
            guard bundleIDs.contains(given) else { throw .bundleMismatch("`bundle_id` is not a configured app.") }
            return given
        }
        guard bundleIDs.count == 1 else { throw .invalidRequest("`bundle_id` is required: several apps are configured.") }
        return bundleIDs[0]
    }

    /// A product or offer id as App Store Connect allows them: 1–100 letters, digits, `.`, `_`, `-`.
    static func identifier(_ text: String, _ field: String) throws(ReceiptError) {
        guard (1...100).contains(text.utf8.count),
            text.utf8.allSatisfy({ b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F
                    || b == 0x2D
            })
        else { throw .invalidRequest("`\(field)` must be 1 to 100 letters, digits, `.`, `_` or `-`.") }
    }

    /// The customer's facts under every id (nothing for a customer receiptd does not know yet),
    /// their ids, the canonical first, and their AppTransaction's id when the app posted one.
    private func history(_ appUserID: String) async throws(ReceiptError) -> (Facts, [String], String?) {
        try await read { db in
            let ids = try ReceiptStore(db).subscriber(appUserID).map(\.ids) ?? [try ReceiptStore(db).canonical(appUserID)]
            let facts = try ReceiptStore(db).subscriber(appUserID)?.pinnedFacts ?? Facts(purchases: [])
            return (facts, ids, try AppTransactionStore(db).newest(of: ids)?.appTransactionID)
        }
    }

    /// The customer's newest transaction of `productID`'s group (or of any product when no group is known).
    func newestTransaction(of productID: String, facts: Facts) -> String? {
        let group = rules.group(of: productID, facts: facts)
        let candidates = facts.purchases.filter { p in
            guard let group else { return true }
            return p.subscriptionGroupID == group || (rules.groups[group] ?? []).contains(p.productID)
        }
        return candidates.max { ($0.purchaseDate ?? 0, $0.transactionID) < ($1.purchaseDate ?? 0, $1.transactionID) }?
            .transactionID
    }

    private func write(_ record: OfferSignatureRecord) async throws(ReceiptError) {
        do {
            try await database.write { db in try OfferStore(db).record(record) }
        } catch {
            logger.error("an offer signature could not be recorded", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(ReceiptError) -> T {
        do { return try await database.read(body) } catch {
            logger.error("offers: the history could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }
}
