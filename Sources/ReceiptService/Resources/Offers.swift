import CustomerOffers
import Entitlements
import HTTPServer
import Identifiers
import JSON
import ReceiptCore

/// Offers for a customer: the signatures StoreKit needs, introductory eligibility, and what support sees of a customer's offers.
struct OfferRoutes: RouteGroup {
    let auth: APIAuth
    let signOffer: SignOffer
    let answerRetention: AnswerRetentionRequest

    func add(to api: inout API) {
        // An app asks, before showing an offer, for the signature StoreKit needs: given only when
        // the rules allow the customer the offer (Docs/offers.md).
        api.on(.post, "/v1/subscribers/{app_user_id}/offers/signatures", access: .publicKey) {
            [signOffer, auth] request, context in
            let input = try Requests.offerSignature(request.body, user: try Requests.appUserID(in: context))
            return Responses.offerSigned(
                try await signOffer.promotional(input, requestedBy: APIAuth.fingerprint(request), caller: auth.caller(request)))
        }
        api.on(.post, "/v1/subscribers/{app_user_id}/offers/introductory-eligibility", access: .publicKey) {
            [signOffer, auth] request, context in
            let user = try Requests.appUserID(in: context)
            let asked = try Requests.introductoryEligibility(request.body)
            return Responses.offerSigned(
                try await signOffer.introductory(
                    appUserID: user, productID: asked.productID, transactionID: asked.transactionID, bundleID: asked.bundleID,
                    requestedBy: APIAuth.fingerprint(request), caller: auth.caller(request)))
        }
        // Support sees a customer's offers: what they may have now and why, what they were given,
        // and what Apple was answered when they looked at cancelling.
        api.on(.get, "/v1/subscribers/{app_user_id}/offers", access: .secretKey) {
            [signOffer, answerRetention] _, context in
            let user = try Requests.appUserID(in: context)
            return Responses.offers(try await signOffer.overview(user), retention: try await answerRetention.answers(of: user))
        }
    }
}

extension Requests {
    /// The body of POST /v1/subscribers/{id}/offers/signatures: `product_id`, `offer_id`,
    /// `application_username`?, `format`? (`v1`, the default, or `jws`), `transaction_id`?, `bundle_id`?.
    static func offerSignature(_ body: [UInt8], user: String) throws(ReceiptError) -> SignOffer.Promotional {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        func text(_ name: String, required: Bool) throws(ReceiptError) -> String? {
            switch json[name] {
            case nil, .null?:
                if required { throw .invalidRequest("`\(name)` is required and must be a string.") }
                return nil
            case .string(let s)?: return s
            default: throw .invalidRequest("`\(name)` must be a string.")
            }
        }
        let format: SignOffer.Format
        switch try text("format", required: false) {
        case nil, "v1"?: format = .v1
        case "jws"?: format = .jws
        default:
            throw .invalidRequest("`format` must be `v1` (the original API's signature) or `jws` (StoreKit's signed request).")
        }
        let username = try text("application_username", required: false)
        if let username,
            username.utf8.count > 256 || username.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            throw .invalidRequest(
                "`application_username` must be at most 256 bytes without control characters (an app account token).")
        }
        let transaction = try text("transaction_id", required: false)
        if let transaction { try FieldRules.transactionID(transaction) }
        return SignOffer.Promotional(
            appUserID: user, productID: try text("product_id", required: true)!, offerID: try text("offer_id", required: true)!,
            applicationUsername: username, format: format, transactionID: transaction,
            bundleID: try text("bundle_id", required: false))
    }

    /// The body of POST /v1/subscribers/{id}/offers/introductory-eligibility: `product_id`,
    /// `transaction_id`?, `bundle_id`?.
    static func introductoryEligibility(_ body: [UInt8]) throws(ReceiptError) -> (
        productID: String, transactionID: String?, bundleID: String?
    ) {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let product)? = json["product_id"] else {
            throw .invalidRequest("`product_id` is required and must be a string.")
        }
        var transaction: String?
        switch json["transaction_id"] {
        case nil, .null?: break
        case .string(let id)?:
            try FieldRules.transactionID(id)
            transaction = id
        default: throw .invalidRequest("`transaction_id` must be a string.")
        }
        var bundle: String?
        switch json["bundle_id"] {
        case nil, .null?: break
        case .string(let b)?: bundle = b
        default: throw .invalidRequest("`bundle_id` must be a string.")
        }
        return (product, transaction, bundle)
    }
}

extension Responses {
    /// An offer's signature, as StoreKit takes it, with why it was allowed.
    static func offerSigned(_ s: SignOffer.Signed) -> HTTPResponse {
        var members: [Identifier: JSONValue] = [
            "format": .string(s.format.rawValue), "key_id": .string(s.keyID), "nonce": .string(s.nonce),
            "timestamp": .int(s.timestamp), "signature": .string(s.signature),
            "explanation": SubscriberDocument.json(s.explanation),
        ]
        members["allowed"] = .bool(s.allowed)
        return .json(.object(members))
    }

    /// GET /v1/subscribers/{id}/offers.
    static func offers(_ o: SignOffer.Overview, retention: [RetentionAnswer]) -> HTTPResponse {
        func decision(_ e: Explanation) -> JSONValue { SubscriberDocument.json(e) }
        return .json(
            .object([
                "promotional": .array(
                    o.promotional.map {
                        .object([
                            "offer_id": .string($0.offerID), "product_id": .string($0.productID),
                            "eligible": .bool($0.decision.rule == "offer_eligible"), "explanation": decision($0.decision),
                        ])
                    }),
                "introductory": .array(
                    o.introductory.map {
                        .object([
                            "subscription_group": .string($0.group), "product_id": .string($0.productID),
                            "eligible": .bool($0.decision.rule == "introductory_offer_eligible"),
                            "explanation": decision($0.decision),
                        ])
                    }),
                "given": .array(
                    o.given.map { r in
                        .object([
                            "id": .string(String(r.id)), "kind": .string(r.kind), "product_id": .string(r.productID),
                            "offer_id": r.offerID.map(JSONValue.string) ?? .null, "format": .string(r.format),
                            "key_id": .string(r.keyID), "allowed": .bool(r.allowed), "requested_by": .string(r.requestedBy),
                            "issued_at": SubscriberDocument.time(r.issuedAt),
                        ])
                    }),
                "retention_answers": .array(retention.map(retentionAnswer)),
            ]))
    }

    static func retentionAnswer(_ a: RetentionAnswer) -> JSONValue {
        func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        var o: [Identifier: JSONValue] = [
            "request_identifier": .string(a.requestIdentifier), "original_transaction_id": .string(a.originalTransactionID),
            "product_id": .string(a.productID), "decision": .string(a.decision), "user_locale": .string(a.userLocale),
            "environment": .string(a.environment), "answered_at": SubscriberDocument.time(a.answeredAt),
        ]
        o["rule"] = text(a.rule)
        o["kind"] = text(a.kind)
        o["message_identifier"] = text(a.messageIdentifier)
        o["offer_id"] = text(a.offerID)
        o["period_end"] = a.periodEnd.map(SubscriberDocument.time) ?? .null
        return .object(o)
    }
}
