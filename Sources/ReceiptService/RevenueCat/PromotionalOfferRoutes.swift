import CustomerOffers
import Foundation
import HTTPServer
import JSON
import ReceiptCore
import RevenueCatProtocol

/// Offers as iOS asks for them: a promotional offer's signature (`POST /v1/offers`), through
/// receiptd's offer rules (Docs/offers.md: who may have which, caps checked and recorded at once),
/// and StoreKit 1's introductory-offer eligibility (`POST /v1/subscribers/{id}/intro_eligibility`).
struct PromotionalOfferRoutes: SDKRouteGroup {
    let signOffer: SignOffer

    func add(to api: inout SDKAPI) {
        // `{"app_user_id", "fetch_token", "generate_offers": [{"offer_id", "product_id",
        // "subscription_group"}]}`: each signed, or its `signature_error` (7232: not eligible),
        // which the SDK turns into its `ineligibleError`. The customer is `app_user_id`, decided by
        // what receiptd stores of them (the receipt or JWS in `fetch_token` is not read).
        api.on(.post, "/v1/offers") { [signOffer] request, _, caller in
            guard caller.platform == .appStore else { throw SDKError.invalidPlatform("Promotional offers are the App Store's.") }
            let body = try SDKRequests.object(request.body)
            let user = try SDKRequests.appUserID(body["app_user_id"]?.string)
            guard case .array(let asked)? = body["generate_offers"], !asked.isEmpty else {
                throw SDKError.badRequest("`generate_offers` must name at least one offer.")
            }
            // StoreKit 2 signs with the app account token, which the SDK sets only for an app user
            // id that is a UUID; StoreKit 1 with `applicationUsername`, the app user id itself.
            let storeKit2 = request.headers[first: "X-StoreKit2-Enabled"] == "true"
            let username = UUID(uuidString: user).map { $0.uuidString.lowercased() } ?? (storeKit2 ? nil : user)
            var offers: [JSONValue] = []
            for entry in asked {
                guard let offer = entry["offer_id"]?.string, let product = entry["product_id"]?.string else {
                    throw SDKError.badRequest("Each of `generate_offers` names `offer_id` and `product_id`.")
                }
                let input = SignOffer.Promotional(
                    appUserID: user, productID: product, offerID: offer, applicationUsername: username, format: .v1,
                    bundleID: caller.bundleID.flatMap { $0.isEmpty ? nil : $0 })
                offers.append(try await Self.offer(input, signOffer, requestedBy: APIAuth.fingerprint(request)))
            }
            return .json(.object(["offers": .array(offers)]))
        }
        // StoreKit 1's fallback when the device cannot tell: true, false, or null (receiptd cannot
        // say: the product is in no configured subscription group), by receiptd's facts.
        api.on(.post, "/v1/subscribers/{app_user_id}/intro_eligibility") { [signOffer] request, context, _ in
            let user = try SDKRequests.appUserID(context.parameters["app_user_id"])
            let body = try SDKRequests.object(request.body)
            guard case .array(let ids)? = body["product_identifiers"] else {
                throw SDKError.badRequest("`product_identifiers` must be an array of product ids.")
            }
            let products = ids.compactMap { if case .string(let id) = $0 { id } else { nil } }
            let answer = try await signOffer.introductoryEligibility(user, productIDs: products)
            var fields: [Identifier: JSONValue] = [:]
            for product in products { fields[Identifier(product)] = (answer[product] ?? nil).map(JSONValue.bool) ?? .null }
            return .json(.object(fields))
        }
    }

    /// One element of `offers`: the signature, or why the customer may not have the offer.
    private static func offer(_ input: SignOffer.Promotional, _ signOffer: SignOffer, requestedBy: String) async throws
        -> JSONValue
    {
        var fields: [Identifier: JSONValue] = [
            "offer_id": .string(input.offerID), "product_id": .string(input.productID), "key_id": .string(""),
            "signature_data": .null, "signature_error": .null,
        ]
        do {
            let signed = try await signOffer.promotional(input, requestedBy: requestedBy, caller: .app)
            fields["key_id"] = .string(signed.keyID)
            fields["signature_data"] = .object([
                "nonce": .string(signed.nonce), "signature": .string(signed.signature), "timestamp": .int(signed.timestamp),
            ])
        } catch {
            guard case .offerNotEligible(_, let why) = error else { throw error }
            fields["signature_error"] = SDKError.ineligible(why).json
        }
        return .object(fields)
    }
}
