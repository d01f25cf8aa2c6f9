import Entitlements
import HTTPServer
import JSON
import ReceiptCore
import RevenueCatProtocol

/// Purchases, restores and syncs (`POST /v1/receipts`), through receiptd's own use cases: the
/// key's store decides what `fetch_token` is. For the App Store: a StoreKit 2 signed transaction
/// (a JWS), else a StoreKit 1 receipt (base64), or none at all with an `app_transaction` (a
/// StoreKit 2 sync with no transaction). For Google Play: a purchase token, for the package
/// `X-Client-Bundle-ID` names.
///
/// `is_restore` asks for what receiptd does to every post carrying the device's proof (a receipt,
/// a signed transaction, a token): `ownership.policy` decides whether a purchase someone else
/// holds moves (RevenueCat's "restore behavior" is that setting). A purchase kept by its holder
/// is the SDKs' 7102.
///
/// What a retry may fix is a 5xx, so the SDK keeps the transaction and posts it again; a 4xx
/// makes it finish the transaction for good (Android: mark the token synced), so it is only for
/// what no retry changes (the store says the proof is not valid, not this app's).
struct ReceiptRoutes: SDKRouteGroup {
    let verifyPurchase: VerifyPurchase
    let verifyPlayPurchase: VerifyPlayPurchase
    let recordAppTransaction: RecordAppTransaction
    let readSubscriber: ReadSubscriber
    let customerAttributes: CustomerAttributes
    let catalog: Catalog
    /// Whether receiptd consumes Play consumables itself (then the SDK must not).
    let receiptdConsumes: Bool
    /// The bounds on purchases posted per key and per address, shared with receiptd's own
    /// `POST /v1/receipts` (`limits.*`).
    let limiter: RateLimiter

    func add(to api: inout SDKAPI) {
        api.on(.post, "/v1/receipts") { [self] request, context, caller in
            let key = APIAuth.bearerKey(request).map { String(decoding: $0, as: UTF8.self) } ?? ""
            if let wait = limiter.check(key: key, address: context.request.remoteAddress, now: caller.now) {
                throw SDKError.slowDown(retryAfterSeconds: wait)
            }
            let body = try SDKRequests.object(request.body)
            let user = try SDKRequests.appUserID(body["app_user_id"]?.string)
            // The attributes the app had not sent yet come along; the purchase stands whatever
            // becomes of them (the refused ones are reported beside the answer).
            var refused: [SDKError.AttributeError] = []
            if case .object(let posted)? = body["attributes"] {
                do {
                    refused = try await AttributeRoutes.set(body, for: user, customerAttributes)
                } catch {
                    // Never a purchase refused for its attributes: they are reported, and the SDK
                    // sends them again with its next sync.
                    refused = posted.keys.map { .init(key: $0.string, message: "Not stored: \(SDKAPI.sdkError(error).message)") }
                }
            }
            let customer = try await verify(body, for: user, caller: caller)
            var extra: [Identifier: JSONValue] = [:]
            if caller.platform == .playStore { extra["purchased_products"] = purchasedProducts(body) }
            if !refused.isEmpty { extra["attributes_error_response"] = SDKError.invalidAttributes(refused).json }
            return SDKResponses.customerInfo(customer, of: user, caller: caller, request: request, adding: extra)
        }
    }

    /// Verifies what `body` posts for `user`, as the key's store reads it; the person after it.
    private func verify(_ body: JSONValue, for user: String, caller: SDKCaller) async throws -> (
        snapshot: SubscriberSnapshot?, firstSeen: Int64
    ) {
        let token = try SDKRequests.optionalText(body, "fetch_token")
        switch caller.platform {
        case .playStore:
            guard let token else { throw SDKError.invalidReceipt("`fetch_token` (the Play purchase token) is required.") }
            guard let package = caller.bundleID, !package.isEmpty else {
                throw SDKError.invalidPlayPackage("X-Client-Bundle-ID (the app's package name) is required.")
            }
            var product: String?
            if case .array(let ids)? = body["product_ids"], case .string(let id)? = ids.first { product = id }
            let snapshot = try await verifyPlayPurchase(
                .init(appUserID: user, packageName: package, purchaseToken: token, productID: product))
            return (snapshot, try await readSubscriber.firstSeen(snapshot))
        case .appStore:
            guard let token else {
                // A StoreKit 2 sync with no transaction: the AppTransaction alone.
                guard let app = try SDKRequests.optionalText(body, "app_transaction") else {
                    throw SDKError.invalidReceipt("`fetch_token` or `app_transaction` is required.")
                }
                _ = try await recordAppTransaction(appUserID: user, signedAppTransaction: app)
                return try await readSubscriber.customer(user)
            }
            let proof: VerifyPurchase.Proof
            if SDKRequests.isJWS(token) {
                try FieldRules.jws(token, field: "fetch_token")
                proof = .signed(transaction: token, renewal: nil)
            } else {
                try FieldRules.receipt(token)
                proof = .receipt(token)
            }
            let snapshot = try await verifyPurchase(
                .init(appUserID: user, proof: proof, clientPrice: SDKRequests.clientPrice(body)))
            return (snapshot, try await readSubscriber.firstSeen(snapshot))
        }
    }

    /// Android's `purchased_products`: `should_consume` for each posted consumable (without it the
    /// SDK only acknowledges, and a consumable can never be bought again), unless receiptd
    /// consumes it itself (`googlePlay.consumeConsumables`).
    private func purchasedProducts(_ body: JSONValue) -> JSONValue {
        var products: [Identifier: JSONValue] = [:]
        if case .array(let ids)? = body["product_ids"] {
            for case .string(let id) in ids {
                products[Identifier(id)] = .object([
                    "should_consume": .bool(catalog.declared(id) == .consumable && !receiptdConsumes)
                ])
            }
        }
        return .object(products)
    }
}
