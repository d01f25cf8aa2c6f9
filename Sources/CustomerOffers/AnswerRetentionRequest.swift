package import AppStore
import Clocks
import CoreMetrics
import DatabaseEngine
package import Entitlements
import FoundationEssentials
package import JSON
import Logging
import Offers
package import ReceiptCore
package import Retention
import Storage

/// Apple asks, while a customer views a subscription they may cancel, which retention message to
/// show (Apple's Retention Messaging API, "Get Retention Message" endpoint; Docs/retention.md).
/// The request is Apple's signed JWS, verified like any; the subscription's holder and history are
/// read; the rules (`Config/retention.json`) choose a message, a switch of plan or a promotional
/// offer (signed here when Config/offers.json allows the customer it); the answer is recorded,
/// so whether customers shown each message stayed can be counted.
///
/// The answer goes out before its record is committed: waiting for the commit was most of the
/// tail (p99 10 ms against 4.2 ms at 1,000 requests a second, Docs/performance.md), and the
/// record is bookkeeping, not access. A crash in those milliseconds loses that answer's record
/// and its offer signature's audit row (Docs/retention.md "What is recorded").
package struct AnswerRetentionRequest: UseCase, Sendable {
    package struct Answered: Sendable {
        /// Apple's `RealtimeResponseBody`.
        package var body: JSONValue
        /// Nil when the answer is the one given before to Apple's same request.
        package var decision: RetentionDecision?
        package var appUserID: String?
    }

    let verifier: SignedDataVerifier
    let rules: RetentionRules
    let offers: SignOffer
    let policy: DerivationPolicy
    package let context: UseCaseContext

    package init(
        context: UseCaseContext, verifier: SignedDataVerifier, rules: RetentionRules, offers: SignOffer, policy: DerivationPolicy
    ) {
        self.verifier = verifier
        self.rules = rules
        self.offers = offers
        self.policy = policy
        self.context = context
    }

    /// What the customer's history tells the rules, read in one transaction.
    struct Customer: Sendable {
        var appUserID: String?
        var ids: [String] = []
        var facts = Facts(purchases: [])
        var priorOffers = 0
        /// When each offer a rule names was given this customer before.
        var issued: [String: [Int64]] = [:]
        var bundleID: String?
        /// The body answered before to the same request (Apple retrying).
        var answered: String?
    }

    /// `{"signedPayload": "<JWS>"}` → Apple's response body.
    package func callAsFunction(_ body: [UInt8]) async throws(ReceiptError) -> Answered {
        guard let value = try? JSONValue.parse(body), case .string(let jws)? = value["signedPayload"] else {
            throw .invalidRequest("The body must be Apple's {\"signedPayload\": \"<JWS>\"}.")
        }
        try FieldRules.jws(jws, field: "signedPayload")
        let request: SignedRealtimeRequest
        do { request = try await verifier.realtimeRequest(jws) } catch {
            logger.notice("retention request refused", metadata: ["reason": "\(error.code)"])
            count(kind: "none", outcome: "refused")
            throw .signedData(error)
        }
        let now = clock.now()
        let offerIDs = rules.rules.compactMap { rule -> String? in
            if case .promotionalOffer(_, let offer, _, _) = rule.answer { return offer }
            return nil
        }
        // Read, decide, sign and record in one write transaction holding the customer's lock: a
        // once-per-customer offer is given once however many of Apple's requests arrive at once,
        // on any instance, and Apple's retry of an answered request gets the same answer.
        let answered: Answered
        do {
            answered = try await database.write { [self] db in try answer(request, offers: offerIDs, in: db, now: now) }
        } catch let refused as ReceiptError {
            throw refused
        } catch {
            logger.error("a retention answer could not be decided or recorded", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        if let decision = answered.decision {
            count(kind: decision.answer?.kind ?? "none", outcome: decision.explanation.rule)
        } else {
            count(kind: "any", outcome: "repeated")
        }
        return answered
    }

    /// ``callAsFunction(_:)``'s decision, in the write transaction `db`.
    private func answer(_ request: SignedRealtimeRequest, offers offerIDs: [String], in db: Database, now: Int64) throws
        -> Answered
    {
        let store = ReceiptStore(db)
        try store.lock(purchases: [request.originalTransactionID], subscriber: try store.owner(of: request.originalTransactionID))
        let customer = try Self.customer(request, offers: offerIDs, in: db)
        if let answered = customer.answered, let body = try? JSONValue.parse(Array(answered.utf8)) {
            return Answered(body: body, decision: nil, appUserID: customer.appUserID)
        }
        let storefront = customer.facts.purchases.max { ($0.purchaseDate ?? 0) < ($1.purchaseDate ?? 0) }?.commerce.storefront
        let decision = RetentionChooser.decide(
            RetentionRequest(
                originalTransactionID: request.originalTransactionID, productID: request.productID,
                userLocale: request.userLocale),
            rules: rules, facts: customer.facts, priorOffers: customer.priorOffers, policy: policy, now: now
        ) { offerID, productID in
            guard let bundle = customer.bundleID ?? (try? offers.bundle(nil)), offers.key(for: bundle) != nil else {
                return Explanation(rule: "offers_not_configured", decision: "No key signs offers.", facts: [])
            }
            return Eligibility.promotional(
                offerID: offerID, productID: productID, rules: offers.rules, facts: customer.facts, storefront: storefront,
                issued: customer.issued[offerID] ?? [], policy: policy, now: now)
        }
        var signature: RealtimeResponse.OfferSignature?
        var audit: OfferSignatureRecord?
        if case .promotionalOffer(_, let offerID, let product, let format)? = decision.answer,
            let bundle = customer.bundleID ?? (try? offers.bundle(nil)), let key = offers.key(for: bundle),
            let user = customer.appUserID
        {
            let productID = product ?? request.productID
            let token = customer.facts.purchases.last { $0.originalTransactionID.isExactly(request.originalTransactionID) }?
                .appAccountToken
            let input = SignOffer.Promotional(
                appUserID: user, productID: productID, offerID: offerID, applicationUsername: token,
                format: format == .v1 ? .v1 : .jws)
            let signed = try offers.sign(
                input, key: key, bundle: bundle, transactionID: request.originalTransactionID, decision: decision.explanation,
                now: now)
            signature =
                format == .v1
                ? .v1(
                    encodedSignature: signed.signature, productID: productID, offerID: offerID, nonce: signed.nonce,
                    timestamp: signed.timestamp, keyID: signed.keyID, appAccountToken: token?.lowercased())
                : .jws(signed.signature)
            audit = offers.record(signed, user: user, input, requestedBy: "apple_retention", at: now)
            offers.count("promotional", input.format, outcome: "signed")
        }
        let body = RealtimeResponse.body(decision.answer, signature: signature)
        let record = RetentionAnswerRecord(
            requestIdentifier: request.requestIdentifier, appUserID: customer.appUserID,
            originalTransactionID: request.originalTransactionID, productID: request.productID,
            environment: (request.environment ?? "production").lowercased(), userLocale: request.userLocale,
            rule: decision.rule, kind: decision.answer?.kind, messageIdentifier: decision.answer?.message.uuidString.lowercased(),
            offerID: audit?.offerID, decision: decision.explanation.rule, periodEnd: decision.periodEnd,
            responseJSON: String(decoding: body.jsonBytes, as: UTF8.self), answeredAt: now)
        // Apple's retry of an answered request records nothing twice, the offer included.
        if try RetentionStore(db).record(record), let audit { try OfferStore(db).record(audit) }
        return Answered(body: body, decision: decision, appUserID: customer.appUserID)
    }

    /// Per rule and message since `since`: answered, still in the period, stayed, left.
    package func outcomes(since: Int64) async throws(ReceiptError) -> [RetentionAnswerOutcome] {
        let now = clock.now()
        do {
            return try await database.read { db in try RetentionStore(db).outcomes(since: since, now: now) }.map(
                RetentionAnswerOutcome.init)
        } catch {
            logger.error("retention outcomes could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// A customer's answers, newest first (support's view).
    package func answers(of appUserID: String, limit: Int = 50) async throws(ReceiptError) -> [RetentionAnswer] {
        _ = try FieldRules.appUserID(appUserID)
        do {
            return try await database.read { db in
                let subscriber = try ReceiptStore(db).subscriber(appUserID)
                let ids = try subscriber?.ids ?? [ReceiptStore(db).canonical(appUserID)]
                let originals = subscriber.map { s in s.purchases.map(\.fact.originalTransactionID) } ?? []
                return try RetentionStore(db).answers(of: ids, originals: Array(Set(originals)).sorted(), limit: limit)
            }.map(RetentionAnswer.init)
        } catch {
            logger.error("retention answers could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// What the customer holding the request's purchase has had, read in the caller's transaction.
    static func customer(_ request: SignedRealtimeRequest, offers offerIDs: [String], in db: Database) throws -> Customer {
        let original = request.originalTransactionID
        let store = ReceiptStore(db)
        var customer = Customer(bundleID: try store.bundleID(ofOriginal: original))
        customer.answered = try RetentionStore(db).response(to: request.requestIdentifier)
        guard let owner = try store.owner(of: original), let subscriber = try store.subscriber(owner) else { return customer }
        customer.appUserID = subscriber.appUserID
        customer.ids = subscriber.ids
        customer.facts = subscriber.pinnedFacts
        let given = OfferStore(db)
        customer.priorOffers = try given.promotionalCount(of: subscriber.ids)
        for offer in Set(offerIDs) { customer.issued[offer] = try given.issued(offer, to: subscriber.ids) }
        return customer
    }

    /// `retention_answers_total{kind, outcome}`: the answer's kind and the decision's rule, or `refused`.
    private func count(kind: String, outcome: String) {
        Counter(label: "retention_answers_total", dimensions: [("kind", kind), ("outcome", outcome)], factory: metrics)
            .increment()
    }
}
