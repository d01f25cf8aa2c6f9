import AppStore
import Clocks
import Entitlements
import HTTPServer
import JSON
import ReceiptCore

/// A purchase posted by an app (`POST /v1/receipts`: a receipt, a signed transaction, a transaction id or a Play token, read by its store's reader) and StoreKit's AppTransaction, posted or fetched.
struct PurchaseRoutes: RouteGroup {
    let auth: APIAuth
    let purchases: PurchaseReaders
    let recordAppTransaction: RecordAppTransaction
    let limiter: RateLimiter
    let clock: WallClock

    func add(to api: inout API) {
        // A mobile app posts its receipt or signed transaction: verify, store, answer the document.
        api.on(.post, "/v1/receipts", access: .publicKey) {
            [purchases, limiter, clock, auth] request, context in
            let key = APIAuth.bearerKey(request).map { String(decoding: $0, as: UTF8.self) } ?? ""
            if let wait = limiter.check(key: key, address: context.request.remoteAddress, now: clock.now()) {
                throw APIError.rateLimited(retryAfterSeconds: wait)
            }
            let verification = try purchases.read(request.body)
            let explain = try Requests.explain(request)
            do throws(ReceiptError) {
                let snapshot = try await verification(auth.caller(request))
                return Responses.document(snapshot, explain: explain, request: request)
            } catch {
                throw APIError(error, explain: explain)
            }
        }
        // An app posts StoreKit's AppTransaction for its user: verified and kept (Docs/offers.md).
        api.on(.post, "/v1/app-transactions", access: .publicKey) { [recordAppTransaction] request, _ in
            let (user, jws) = try Requests.appTransaction(request.body)
            return Responses.appTransaction(try await recordAppTransaction(appUserID: user, signedAppTransaction: jws))
        }
        // Support has receiptd ask Apple for a customer's AppTransaction (Get App Transaction Info),
        // when their app never posted it.
        api.on(.post, "/v1/subscribers/{app_user_id}/app-transaction", access: .secretKey) {
            [recordAppTransaction] _, context in
            Responses.appTransaction(try await recordAppTransaction.fetch(appUserID: try Requests.appUserID(in: context)))
        }
    }
}

/// POST /v1/receipts's purchase, read by the reader of the store its body names: one table of
/// stores, receiptd's two and any plugged in through ``VerifyStorePurchase``. `store` picks the
/// row (`app_store` when absent); the row's reader holds the store's fields to its rules before
/// anything is asked, and gives back the verification to run for whoever posted it.
struct PurchaseReaders: Sendable {
    /// A purchase read and ready to verify, for the caller who posted it.
    typealias Verification = VerifyStorePurchase.Verification
    /// Reads a body (a JSON object) for the app user it names.
    typealias Reader = @Sendable (_ body: JSONValue, _ user: String) throws(ReceiptError) -> Verification

    let table: [(store: Store, read: Reader)]

    init(verifyPurchase: VerifyPurchase, verifyPlayPurchase: VerifyPlayPurchase, plugged: [VerifyStorePurchase]) {
        var table: [(store: Store, read: Reader)] = [
            (
                .appStore,
                Self.reader(
                    Requests.appStorePurchase, caller: { $0.caller = $1 },
                    verify: { input throws(ReceiptError) in try await verifyPurchase(input) })
            ),
            (
                .playStore,
                Self.reader(
                    Requests.playStorePurchase, caller: { $0.caller = $1 },
                    verify: { input throws(ReceiptError) in try await verifyPlayPurchase(input) })
            ),
        ]
        for store in plugged { table.append((store.store, store.claim(in:user:))) }
        self.table = table
    }

