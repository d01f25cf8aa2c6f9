import JSON

/// The App Store Server API's answer bodies (Docs/apple-protocols.md §4.3), read tolerantly: a
/// field the caller needs and cannot find makes the answer ``ServerAPIFailure/badAnswer(_:)``,
/// anything else absent or unknown is ignored. Signed strings are not yet verified here.
enum ServerAPIResponses {
    /// `HistoryResponse` (v2) and the refund history's page.
    struct TransactionPage: Equatable {
        var revision: String?
        var hasMore: Bool
        var signedTransactions: [String]
    }

    /// `StatusResponse`: each group's last transactions.
    struct Statuses: Equatable {
        struct Last: Equatable {
            var groupID: String
            var status: Int64?
            var originalTransactionID: String?
            var signedTransaction: String?
            var signedRenewal: String?
        }
        var environment: String?
        var bundleID: String?
        var last: [Last]
    }

    static func json(_ body: [UInt8]) throws(ServerAPIFailure) -> JSONValue {
        guard let value = try? JSONValue.parse(body), case .object = value else {
            throw .badAnswer("the body is not a JSON object")
        }
        return value
    }

    static func strings(_ value: JSONValue?, _ field: String) throws(ServerAPIFailure) -> [String] {
        guard let items = value?.array else { throw .badAnswer("`\(field)` is not an array") }
        var out: [String] = []
        for item in items {
            guard let s = item.string else { throw .badAnswer("`\(field)` holds a value that is not a string") }
            out.append(s)
        }
        return out
    }

    static func transactionPage(_ body: [UInt8]) throws(ServerAPIFailure) -> TransactionPage {
        let v = try json(body)
        return TransactionPage(
            revision: v["revision"]?.string, hasMore: v["hasMore"]?.bool ?? false,
            signedTransactions: try strings(v["signedTransactions"] ?? .array([]), "signedTransactions"))
    }

    static func statuses(_ body: [UInt8]) throws(ServerAPIFailure) -> Statuses {
        let v = try json(body)
        guard let groups = v["data"]?.array else { throw .badAnswer("`data` is not an array") }
        var last: [Statuses.Last] = []
        for group in groups {
            let id = group["subscriptionGroupIdentifier"]?.string ?? ""
            for item in group["lastTransactions"]?.array ?? [] {
                last.append(
                    .init(
                        groupID: id, status: item["status"]?.int64, originalTransactionID: item["originalTransactionId"]?.string,
                        signedTransaction: item["signedTransactionInfo"]?.string, signedRenewal: item["signedRenewalInfo"]?.string
                    ))
            }
        }
        return Statuses(environment: v["environment"]?.string, bundleID: v["bundleId"]?.string, last: last)
    }

    /// `NotificationHistoryResponse`.
    static func notificationPage(_ body: [UInt8]) throws(ServerAPIFailure) -> ServerAPIClient.NotificationHistoryPage {
        let v = try json(body)
        guard let items = v["notificationHistory"]?.array else { throw .badAnswer("`notificationHistory` is not an array") }
        var payloads: [String] = []
        for item in items {
            guard let payload = item["signedPayload"]?.string else { throw .badAnswer("a history item has no signedPayload") }
            payloads.append(payload)
        }
        return .init(
            signedPayloads: payloads, hasMore: v["hasMore"]?.bool ?? false, paginationToken: v["paginationToken"]?.string)
    }

    /// `{"errorCode", "errorMessage"}`, or nil when the body is not one.
    static func error(_ body: [UInt8]) -> ServerAPIError? {
        guard !body.isEmpty, let v = try? JSONValue.parse(body), let code = v["errorCode"]?.int64 else { return nil }
        return ServerAPIError(code: code, message: v["errorMessage"]?.string ?? "")
    }
}
