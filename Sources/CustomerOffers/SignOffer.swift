import Clocks
import CoreMetrics
package import Crypto
import DatabaseEngine
package import Entitlements
package import FoundationEssentials
import Identifiers
import Logging
package import Offers
package import ReceiptCore
package import Storage

/// Signs the offers StoreKit asks a server for (Docs/offers.md), after deciding from the stored
/// history that the customer may have them: a promotional offer (the original API's signature,
/// or StoreKit's 2025 signed request) and an introductory-offer eligibility decision (signed
/// either way). Every signature is recorded (``OfferStore``): who, which offer, when, which key.
package struct SignOffer: UseCase, Sendable {
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
    package let context: UseCaseContext
    let nonce: @Sendable () -> UUID
    /// Signatures one customer may be given a minute (their app may not ask faster).
    let perCustomerPerMinute: Int

    /// One key for every app (one App Store Connect account).
    package init(
        context: UseCaseContext, key: Key?, rules: OfferRules, bundleIDs: [String], policy: DerivationPolicy,
        nonce: @escaping @Sendable () -> UUID = { UUID() }, perCustomerPerMinute: Int = 10
    ) {
        self.init(
            context: context, keys: { _ in key }, rules: rules, bundleIDs: bundleIDs, policy: policy, nonce: nonce,
            perCustomerPerMinute: perCustomerPerMinute)
    }

    /// Each app's key, by its bundle id.
    package init(
        context: UseCaseContext, keys: @escaping @Sendable (_ bundleID: String) -> Key?, rules: OfferRules,
        bundleIDs: [String], policy: DerivationPolicy, nonce: @escaping @Sendable () -> UUID = { UUID() },
        perCustomerPerMinute: Int = 10
    ) {
        self.context = context
        self.perCustomerPerMinute = perCustomerPerMinute
        self.keys = keys
        self.rules = rules
        self.bundleIDs = bundleIDs
        self.policy = policy
        self.nonce = nonce
    }

    /// A promotional offer's signature, when the rules allow it; else ``ReceiptError/offerNotEligible(_:_:)``.
    ///
    /// The pace, the offer's cap and the audit row are read and written in one write transaction
    /// locked per customer (``locked(_:now:_:)``): concurrent asks, on one instance or several,
    /// get at most what the rules allow. An `app` caller (a public key, anyone's) gets a JWS that
    /// names only the transaction it sent, and explanations without the customer's identifiers.
    package func promotional(_ input: Promotional, requestedBy: String, caller: Caller = .backend) async throws(ReceiptError)
        -> Signed
    {
        _ = try FieldRules.appUserID(input.appUserID)
        try Self.identifier(input.productID, "product_id")
        try Self.identifier(input.offerID, "offer_id")
        if let named = input.transactionID { try FieldRules.transactionID(named) }
        let bundle = try self.bundle(input.bundleID)
        let key = try configured(bundle)
        return try await locked(input.appUserID, now: clock.now()) { db, customer, now throws(ReceiptError) in
            if let named = input.transactionID { try held(named, by: customer, kind: "promotional", input.format) }
            let issued = try storage { try OfferStore(db).issued(input.offerID, to: customer.ids) }
            let groupIDs = try storage { try appleGroupIDs(of: input.productID, customer.facts, in: db) }
            let storefront = customer.facts.purchases.max { ($0.purchaseDate ?? 0) < ($1.purchaseDate ?? 0) }?.commerce.storefront
            let decision = Eligibility.promotional(
                offerID: input.offerID, productID: input.productID, rules: rules, facts: customer.facts, storefront: storefront,
                issued: issued, policy: policy, appleGroupIDs: groupIDs, now: now)
            guard decision.rule == "offer_eligible" else {
                count("promotional", input.format, outcome: decision.rule)
                throw .offerNotEligible(decision.rule, decision.decision)
            }
            // The transaction the JWS names: the one sent; for a backend, else any of theirs, or
            // their appTransactionId (Apple's claim is optional: an app's answer names none it did not send).
            let named =
                input.transactionID
                ?? (caller == .backend
                    ? newestTransaction(of: input.productID, facts: customer.facts) ?? customer.appTransactionID : nil)
            var signed = try sign(input, key: key, bundle: bundle, transactionID: named, decision: decision, now: now)
            try storage {
                try OfferStore(db).record(
                    record(signed, user: customer.ids.first ?? input.appUserID, input, requestedBy: requestedBy, at: now))
            }
            count("promotional", input.format, outcome: "signed")
            signed.explanation = Self.explanation(decision, for: caller)
            return signed
        }
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

    /// StoreKit's introductory-offer eligibility for `productID`: decided by Apple's once per
    /// group per Apple Account rule and signed either way (StoreKit takes a signed "no" too).
    /// The JWS names the transaction sent, which must be the customer's; a backend may leave it
    /// out (their newest is named), an app may not (``Caller``).
    package func introductory(
        appUserID: String, productID: String, transactionID: String?, bundleID: String?, requestedBy: String,
        caller: Caller = .backend
    ) async throws(ReceiptError) -> Signed {
        _ = try FieldRules.appUserID(appUserID)
        try Self.identifier(productID, "product_id")
        if let named = transactionID { try FieldRules.transactionID(named) }
        let bundle = try self.bundle(bundleID)
        let key = try configured(bundle)
        if caller == .app && transactionID == nil {
            throw .invalidRequest(
                "`transaction_id` is required with an app's key: any transaction of the customer's, or their appTransactionId (AppTransaction.shared)."
            )
        }
        return try await locked(appUserID, now: clock.now()) { db, customer, now throws(ReceiptError) in
            if let named = transactionID { try held(named, by: customer, kind: "introductory", .jws) }
            let (groupIDs, account) = try storage {
                (
                    try appleGroupIDs(of: productID, customer.facts, in: db),
                    try sameAppleAccount(customer, in: db)
                )
            }
            let decision = Eligibility.introductory(
                productID: productID, rules: rules, facts: customer.facts, sameAppleAccount: account, appleGroupIDs: groupIDs,
                now: now)
            guard
                let transaction = transactionID ?? newestTransaction(of: productID, facts: customer.facts)
                    ?? customer.facts.purchases.last?.transactionID ?? customer.appTransactionID
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
                    .introductoryOfferEligibility(
                        productID: productID, allowIntroductoryOffer: allowed, transactionID: transaction),
                    bundleID: bundle, keyID: key.keyID, issuerID: key.issuerID, key: key.key, nonce: uuid, issuedAt: now / 1_000)
            } catch {
                logger.error("an eligibility decision could not be signed", metadata: ["error": "\(error)"])
                throw .internalFault
            }
            let signed = Signed(
                format: .jws, keyID: key.keyID, nonce: uuid.uuidString.lowercased(), timestamp: now, signature: jws,
                allowed: allowed, explanation: Self.explanation(decision, for: caller))
            try storage {
                try OfferStore(db).record(
                    OfferSignatureRecord(
                        appUserID: customer.ids.first ?? appUserID, kind: "introductory", productID: productID, offerID: nil,
                        format: "jws", keyID: key.keyID, nonce: signed.nonce, allowed: allowed, requestedBy: requestedBy,
                        issuedAt: now))
            }
            count("introductory", .jws, outcome: allowed ? "signed" : "signed_not_allowed")
            return signed
        }
    }

    /// A customer's offers as support sees them: each configured promotional offer and each
    /// subscription group's introductory offer, with the decision for this customer now and why,
    /// and the signatures given, newest first.
    package struct Overview: Sendable {
        package var promotional: [(offerID: String, productID: String, decision: Explanation)]
        package var introductory: [(group: String, productID: String, decision: Explanation)]
        package var given: [Given]
    }

    package func overview(_ appUserID: String, limit: Int = 50) async throws(ReceiptError) -> Overview {
        _ = try FieldRules.appUserID(appUserID)
        let now = clock.now()
        let groups = rules.groups.sorted(by: { $0.key < $1.key })
        let (customer, given, account, groupIDs) = try await read { [self] db in
            let customer = try Self.customer(appUserID, in: db)
            var groupIDs: [String: Set<String>] = [:]
            for (group, products) in groups { groupIDs[group] = try OfferStore(db).appleGroupIDs(of: products) }
            return (
                customer, try OfferStore(db).signatures(of: customer.ids, limit: limit), try sameAppleAccount(customer, in: db),
                groupIDs
            )
        }
        let facts = customer.facts
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
                        policy: policy, appleGroupIDs: rules.group(of: product, facts: facts).flatMap { groupIDs[$0] } ?? [],
                        now: now)
                ))
        }
        let introductory = groups.compactMap { group, products -> (String, String, Explanation)? in
            guard let product = products.first else { return nil }
            return (
                group, product,
                Eligibility.introductory(
                    productID: product, rules: rules, facts: facts, sameAppleAccount: account,
                    appleGroupIDs: groupIDs[group] ?? [], now: now)
            )
        }
        return Overview(promotional: promotional, introductory: introductory, given: given.map(Given.init))
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
        guard let key = keys(bundleID) else { throw .notConfigured(.offers) }
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

    /// One customer as the offers see them: their facts under every id (nothing for a customer
    /// receiptd does not know yet), their ids (the canonical first), their newest AppTransaction's
    /// id, and every `appTransactionId` known for them (their Apple Accounts).
    struct Customer: Sendable {
        var facts: Facts
        var ids: [String]
        var appTransactionID: String?
        var appleAccounts: Set<String>
    }

    static func customer(_ appUserID: String, in db: Database) throws -> Customer {
        let store = ReceiptStore(db)
        let subscriber = try store.subscriber(appUserID)
        let ids = try subscriber.map(\.ids) ?? [store.canonical(appUserID)]
        let facts = subscriber?.pinnedFacts ?? Facts(purchases: [])  // their AppTransactions included
        let accounts = Set(facts.appTransactions.map(\.appTransactionID)).union(facts.purchases.compactMap(\.appTransactionID))
        return Customer(
            facts: facts, ids: ids, appTransactionID: try AppTransactionStore(db).newest(of: ids)?.appTransactionID,
            appleAccounts: accounts)
    }

    /// Runs `body` in one write transaction holding the customer's lock (the one their saves
    /// take: a transaction-scoped advisory lock on PostgreSQL, the one writer on SQLite), after
    /// the pace: at most ``perCustomerPerMinute`` signatures a minute for one customer, whatever
    /// key asks. What `body` counts and records is therefore counted by the next ask, on any
    /// instance.
    private func locked<T: Sendable>(
        _ appUserID: String, now: Int64, _ body: @escaping @Sendable (Database, Customer, Int64) throws(ReceiptError) -> T
    ) async throws(ReceiptError) -> T {
        do {
            return try await database.write { [perCustomerPerMinute] db in
                let store = ReceiptStore(db)
                try store.lock(purchases: [], subscriber: try store.canonical(appUserID))
                let customer = try Self.customer(appUserID, in: db)
                guard try OfferStore(db).count(of: customer.ids, since: now - 60_000) < perCustomerPerMinute else {
                    count("any", nil, outcome: "rate_limited")
                    throw ReceiptError.offerRateLimited(retryAfterSeconds: 60)
                }
                return try body(db, customer, now)
            }
        } catch let refused as ReceiptError {
            throw refused
        } catch {
            logger.error("offers: the history could not be read or the signature recorded", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// Storage's errors inside ``locked(_:now:_:)``'s body, as the use case's.
    private func storage<T>(_ body: () throws -> T) throws(ReceiptError) -> T {
        do { return try body() } catch let refused as ReceiptError { throw refused } catch {
            logger.error("offers: storage failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// A transaction an ask names must be the customer's: one of their transactions (or its
    /// original), or one of their AppTransactions' ids. Otherwise nothing is signed.
    private func held(_ id: String, by customer: Customer, kind: String, _ format: Format) throws(ReceiptError) {
        let theirs =
            customer.facts.purchases.contains { $0.transactionID.isExactly(id) || $0.originalTransactionID.isExactly(id) }
            || customer.appleAccounts.contains { $0.isExactly(id) }
        guard theirs else {
            count(kind, format, outcome: "transaction_not_held")
            throw .transactionNotHeld
        }
    }

    /// Apple's identifiers of `productID`'s group as stated on stored transactions of its listed
    /// products, and of the product itself.
    func appleGroupIDs(of productID: String, _ facts: Facts, in db: Database) throws -> Set<String> {
        guard let group = rules.group(of: productID, facts: facts) else { return [] }
        return try OfferStore(db).appleGroupIDs(of: (rules.groups[group] ?? []) + [productID])
    }

    /// The purchases of the other app users of the customer's Apple Accounts (a shared `appTransactionId`).
    func sameAppleAccount(_ customer: Customer, in db: Database) throws -> [Purchase] {
        guard !customer.appleAccounts.isEmpty else { return [] }
        var purchases: [Purchase] = []
        for other in try AppTransactionStore(db).users(of: customer.appleAccounts, except: customer.ids) {
            purchases += try ReceiptStore(db).subscriber(other)?.pinnedFacts.purchases ?? []
        }
        return purchases
    }

    /// `decision` as `caller` may see it: an app's key is anyone's, so without the facts that name
    /// a purchase or an Apple Account (``PurchaseIdentifiers``).
    static func explanation(_ decision: Explanation, for caller: Caller) -> Explanation {
        guard caller == .app else { return decision }
        var shown = decision
        shown.facts.removeAll { PurchaseIdentifiers.members.contains(Identifier($0.name)) }
        return shown
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

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(ReceiptError) -> T {
        do { return try await database.read(body) } catch {
            logger.error("offers: the history could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }
}
