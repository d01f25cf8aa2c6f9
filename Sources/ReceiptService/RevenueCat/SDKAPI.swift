import HTTPServer
import JSON
import Logging
import ReceiptCore
import RevenueCatProtocol

/// The routes of the listener RevenueCat's SDKs talk to (``SDKListener``): every route takes one
/// of the apps' keys (``SDKKeys``), every answer carries `X-RevenueCat-Request-Time`, and every
/// error is the SDKs' `{code, message}` with the status they act on (``SDKError``), mapped here and
/// nowhere else.
struct SDKAPI {
    typealias Handler = @Sendable (HTTPRequest, RouteContext, SDKCaller) async throws -> HTTPResponse

    private(set) var router = Router()
    let keys: SDKKeys
    let clock: @Sendable () -> Int64
    let logger: Logger

    init(keys: SDKKeys, clock: @escaping @Sendable () -> Int64, logger: Logger) {
        self.keys = keys
        self.clock = clock
        self.logger = logger
        router.refusal = { [clock] status, _, message, _ in
            Self.response(SDKError(status: status.code, code: 7226, message: message), now: clock())
        }
    }

    /// A route answered on a concurrency task, for a caller holding one of the keys (`keyed`;
    /// else anyone: the SDKs' health check sends none).
    mutating func on(_ method: HTTPMethod, _ pattern: String, keyed: Bool = true, _ handler: @escaping Handler) {
        router.on(method, pattern, handler: wrapped(pattern, handler, keyed: keyed))
    }

    /// A route answered on the event loop when `immediately` has the answer at hand (from memory,
    /// never blocking), else on a concurrency task by `handler`.
    mutating func on(
        _ method: HTTPMethod, _ pattern: String,
        immediately: @escaping @Sendable (HTTPRequest, RouteContext, SDKCaller) throws -> HTTPResponse?,
        handler: @escaping Handler
    ) {
        router.on(
            method, pattern,
            immediately: { [keys, clock] request, context in
                let now = clock()
                // Refusals and misses go to the task, which answers them in full.
                guard let platform = keys.platform(request) else { return nil }
                let caller = SDKCaller(platform: platform, bundleID: request.headers[first: "X-Client-Bundle-ID"], now: now)
                guard var response = try? immediately(request, context, caller) else { return nil }
                response.headers.replaceOrAdd(name: "X-RevenueCat-Request-Time", value: String(now))
                return response
            },
            handler: wrapped(pattern, handler))
    }

    /// `handler` behind the key check, with the request's time and the SDKs' errors.
    private func wrapped(_ pattern: String, _ handler: @escaping Handler, keyed: Bool = true) -> Router.Handler {
        { [keys, clock, logger] request, context in
            let now = clock()
            guard let platform = keys.platform(request) ?? (keyed ? nil : .appStore) else {
                return Self.response(.invalidAPIKey, now: now)
            }
            let caller = SDKCaller(platform: platform, bundleID: request.headers[first: "X-Client-Bundle-ID"], now: now)
            do {
                var response = try await handler(request, context, caller)
                response.headers.replaceOrAdd(name: "X-RevenueCat-Request-Time", value: String(now))
                return response
            } catch {
                let refusal = Self.sdkError(error)
                if refusal.status >= 500 {
                    logger.error(
                        "SDK request failed",
                        metadata: ["request_id": "\(context.requestID)", "route": "\(pattern)", "error": "\(error)"])
                }
                return Self.response(refusal, now: now)
            }
        }
    }

    /// An error as the SDKs read it.
    static func response(_ error: SDKError, now: Int64) -> HTTPResponse {
        var headers: HTTPHeaders = ["X-RevenueCat-Request-Time": String(now)]
        if let seconds = error.retryAfterSeconds { headers.add(name: "Retry-After", value: String(seconds)) }
        return .json(error.json, status: HTTPStatus(code: error.status), headers: headers)
    }

    /// `error` in the SDKs' words: its own as it is, a use case's by what a retry could change.
    static func sdkError(_ error: any Error) -> SDKError {
        switch error {
        case let error as SDKError: error
        case let error as ReceiptError: SDKError(error)
        default: .internalFault
        }
    }
}

/// Who is asking: the store the key names, the app (`X-Client-Bundle-ID`: a bundle id or a Play
/// package), and when the request was taken (the answer's `X-RevenueCat-Request-Time`).
struct SDKCaller: Sendable {
    let platform: Offerings.Platform
    let bundleID: String?
    let now: Int64
}

extension SDKError {
    /// A use case's error as the SDKs act on it: what the request or the store's answer got wrong
    /// is a 4xx with the nearest code (the SDK finishes a purchase on it: no retry would change
    /// it); what a retry may fix (a store or receiptd down) is a 5xx, which keeps the purchase to
    /// be posted again.
    init(_ error: ReceiptError) {
        switch error {
        case .storeUnavailable, .notStored: self = .storeProblem(error.message)
        case .storeMisconfigured, .internalFault: self = .internalFault
        case .invalidReceipt, .invalidTransactionID, .bundleMismatch, .wrongApp, .signedData, .appStoreRefused,
            .invalidPurchaseToken:
            self = .invalidReceipt(error.message)
        case .receiptInUse, .proofRequired, .mergeConflict, .aliasTaken: self = .cannotTransfer(error.message)
        case .offerNotEligible: self = .ineligible(error.message)
        case .offerRateLimited: self = SDKError(status: 429, code: 7638, message: error.message)
        case .subscriberNotFound, .orderNotFound, .subscriptionNotFound, .purchaseNotFound:
            self = SDKError(status: 404, code: 7259, message: error.message)
        default: self = .badRequest(error.message)
        }
    }
}