    /// A shipped store's row: its request reader, then its use case for the caller who posted.
    private static func reader<Input: Sendable>(
        _ read: @escaping @Sendable (JSONValue, String) throws(ReceiptError) -> Input,
        caller: @escaping @Sendable (inout Input, Caller) -> Void,
        verify: @escaping @Sendable (Input) async throws(ReceiptError) -> SubscriberSnapshot
    ) -> Reader {
        { body, user throws(ReceiptError) in
            let input = try read(body, user)
            return { who throws(ReceiptError) in
                var input = input
                caller(&input, who)
                return try await verify(input)
            }
        }
    }

    /// The body of POST /v1/receipts: `app_user_id`, and `store` picking the fields that prove
    /// the purchase.
    func read(_ body: [UInt8]) throws(ReceiptError) -> Verification {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let user)? = json["app_user_id"] else {
            throw .invalidRequest("`app_user_id` is required and must be a string.")
        }
        _ = try FieldRules.appUserID(user)
        let name: String
        switch json["store"] {
        case nil, .null?: name = Store.appStore.rawValue
        case .string(let s)?: name = s
        default: throw .invalidRequest(storeRule)
        }
        guard let row = table.first(where: { $0.store.rawValue.isExactly(name) }) else { throw .invalidRequest(storeRule) }
        return try row.read(json, user)
    }

    /// "`store` must be `app_store` (the default) or `play_store`."
    private var storeRule: String {
        let names = table.map { "`\($0.store.rawValue)`" + ($0.store == .appStore ? " (the default)" : "") }
        let listed = names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
        return "`store` must be \(listed)."
    }
}

