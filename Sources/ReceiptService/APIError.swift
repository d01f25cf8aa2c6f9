import AppStore
import HTTPServer
import JSON
import ReceiptCore

/// The API's errors: a status, a stable code, a message for people and, when Apple gave one,
/// Apple's status. Rendered as `{"error": {"code", "message", "request_id", "apple_status"}}`. Every
/// ``ReceiptError`` maps to one here (``init(_:)``), the only place statuses are chosen.
struct APIError: Error, Sendable {
    let status: HTTPStatus
    let code: String
    let message: String
    var appleStatus: Int? = nil
    var retryAfterSeconds: Int? = nil
    /// Members beside `error` (the last known `subscriber` while Apple is down).
    var members: [Identifier: JSONValue] = [:]

    /// The answer a use case's refusal gets: its code, message and Apple's status, with the HTTP
    /// status chosen here. `explain` renders the last known document with its explanations.
    init(_ error: ReceiptError, explain: Bool = false) {
        let status: HTTPStatus
        var retryAfter: Int?
        switch error {
        case .invalidRequest: status = .badRequest
        case .subscriberNotFound: status = .notFound
        case .receiptInUse, .proofRequired, .erasedMeanwhile: status = .conflict
        case .transactionNotHeld: status = .forbidden
        case .invalidReceipt, .invalidTransactionID, .bundleMismatch, .wrongApp: status = .unprocessableContent
        case .storeMisconfigured, .internalFault: status = .internalServerError
        case .storeUnavailable(_, _, let seconds, let lastKnown):
            status = .serviceUnavailable
            retryAfter = seconds
            if let lastKnown { members["subscriber"] = Responses.stale(lastKnown, explain: explain) }
        case .notConfigured: status = HTTPStatus(code: 501)
        case .signedData(let reason): status = reason.code == "invalid_jws" ? .badRequest : .unprocessableContent
        case .wrongNotificationPassword: status = .unauthorized
        case .notStored:
            status = .serviceUnavailable
            retryAfter = 5
        case .orderNotFound, .subscriptionNotFound, .webhookEndpointNotFound, .webhookDeliveryNotFound, .promotionNotFound,
            .massExtensionNotFound,
            .purchaseNotFound:
            status = .notFound
        case .webhookDeliveryInFlight, .aliasTaken, .mergeConflict, .requestIDReused: status = .conflict
        case .appStoreRefused, .invalidPurchaseToken: status = .unprocessableContent
        case .unauthenticatedPush: status = .unauthorized
        case .offerNotEligible(let rule, _):
            status = .forbidden
            members["rule"] = .string(rule)
        case .offerRateLimited(let seconds):
            status = .tooManyRequests
            retryAfter = seconds
        }
        self.status = status
        code = error.code
        message = error.message
        appleStatus = error.appleStatus
        retryAfterSeconds = retryAfter
    }

    init(status: HTTPStatus, code: String, message: String, appleStatus: Int? = nil, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.appleStatus = appleStatus
        self.retryAfterSeconds = retryAfterSeconds
    }

    static let unauthorized = APIError(
        status: .unauthorized, code: "unauthorized", message: "A valid API key is required (Authorization: Bearer <key>).")
    static let forbidden = APIError(
        status: .forbidden, code: "forbidden", message: "This API key may not do that; a secret key is needed.")
    static func rateLimited(retryAfterSeconds: Int) -> APIError {
        APIError(
            status: .tooManyRequests, code: "rate_limited", message: "Too many receipts from this key or address; slow down.",
            retryAfterSeconds: retryAfterSeconds)
    }
    static let serverFault = APIError(ReceiptError.internalFault)

    /// The error body, with Apple's status in `error` when there is one and ``members`` beside it.
    func response(requestID: String) -> HTTPResponse {
        var headers: HTTPHeaders = [:]
        if let retryAfterSeconds { headers.add(name: "Retry-After", value: String(retryAfterSeconds)) }
        var detail: [Identifier: JSONValue] = [:]
        if let appleStatus { detail["apple_status"] = .int(appleStatus) }
        return ErrorBody.response(
            status: status, code: code, message: message, requestID: requestID, detail: detail, members: members,
            headers: headers)
    }
}
