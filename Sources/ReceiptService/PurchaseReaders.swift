import Entitlements
import Identifiers
import JSON
import ReceiptCore

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
