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

    /// `?cursor=<id>` from `next_cursor`, for listings paged by row id (notifications, shadow diffs).
    static func idCursor(_ request: HTTPRequest) throws(ReceiptError) -> Int64? {
        guard let text = request.queryValue("cursor") else { return nil }
        guard let id = Int64(text), id > 0 else { throw .invalidRequest("`cursor` must be a `next_cursor`.") }
        return id
    }
}
