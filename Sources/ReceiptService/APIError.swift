import AppStore
import HTTPServer
import JSON
import SignedData

/// The API's errors (issue 3's contract): a status, a stable code, a message for people and, when
/// Apple gave one, Apple's status. Rendered as `{"error": {"code", "message", "request_id", "apple_status"}}`.
struct APIError: Error, Sendable, Equatable {
    let status: HTTPStatus
    let code: String
    let message: String
    var appleStatus: Int? = nil
    var retryAfterSeconds: Int? = nil

    static func invalidRequest(_ message: String) -> APIError {
        APIError(status: .badRequest, code: "invalid_request", message: message)
    }
    static let unauthorized = APIError(
        status: .unauthorized, code: "unauthorized", message: "A valid API key is required (Authorization: Bearer <key>).")
    static let forbidden = APIError(
        status: .forbidden, code: "forbidden", message: "This API key may not do that; a secret key is needed.")
    static let subscriberNotFound = APIError(
        status: .notFound, code: "subscriber_not_found", message: "No subscriber has that app_user_id.")
    static func receiptInUse() -> APIError {
        APIError(status: .conflict, code: "receipt_in_use", message: "The receipt's purchases belong to another app user.")
    }
    static func invalidReceipt(appleStatus: Int) -> APIError {
        APIError(
            status: .unprocessableContent, code: "invalid_receipt", message: "Apple did not accept the receipt.",
            appleStatus: appleStatus)
    }
    static func bundleMismatch(_ message: String, appleStatus: Int? = nil) -> APIError {
        APIError(status: .unprocessableContent, code: "bundle_mismatch", message: message, appleStatus: appleStatus)
    }
    static func misconfigured(appleStatus: Int?) -> APIError {
        APIError(
            status: .internalServerError, code: "app_store_misconfigured",
            message: "receiptd's App Store settings were refused by Apple.", appleStatus: appleStatus)
    }
    static func unavailable(appleStatus: Int?, retryAfterSeconds: Int = 30) -> APIError {
        APIError(
            status: .serviceUnavailable, code: "app_store_unavailable",
            message: "The App Store could not answer now; retry later.",
            appleStatus: appleStatus, retryAfterSeconds: retryAfterSeconds)
    }
    /// Apple's signed data did not verify; `code` names the reason (SignedDataError.code).
    static func signedData(_ error: SignedDataError) -> APIError {
        APIError(
            status: error.code == "invalid_jws" ? .badRequest : .unprocessableContent, code: error.code,
            message: error.description)
    }
    static let wrongNotificationPassword = APIError(
        status: .unauthorized, code: "invalid_password",
        message: "The notification's password is not this app's shared secret.")
    static func wrongApp(_ message: String) -> APIError {
        APIError(status: .unprocessableContent, code: "wrong_app", message: message)
    }
    /// A transient fault here (the database): Apple and clients should retry.
    static let temporarilyUnavailable = APIError(
        status: .serviceUnavailable, code: "temporarily_unavailable", message: "receiptd could not store this now; retry.",
        retryAfterSeconds: 5)
    static func rateLimited(retryAfterSeconds: Int) -> APIError {
        APIError(
            status: .tooManyRequests, code: "rate_limited", message: "Too many receipts from this key or address; slow down.",
            retryAfterSeconds: retryAfterSeconds)
    }
    static let serverFault = APIError(
        status: .internalServerError, code: "internal_error", message: "An internal error occurred.")

    /// The error body, with Apple's status in `error` when there is one and `members` beside it
    /// (e.g. the last known `subscriber`).
    func response(requestID: String, with members: [Identifier: JSONValue] = [:]) -> HTTPResponse {
        var headers: HTTPHeaders = [:]
        if let retryAfterSeconds { headers.add(name: "Retry-After", value: String(retryAfterSeconds)) }
        var detail: [Identifier: JSONValue] = [:]
        if let appleStatus { detail["apple_status"] = .int(appleStatus) }
        return ErrorBody.response(
            status: status, code: code, message: message, requestID: requestID, detail: detail, members: members,
            headers: headers)
    }
}
