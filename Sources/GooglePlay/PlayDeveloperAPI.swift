package import Clocks
package import CoreMetrics
package import CurlTransport
import JSON
import Synchronization

/// Why a Play Developer API call gave no answer to use, in words safe to log: Google's error
/// `reason` or `status` at most, never a token or Google's message (which may quote the request).
package enum PlayCallFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Google does not know the token for this app (404), or it is no longer valid (410: from
    /// 60 days after a subscription's expiry).
    case notFound(status: Int)
    /// Google refused the request as malformed (400): a token of another app or kind, say.
    case refused(status: Int, reason: String?)
    /// The service account may not do this (403, or 401 with a fresh token): Play Console has not
    /// granted it the permission, or the API is not enabled for its project.
    case forbidden(status: Int, reason: String?)
    /// The service account could not sign in.
    case credentials(String)
    /// Google could not answer now: 429, 5xx, or no answer at all. Never revokes anything.
    case unavailable(String, retryAfterSeconds: Int?)
    /// Google answered 200 with something the API does not document.
    case unexpected(String)

    package var description: String {
        switch self {
        case .notFound(let status): "Google Play does not know the purchase token (HTTP \(status))"
        case .refused(let status, let reason): "Google Play refused the request (HTTP \(status)\(reason.map { ", \($0)" } ?? ""))"
        case .forbidden(let status, let reason):
            "Google Play refused the service account (HTTP \(status)\(reason.map { ", \($0)" } ?? ""))"
        case .credentials(let why): why
        case .unavailable(let why, _): "Google Play unavailable: \(why)"
        case .unexpected(let why): "Google Play's answer: \(why)"
        }
    }

    /// The `outcome` label of `google_play_calls_total`.
    package var metricName: String {
        switch self {
        case .notFound: "not_found"
        case .refused: "refused"
        case .forbidden: "forbidden"
        case .credentials: "credentials"
        case .unavailable: "unavailable"
        case .unexpected: "unexpected"
        }
    }
}

