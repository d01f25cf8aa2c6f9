import AppStore
import HTTPServer
import JSON
import Logging
import Storage

/// `GET /v1/admin/shared-receipts?more_than=N&limit=&cursor=` (secret key): the purchases that
/// moved between more than N app users (default 1), most users first, each with its holder and
/// every transfer. What to look at when one receipt is being passed around.
struct SharedReceipts: Sendable {
    let database: DatabaseQueue
    let logger: Logger

    func list(_ request: HTTPRequest, requestID: String) async -> HTTPResponse {
        do {
            let limit = try ReceiptProcessor.limit(request)
            var moreThan = 1
            if let text = request.queryValue("more_than") {
                guard let n = Int(text), (1...10_000).contains(n) else {
                    throw APIError.invalidRequest("`more_than` must be an integer from 1 to 10000.")
                }
                moreThan = n
            }
            let after = try Self.cursor(request)
            let rows = try await database.run { [moreThan] db in
                try ReceiptStore(db).sharedReceipts(moreThan: moreThan, limit: limit + 1, after: after)
            }
            let page = rows.prefix(limit)
            let next: JSONValue =
                rows.count > limit ? page.last.map { .string("\($0.users).\($0.originalTransactionID)") } ?? .null : .null
            let body: JSONValue = .object([
                "more_than": .int(moreThan),
                "shared_receipts": .array(page.map(Self.json)), "next_cursor": next,
            ])
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body.jsonBytes)
        } catch let error as APIError {
            return error.response(requestID: requestID)
        } catch {
            logger.error("GET /v1/admin/shared-receipts failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.serverFault.response(requestID: requestID)
        }
    }

    /// `<users>.<original_transaction_id>` from `next_cursor`.
    static func cursor(_ request: HTTPRequest) throws(APIError) -> (users: Int, original: String)? {
        guard let text = request.queryValue("cursor") else { return nil }
        guard let dot = text.firstIndex(of: "."), let users = Int(text[..<dot]), users > 0,
            !text[text.index(after: dot)...].isEmpty
        else { throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.") }
        return (users, String(text[text.index(after: dot)...]))
    }

    static func json(_ s: SharedReceipt) -> JSONValue {
        let text = { (s: String?) in s.map(JSONValue.string) ?? .null }
        return .object([
            "original_transaction_id": .string(s.originalTransactionID),
            "product_id": text(s.transfers.last?.productID), "users": .int(s.users),
            "holder": text(s.holder),
            "transfers": .array(
                s.transfers.map { t in
                    .object(["from": text(t.from), "to": .string(t.to), "at": SubscriberDocument.time(t.at)])
                }),
        ])
    }
}
