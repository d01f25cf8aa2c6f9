package import JSON

/// An error as RevenueCat's SDKs read it: `{"code": <int>, "message": "<text>"}` at the top level,
/// with the HTTP status they act on (../shared/reference/revenuecat-sdk-protocol.md §3 and §8).
///
/// The status matters most on a purchase: a 4xx to `POST /v1/receipts` makes the SDK finish the
/// store transaction for good (iOS) or mark the token synced (Android), so a 4xx is only for what
/// no retry could change; anything a retry may fix (a store or the database down) is a 5xx, which
/// keeps the transaction to be posted again and turns on the SDKs' offline entitlements.
package struct SDKError: Error, Sendable, Equatable {
    package let status: Int
    package let code: Int
    package let message: String
    /// Per-attribute errors (`attribute_errors`), with code 7263.
    package let attributeErrors: [AttributeError]
    /// Seconds to wait before asking again (`Retry-After`), when the answer says.
    package let retryAfterSeconds: Int?

    package init(
        status: Int, code: Int, message: String, attributeErrors: [AttributeError] = [], retryAfterSeconds: Int? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.attributeErrors = attributeErrors
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// One attribute that was not saved, and why.
    package struct AttributeError: Error, Sendable, Equatable {
        package let key: String
        package let message: String

        package init(key: String, message: String) {
            self.key = key
            self.message = message
        }
    }

    /// The body.
    package var json: JSONValue {
        var fields: [Identifier: JSONValue] = ["code": .int(code), "message": .string(message)]
        if !attributeErrors.isEmpty {
            fields["attribute_errors"] = .array(
                attributeErrors.map { .object(["key_name": .string($0.key), "message": .string($0.message)]) })
        }
        return .object(fields)
    }

    // The codes the SDKs know (iOS BackendErrorCode, Android errors.kt), each with the status the
    // SDKs act on.

    /// 7225: the key is not one of this listener's (401).
    package static let invalidAPIKey = SDKError(status: 401, code: 7225, message: "Invalid API key.")
    /// 7000: the key's platform cannot do this (an App Store key posting a Play token).
    package static func invalidPlatform(_ message: String) -> SDKError { SDKError(status: 400, code: 7000, message: message) }
    /// 7220: no app user id.
    package static let emptyAppUserID = SDKError(status: 400, code: 7220, message: "The app user id is empty.")
    /// 7256: an app user id receiptd does not take (too long, control characters).
    package static func invalidAppUserID(_ message: String) -> SDKError { SDKError(status: 400, code: 7256, message: message) }
    /// 7226: a body or parameter that cannot be read.
    package static func badRequest(_ message: String) -> SDKError { SDKError(status: 400, code: 7226, message: message) }
    /// 7103: the store says the receipt or token is not valid (a retry cannot change that).
    package static func invalidReceipt(_ message: String) -> SDKError { SDKError(status: 400, code: 7103, message: message) }
    /// 7102: the purchase belongs to another customer and receiptd's policy keeps it there.
    package static func cannotTransfer(_ message: String) -> SDKError { SDKError(status: 400, code: 7102, message: message) }
    /// 7101: the store could not be asked now (a 5xx: the SDKs keep the transaction and retry).
    package static func storeProblem(_ message: String) -> SDKError { SDKError(status: 503, code: 7101, message: message) }
    /// 7230: the Play package is not one receiptd serves.
    package static func invalidPlayPackage(_ message: String) -> SDKError { SDKError(status: 400, code: 7230, message: message) }
    /// 7232: the customer may not have this promotional offer.
    package static func ineligible(_ message: String) -> SDKError { SDKError(status: 400, code: 7232, message: message) }
    /// 7263: some attributes were not saved.
    package static func invalidAttributes(_ errors: [AttributeError]) -> SDKError {
        SDKError(
            status: 400, code: 7263, message: "Some subscriber attributes keys were unable to be saved.",
            attributeErrors: errors)
    }
    /// 7264: the attributes body cannot be read.
    package static func invalidAttributesBody(_ message: String) -> SDKError {
        SDKError(status: 400, code: 7264, message: message)
    }
    /// Too many purchases posted from one key or address: a 503 with `Retry-After`, not a 429,
    /// since Android marks a purchase answered with any 4xx synced for good (iOS, which retries a
    /// 429, keeps a purchase answered 5xx to post it again as well).
    package static func slowDown(retryAfterSeconds: Int) -> SDKError {
        SDKError(
            status: 503, code: 7101, message: "Too many requests from this key or address; try again later.",
            retryAfterSeconds: retryAfterSeconds)
    }
    /// 7110: receiptd failed (a 5xx: nothing the SDK sent was wrong).
    package static let internalFault = SDKError(status: 500, code: 7110, message: "Internal server error.")
    /// 404 for what this listener does not serve (remote config, customer center, …): the SDKs
    /// turn the feature off for the session on a 4xx.
    package static let notServed = SDKError(status: 404, code: 7226, message: "Not served by receiptd.")
}