/// The Google Play Developer API (androidpublisher v3) as receiptd calls it, over the shared
/// libcurl transport: a purchase token's subscription or one-time purchase, its acknowledgement
/// and consumption, the voided purchases. Signs in as the service account and keeps its access
/// token until a minute before it expires (one sign-in at a time, whoever asks); a 401 takes a
/// new token once and tries again. Records `google_play_calls_total{call, outcome}` and
/// `google_play_call_duration_seconds{call}` (Docs/operations.md).
package final class PlayDeveloperAPI: Sendable {
    package struct Configuration: Sendable {
        /// Where the API lives: Google's, or the simulator's.
        package var apiBase: String
        /// Each call ends within this.
        package var timeout: Duration

        package init(apiBase: String = "https://androidpublisher.googleapis.com", timeout: Duration = .seconds(15)) {
            self.apiBase = apiBase.hasSuffix("/") ? String(apiBase.dropLast()) : apiBase
            self.timeout = timeout
        }
    }

    package enum Call: String, Sendable, CaseIterable {
        case subscription = "subscriptionsv2_get"
        case product = "productsv2_get"
        case acknowledgeSubscription = "subscriptions_acknowledge"
        case acknowledgeProduct = "products_acknowledge"
        case consume = "products_consume"
        case voided = "voidedpurchases_list"
        case signIn = "oauth_token"
    }

    let key: ServiceAccountKey
    let transport: any HTTPTransport
    let configuration: Configuration
    let clock: WallClock
    let metrics: any MetricsFactory
    /// The cached token, and the sign-in under way.
    private let state = Mutex<(token: AccessToken?, signingIn: Task<Result<AccessToken, PlayCallFailure>, Never>?)>((nil, nil))

    package init(
        key: ServiceAccountKey, transport: any HTTPTransport, configuration: Configuration = Configuration(),
        clock: WallClock = .system, metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.key = key
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.metrics = metrics
    }

    // MARK: Calls

    /// `purchases.subscriptionsv2.get`.
    package func subscription(package: PlayIdentifier, token: PlayIdentifier) async throws(PlayCallFailure)
        -> SubscriptionPurchase
    {
        let body = try await call(
            .subscription, .get, "\(Self.applications(package))/purchases/subscriptionsv2/tokens/\(token.pathSegment)")
        return try Self.read(body) { v throws(GooglePlayError) in try SubscriptionPurchase(v) }
    }

    /// `purchases.productsv2.getproductpurchasev2`.
    package func product(package: PlayIdentifier, token: PlayIdentifier) async throws(PlayCallFailure) -> ProductPurchase {
        let body = try await call(
            .product, .get, "\(Self.applications(package))/purchases/productsv2/tokens/\(token.pathSegment)")
        return try Self.read(body) { v throws(GooglePlayError) in try ProductPurchase(v) }
    }

    /// `purchases.subscriptions.acknowledge` or `purchases.products.acknowledge`.
    package func acknowledge(subscription: Bool, package: PlayIdentifier, product: PlayIdentifier, token: PlayIdentifier)
        async throws(PlayCallFailure)
    {
        let kind = subscription ? "subscriptions" : "products"
        _ = try await call(
            subscription ? .acknowledgeSubscription : .acknowledgeProduct, .post,
            "\(Self.applications(package))/purchases/\(kind)/\(product.pathSegment)/tokens/\(token.pathSegment):acknowledge",
            body: Array("{}".utf8))
    }

    /// `purchases.products.consume`.
    package func consume(package: PlayIdentifier, product: PlayIdentifier, token: PlayIdentifier) async throws(PlayCallFailure) {
        _ = try await call(
            .consume, .post,
            "\(Self.applications(package))/purchases/products/\(product.pathSegment)/tokens/\(token.pathSegment):consume")
    }

    /// One page of `purchases.voidedpurchases.list`: orders voided between `start` and `end`
    /// (epoch ms), subscriptions included (`type=1`), and the next page's token when there is one.
    package func voidedPurchases(package: PlayIdentifier, start: Int64, end: Int64, pageToken: String? = nil)
        async throws(PlayCallFailure) -> (purchases: [VoidedPurchase], next: String?)
    {
        var query = "?startTime=\(start)&endTime=\(end)&type=1&maxResults=1000"
        if let pageToken { query += "&token=" + Self.queryEscaped(pageToken) }
        let body = try await call(.voided, .get, "\(Self.applications(package))/purchases/voidedpurchases", query: query)
        return try Self.read(body) { v throws(GooglePlayError) in
            let list = try (v["voidedPurchases"]?.array ?? []).map { item throws(GooglePlayError) in try VoidedPurchase(item) }
            return (list, v["tokenPagination"]?["nextPageToken"]?.string)
        }
    }

    /// Every byte outside RFC 3986's unreserved set percent-encoded (a page token is Google's opaque text).
    static func queryEscaped(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return out
    }

    static func applications(_ package: PlayIdentifier) -> String { "/androidpublisher/v3/applications/\(package.pathSegment)" }

    static func read<T>(_ body: [UInt8], _ parse: (JSONValue) throws(GooglePlayError) -> T) throws(PlayCallFailure) -> T {
        guard let value = try? JSONValue.parse(body) else { throw .unexpected("the answer is not JSON") }
        do { return try parse(value) } catch { throw .unexpected(error.description) }
    }

    // MARK: The exchange

    /// One call with the cached access token; on 401, once more with a new one.
    func call(_ call: Call, _ method: OutboundRequest.Method, _ path: String, query: String = "", body: [UInt8]? = nil)
        async throws(PlayCallFailure) -> [UInt8]
    {
        var token = try await accessToken(replacing: nil)
        for attempt in 0..<2 {
            let request = OutboundRequest(
                method: method, url: configuration.apiBase + path + query, headers: ["Authorization: Bearer \(token.value)"],
                body: body, timeout: configuration.timeout)
            let started = ContinuousClock.now
            let result = await transport.send(request)
            let outcome: Result<[UInt8], PlayCallFailure> = Self.outcome(result)
            if case .failure(.forbidden(401, _)) = outcome, attempt == 0 {
                record(call, "unauthorized_retried", since: started)
                token = try await accessToken(replacing: token)
                continue
            }
            switch outcome {
            case .success(let bytes):
                record(call, "ok", since: started)
                return bytes
            case .failure(let failure):
                record(call, failure.metricName, since: started)
                throw failure
            }
        }
        throw .forbidden(status: 401, reason: nil)
    }

    /// What an exchange's result means: the body of a 2xx, or the failure.
    static func outcome(_ result: TransportResult) -> Result<[UInt8], PlayCallFailure> {
        switch result {
        case .failure(let why): return .failure(.unavailable(why, retryAfterSeconds: nil))
        case .response(let status, let body, let retryAfter):
            if (200..<300).contains(status) { return .success(body) }
            let reason = errorReason(body)
            switch status {
            case 404, 410: return .failure(.notFound(status: status))
            case 401, 403: return .failure(.forbidden(status: status, reason: reason))
            case 429, 500...599:
                let seconds = retryAfter.flatMap { Int($0.filter { $0 != " " }) }
                return .failure(.unavailable("HTTP \(status)", retryAfterSeconds: seconds))
            default: return .failure(.refused(status: status, reason: reason))
            }
        }
    }

    /// Google's machine-readable reason (`error.errors[0].reason`, else `error.status`): letters,
    /// digits and `_` only, at most 64 bytes, else nothing.
    static func errorReason(_ body: [UInt8]) -> String? {
        guard let value = try? JSONValue.parse(body), let error = value["error"] else { return nil }
        let reason = error["errors"]?.array?.first?["reason"]?.string ?? error["status"]?.string
        guard let reason, reason.utf8.count <= 64,
            reason.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F })
        else { return nil }
        return reason
    }

    private func record(_ call: Call, _ outcome: String, since started: ContinuousClock.Instant) {
        Counter(label: "google_play_calls_total", dimensions: [("call", call.rawValue), ("outcome", outcome)], factory: metrics)
            .increment()
        let elapsed = ContinuousClock.now - started
        Timer(label: "google_play_call_duration_seconds", dimensions: [("call", call.rawValue)], factory: metrics)
            .recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
    }

    // MARK: The access token

    /// A token fresh at now: the cached one, or one signing in gives (one sign-in at a time). With
    /// `replacing`, that token was refused: a new one, unless another caller already got one.
    func accessToken(replacing refused: AccessToken?) async throws(PlayCallFailure) -> AccessToken {
        let now = clock.now()
        let task = state.withLock { state -> Task<Result<AccessToken, PlayCallFailure>, Never>? in
            if let token = state.token, token.isFresh(at: now), token != refused { return nil }
            if let running = state.signingIn { return running }
            let task = Task { [self] in await signIn() }
            state.signingIn = task
            return task
        }
        guard let task else {
            if let token = state.withLock({ $0.token }) { return token }
            return try await accessToken(replacing: refused)
        }
        let result = await task.value
        state.withLock { state in
            if state.signingIn == task { state.signingIn = nil }
            if case .success(let token) = result { state.token = token }
        }
        return try result.get()
    }

    private func signIn() async -> Result<AccessToken, PlayCallFailure> {
        let now = clock.now()
        let assertion: String
        do { assertion = try key.assertion(now: now) } catch { return .failure(.credentials(error.description)) }
        let started = ContinuousClock.now
        let result = await transport.send(
            OutboundRequest(
                method: .post, url: key.tokenURI, body: Array(ServiceAccountKey.tokenRequestBody(assertion: assertion).utf8),
                contentType: "application/x-www-form-urlencoded", timeout: configuration.timeout))
        switch result {
        case .failure(let why):
            record(.signIn, "unavailable", since: started)
            return .failure(.unavailable(why, retryAfterSeconds: nil))
        case .response(let status, let body, let retryAfter):
            if status == 429 || status >= 500 {
                record(.signIn, "unavailable", since: started)
                return .failure(
                    .unavailable("the token endpoint answered HTTP \(status)", retryAfterSeconds: retryAfter.flatMap { Int($0) }))
            }
            do {
                let token = try AccessToken.granted(body, at: now)
                record(.signIn, "ok", since: started)
                return .success(token)
            } catch {
                record(.signIn, "credentials", since: started)
                return .failure(.credentials(error.description))
            }
        }
    }
}