extension Requests {
    /// The body of POST /v1/app-transactions: `app_user_id`, `signed_app_transaction` (a JWS).
    static func appTransaction(_ body: [UInt8]) throws(ReceiptError) -> (String, String) {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let user)? = json["app_user_id"] else {
            throw .invalidRequest("`app_user_id` is required and must be a string.")
        }
        guard case .string(let jws)? = json["signed_app_transaction"] else {
            throw .invalidRequest(
                "`signed_app_transaction` is required: StoreKit's AppTransaction JWS (`AppTransaction.shared`'s jwsRepresentation)."
            )
        }
        return (user, jws)
    }

    /// A Google Play purchase: `package_name`, `purchase_token`, `product_id` when the app knows it.
    static func playStorePurchase(_ json: JSONValue, user: String) throws(ReceiptError) -> VerifyPlayPurchase.Input {
        let stray = ["receipt_data", "signed_transaction", "transaction_id", "bundle_id"].filter { (json[$0] ?? .null) != .null }
        guard stray.isEmpty else {
            throw .invalidRequest("`\(stray[0])` is an App Store field; a `play_store` purchase sends `purchase_token`.")
        }
        guard case .string(let package)? = json["package_name"] else {
            throw .invalidRequest("`package_name` is required for a `play_store` purchase and must be a string.")
        }
        guard case .string(let token)? = json["purchase_token"] else {
            throw .invalidRequest("`purchase_token` is required for a `play_store` purchase and must be a string.")
        }
        var product: String?
        switch json["product_id"] {
        case nil, .null?: break
        case .string(let id)?: product = id
        default: throw .invalidRequest("`product_id` must be a string.")
        }
        let input = VerifyPlayPurchase.Input(appUserID: user, packageName: package, purchaseToken: token, productID: product)
        _ = try VerifyPlayPurchase.validate(input)
        return input
    }

    /// An App Store purchase: one of `receipt_data`, `signed_transaction`, `transaction_id`.
    static func appStorePurchase(_ json: JSONValue, user: String) throws(ReceiptError) -> VerifyPurchase.Input {
        for field in ["package_name", "purchase_token"] where (json[field] ?? .null) != .null {
            throw .invalidRequest("`\(field)` is a Google Play field: send `\"store\": \"play_store\"` with it.")
        }
        let proof: VerifyPurchase.Proof
        let given = ["receipt_data", "signed_transaction", "transaction_id"].filter { (json[$0] ?? .null) != .null }
        guard given.count <= 1 else {
            throw .invalidRequest("Send one of `receipt_data`, `signed_transaction` or `transaction_id`, not several.")
        }
        switch given.first {
        case nil:
            throw .invalidRequest("One of `receipt_data`, `signed_transaction` or `transaction_id` is required.")
        case "signed_transaction":
            guard case .string(let jws)? = json["signed_transaction"] else {
                throw .invalidRequest("`signed_transaction` must be a JWS string of at most \(FieldRules.maxJWSBytes) bytes.")
            }
            try FieldRules.jws(jws, field: "signed_transaction")
            switch json["signed_renewal_info"] ?? .null {
            case .null: proof = .signed(transaction: jws, renewal: nil)
            case .string(let info) where !info.isEmpty && info.utf8.count <= FieldRules.maxJWSBytes:
                proof = .signed(transaction: jws, renewal: info)
            default: throw .invalidRequest("`signed_renewal_info` must be a JWS string.")
            }
        case "transaction_id":
            guard case .string(let id)? = json["transaction_id"] else {
                throw .invalidRequest("`transaction_id` must be a string.")
            }
            try FieldRules.transactionID(id)
            proof = .transactionID(id)
        default:
            guard case .string(let receipt)? = json["receipt_data"] else {
                throw .invalidRequest(
                    "`receipt_data` must be a non-empty base64 string of at most \(FieldRules.maxReceiptBytes) bytes.")
            }
            try FieldRules.receipt(receipt)
            proof = .receipt(receipt)
        }
        var bundleID: String?
        switch json["bundle_id"] {
        case nil, .null?: bundleID = nil
        case .string(let b)?:
            try FieldRules.bundleID(b)
            bundleID = b
        default: throw .invalidRequest("`bundle_id` must be a bundle identifier: 1 to 155 letters, digits, `.`, `-` or `_`.")
        }
        var exclude = false
        switch json["exclude_old_transactions"] {
        case nil, .null?: break
        case .bool(let b)?: exclude = b
        default: throw .invalidRequest("`exclude_old_transactions` must be a boolean.")
        }
        return VerifyPurchase.Input(
            appUserID: user, proof: proof, bundleID: bundleID, excludeOldTransactions: exclude,
            clientPrice: try clientPrice(json))
    }

    /// `price` (decimal text of at most three places: a JSON string, so no float ever holds it),
    /// `currency` and `product_id`, all three or none.
    static func clientPrice(_ json: JSONValue) throws(ReceiptError) -> VerifyPurchase.ClientPrice? {
        let fields = ["price", "currency", "product_id"].map { json[$0] ?? .null }
        guard fields.contains(where: { $0 != .null }) else { return nil }
        guard case .string(let text) = fields[0], let milliunits = FieldRules.milliunits(text) else {
            throw .invalidRequest("`price` must be a string holding a decimal amount of at most three places, e.g. \"9.99\".")
        }
        guard case .string(let currency) = fields[1], Price.isCurrencyCode(currency) else {
            throw .invalidRequest("`currency` must be an ISO 4217 code such as `USD`, sent with `price`.")
        }
        guard case .string(let product) = fields[2], (1...255).contains(product.utf8.count) else {
            throw .invalidRequest("`product_id` must name the product `price` was paid for (1 to 255 bytes).")
        }
        return VerifyPurchase.ClientPrice(productID: product, milliunits: milliunits, currency: currency)
    }
}

extension Responses {
    /// POST /v1/app-transactions: what was kept (never the other ids of a shared Apple Account).
    static func appTransaction(_ r: RecordAppTransaction.Recorded) -> HTTPResponse {
        .json(
            .object([
                "app_user_id": .string(r.record.appUserID), "app_transaction_id": .string(r.record.appTransactionID),
                "environment": .string(r.record.environment),
                "original_application_version": r.record.originalApplicationVersion.map(JSONValue.string) ?? .null,
                "original_purchase_date": SubscriberDocument.time(r.record.originalPurchaseDate),
                "original_platform": r.record.originalPlatform.map(JSONValue.string) ?? .null,
            ]))
    }
}
