import AppStore
import CustomerOffers
import Entitlements
import FoundationEssentials
import HTTPServer
import JSON
import ReceiptCore

/// Requests read into use-case inputs: every problem is a ``ReceiptError/invalidRequest(_:)``
/// naming its field (held to ``FieldRules``, as the use cases hold their inputs), found before
/// anything is asked of Apple or storage.
enum Requests {
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

    /// The `{app_user_id}` path parameter, held to the same rules as in a body.
    static func appUserID(in context: RouteContext) throws(ReceiptError) -> String {
        try FieldRules.appUserID(context.parameters["app_user_id"] ?? "", field: "app_user_id in the path")
    }

    /// `?explain=true` (or `1`); `false`, `0` or absent: no explanations.
    static func explain(_ request: HTTPRequest) throws(ReceiptError) -> Bool {
        switch request.queryValue("explain") {
        case nil, "false", "0": false
        case "true", "1": true
        default: throw .invalidRequest("`explain` must be true or false.")
        }
    }

    /// `?limit=` from 1 to 200; 50 when absent.
    static func limit(_ request: HTTPRequest) throws(ReceiptError) -> Int {
        guard let text = request.queryValue("limit") else { return 50 }
        guard let n = Int(text), (1...200).contains(n) else { throw .invalidRequest("`limit` must be an integer from 1 to 200.") }
        return n
    }

    /// Events' `?cursor=<at>.<id>` from `next_cursor`.
    static func eventCursor(_ request: HTTPRequest) throws(ReceiptError) -> ReadSubscriber.EventCursor? {
        guard let text = request.queryValue("cursor") else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let at = Int64(parts[0]), let id = Int64(parts[1]) else {
            throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.")
        }
        return .init(at: at, id: id)
    }

    /// `?cursor=<id>` from `next_cursor`, for listings paged by row id (notifications, shadow diffs).
    static func idCursor(_ request: HTTPRequest) throws(ReceiptError) -> Int64? {
        guard let text = request.queryValue("cursor") else { return nil }
        guard let id = Int64(text), id > 0 else { throw .invalidRequest("`cursor` must be a `next_cursor`.") }
        return id
    }

    /// Shared receipts' `?more_than=` from 1 to 10000; 1 when absent.
    static func moreThan(_ request: HTTPRequest) throws(ReceiptError) -> Int {
        guard let text = request.queryValue("more_than") else { return 1 }
        guard let n = Int(text), (1...10_000).contains(n) else {
            throw .invalidRequest("`more_than` must be an integer from 1 to 10000.")
        }
        return n
    }

    /// Shared receipts' `?cursor=<users>.<original_transaction_id>` from `next_cursor`.
    static func sharedCursor(_ request: HTTPRequest) throws(ReceiptError) -> Listings.SharedCursor? {
        guard let text = request.queryValue("cursor") else { return nil }
        guard let dot = text.firstIndex(of: "."), let users = Int(text[..<dot]), users > 0,
            !text[text.index(after: dot)...].isEmpty
        else { throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.") }
        return .init(users: users, original: String(text[text.index(after: dot)...]))
    }
}
