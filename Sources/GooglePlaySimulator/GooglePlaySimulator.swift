package import Clocks
package import CryptoExtras
import Entitlements
import FoundationEssentials
package import GooglePlay
package import HTTPServer
import JSON
package import Logging
import Synchronization

/// A loopback stand-in for Google Play, for tests and offline development (Docs/google-play.md
/// "The simulator"), from Google's documented contract:
///
/// - `POST /token`: OAuth 2.0 for service accounts. The assertion must be an RS256 JWT signed by
///   the configured service account's key, issued by its address, for this endpoint, with the
///   Play Developer API's scope, issued within the last hour and not expired; anything else is
///   `400 invalid_grant`. The access token it grants lasts `tokenLifetime`.
/// - `/androidpublisher/v3/applications/{package}/purchases/…`: `subscriptionsv2/tokens/{t}`,
///   `productsv2/tokens/{t}`, `subscriptions|products/{product}/tokens/{t}:acknowledge`,
///   `products/{product}/tokens/{t}:consume`, each only with a granted, unexpired bearer token
///   (else 401) for a configured package (else 404). Tokens are scripted (``PlayScenario``).
/// - `GET /oauth2/v3/certs`: the simulated Pub/Sub's key, as Google serves its ID-token keys.
/// - `/control/google/…`: drills for the tests: a purchase's token, a refund (void), a signed
///   push of a notification, an outage.
package final class GooglePlaySimulator: HTTPResponder, Sendable {
    package struct Configuration: Sendable {
        package var packageNames: [String]
        /// The service account whose assertions `/token` accepts.
        package var clientEmail: String
        package var publicKey: _RSA.Signing.PublicKey
        /// How long a granted access token lasts.
        package var tokenLifetimeSeconds: Int64
        /// The token endpoint's own URL: an assertion's `aud` must name it.
        package var tokenURI: String
        /// The key the simulated Pub/Sub signs its pushes' OIDC tokens with (served as a JWKS at
        /// `/oauth2/v3/certs`); nil: the simulator pushes nothing.
        package var pushKey: _RSA.Signing.PrivateKey?
        /// The audience its pushes' tokens name.
        package var pushAudience: String
        /// Entries per page of the Voided Purchases API, at most (Google's own cap is 1,000).
        package var voidedPageSize = 1_000

        package init(
            packageNames: [String], clientEmail: String, publicKey: _RSA.Signing.PublicKey, tokenURI: String,
            tokenLifetimeSeconds: Int64 = 3_600, pushKey: _RSA.Signing.PrivateKey? = nil,
            pushAudience: String = GooglePlaySimulator.pushAudience
        ) {
            self.packageNames = packageNames
            self.clientEmail = clientEmail
            self.publicKey = publicKey
            self.tokenURI = tokenURI
            self.tokenLifetimeSeconds = tokenLifetimeSeconds
            self.pushKey = pushKey
            self.pushAudience = pushAudience
        }
    }

    /// What the simulator remembers of a token.
    struct Purchase {
        var anchor: Int64
        var acknowledged = false
        var consumed = false
        var voidedAt: Int64?
        /// When a pending one-time purchase's payment completed (``completePayment(_:)``).
        var paidAt: Int64?
    }

    struct State {
        var configuration: Configuration
        var purchases: [String: Purchase] = [:]
        /// Access tokens granted, with their expiry.
        var granted: [String: Int64] = [:]
        var grants = 0
        /// Google down (HTTP 503 to every API call) until this instant of the simulator's clock.
        var outageUntil: Int64?
        var calls: [String: Int] = [:]
        var pushes = 0
    }

    private let state: Mutex<State>
    private let clock: WallClock

    package init(configuration: Configuration, clock: WallClock = .system) {
        state = Mutex(State(configuration: configuration))
        self.clock = clock
    }

    /// Entries per page of the Voided Purchases API from now on (to drive clients through pages).
    package func setVoidedPageSize(_ size: Int) { state.withLock { $0.configuration.voidedPageSize = max(1, size) } }

    /// The token endpoint must know its own URL, which exists once the server listens.
    package func setTokenURI(_ uri: String) { state.withLock { $0.configuration.tokenURI = uri } }

    /// A purchase of `scenario` tagged `tag`: its token, known from now on.
    package func purchase(_ scenario: PlayScenario, tag: String) -> String {
        let token = scenario.token(tag: tag)
        let now = clock.now()
        state.withLock { s in
            _ = s.remember(token, now: now)
            if scenario == .upgraded { _ = s.remember(PlayScenario.replaced.token(tag: tag), now: now) }
        }
        return token
    }

    /// Google voids the purchase now (a refund or chargeback): it is revoked, and listed by the
    /// Voided Purchases API.
    package func void(_ token: String) { change(token) { $0.voidedAt = $1 } }

    /// A pending one-time purchase's payment completes now (cash paid at a shop, say): Google
    /// answers it PURCHASED, with its order, from now on.
    package func completePayment(_ token: String) { change(token) { $0.paidAt = $1 } }

    /// Something happens to a scripted token's purchase at the simulator's now.
    private func change(_ token: String, _ body: (inout Purchase, Int64) -> Void) {
        let now = clock.now()
        state.withLock { s in
            guard s.remember(token, now: now) else { return }
            body(&s.purchases[token]!, now)
        }
    }

    /// Google down for `milliseconds` of the simulator's clock (0 ends it): every API call 503.
    package func setOutage(milliseconds: Int64) {
        let now = clock.now()
        state.withLock { $0.outageUntil = milliseconds > 0 ? now + milliseconds : nil }
    }

    /// Whether Google has the purchase's acknowledgement, and its consumption.
    package func acknowledgement(of token: String) -> (acknowledged: Bool, consumed: Bool)? {
        state.withLock { s in s.purchases[token].map { ($0.acknowledged, $0.consumed) } }
    }

    /// A push of the real-time developer notification Google sends about `token`, as Cloud
    /// Pub/Sub delivers it: the `Authorization` header's value (an OIDC token signed with the push
    /// key for `audience`, or a stranger's / expired one when asked) and the body. `type`: a
    /// subscription's `notificationType` (default 4 PURCHASED), a one-time product's (default 1),
    /// or nil for a voided purchase when `voided`; Play Console's test notification when `test`.
    package func push(
        _ token: String, type: Int64? = nil, voided: Bool = false, test: Bool = false, messageID: String? = nil,
        audience: String? = nil,
        signedBy stranger: _RSA.Signing.PrivateKey? = nil, issuedAt: Int64? = nil
    ) -> (authorization: String, body: [UInt8])? {
        let now = clock.now()
        return state.withLock { s -> (String, [UInt8])? in
            guard let key = stranger ?? s.configuration.pushKey, let (scenario, _) = PlayScenario.parse(token),
                let package = s.configuration.packageNames.first
            else { return nil }
            s.pushes += 1
            _ = s.remember(token, now: now)
            var notification: [String: JSONValue] = [
                "version": .string("1.0"), "packageName": .string(package), "eventTimeMillis": .string(String(now)),
            ]
            if test {
                notification["testNotification"] = .object(strings: ["version": .string("1.0")])
            } else if voided {
                notification["voidedPurchaseNotification"] = .object(strings: [
                    "purchaseToken": .string(token), "orderId": .string(s.orderID(of: token) ?? ""),
                    "productType": .int(scenario.isSubscription ? 1 : 2), "refundType": .int(1),
                ])
            } else if scenario.isSubscription {
                notification["subscriptionNotification"] = .object(strings: [
                    "version": .string("1.0"), "notificationType": .int(type ?? 4), "purchaseToken": .string(token),
                ])
            } else {
                notification["oneTimeProductNotification"] = .object(strings: [
                    "version": .string("1.0"), "notificationType": .int(type ?? 1), "purchaseToken": .string(token),
                    "sku": .string(scenario.productID),
                ])
            }
            // Pub/Sub's `data` is standard base64.
            let data = Data(JSONValue.object(strings: notification).jsonBytes).base64EncodedString()
            let body = JSONValue.object(strings: [
                "message": .object(strings: [
                    "data": .string(data), "messageId": .string(messageID ?? "sim-\(s.pushes)-\(now)"),
                    "publishTime": .string(CivilTime.rfc3339(now)),
                ]),
                "subscription": .string("projects/simulator/subscriptions/play-rtdn"),
            ]).jsonBytes
            let iat = (issuedAt ?? now) / 1_000
            let claims = JSONValue.object(strings: [
                "iss": .string("https://accounts.google.com"), "aud": .string(audience ?? s.configuration.pushAudience),
                "email": .string(Self.pushAccount), "email_verified": .bool(true), "iat": .int(iat), "exp": .int(iat + 3_600),
                "sub": .string("1234567890"),
            ])
            let header = JSONValue.object(strings: [
                "alg": .string("RS256"), "kid": .string(Self.pushKeyID), "typ": .string("JWT"),
            ])
            let input = Base64URL.encode(header.jsonBytes) + "." + Base64URL.encode(claims.jsonBytes)
            guard let signature = try? key.signature(for: SHA256.hash(data: Array(input.utf8)), padding: .insecurePKCS1v1_5)
            else { return nil }
            return ("Bearer " + input + "." + Base64URL.encode(Array(signature.rawRepresentation)), body)
        }
    }

    /// Calls so far by kind (`token`, `subscriptionsv2`, `productsv2`, `acknowledge`, `consume`, `unauthorized`).
    package var calls: [String: Int] { state.withLock { $0.calls } }

    /// Every access token granted so far is refused from now on (Google revoking them).
    package func revokeAccessTokens() { state.withLock { $0.granted.removeAll() } }

    // MARK: HTTP

    package func handler(for request: HTTPRequest) -> HTTPHandler {
        .immediate { [self] request, _ in respond(request) }
    }

    func respond(_ request: HTTPRequest) -> HTTPResponse {
        let path = String(request.path)
        let now = clock.now()
        if request.method == .post && path == "/token" { return token(request.body, now: now) }
        if request.method == .get && path == "/oauth2/v3/certs" {
            guard let key = state.withLock({ $0.configuration.pushKey }) else {
                return Self.error(404, "NOT_FOUND", "no push key")
            }
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json"],
                body: SigningKeys.jwks([Self.pushKeyID: key.publicKey]))
        }
        if path.hasPrefix("/control/google/") { return control(request, path: path, now: now) }
        let prefix = "/androidpublisher/v3/applications/"
        guard path.hasPrefix(prefix) else { return Self.error(404, "NOT_FOUND", "no such endpoint") }
        return state.withLock { s in
            if let until = s.outageUntil, now < until { return Self.error(503, "UNAVAILABLE", "outage drill") }
            guard let bearer = request.headers[first: "Authorization"], bearer.hasPrefix("Bearer "),
                let expires = s.granted[String(bearer.dropFirst(7))], now < expires
            else {
                s.calls["unauthorized", default: 0] += 1
                return Self.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
            }
            let segments = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard segments.count >= 3, s.configuration.packageNames.contains(segments[0]), segments[1] == "purchases" else {
                return Self.error(
                    404, "NOT_FOUND", "No application was found for the given package name.", reason: "applicationNotFound")
            }
            if request.method == .get && segments.count == 3 && segments[2] == "voidedpurchases" {
                return s.voided(query: request.query.map(String.init) ?? "", package: segments[0])
            }
            return s.api(request.method, Array(segments[2...]), now: now)
        }
    }

    /// `POST /token`: an access token for a good assertion.
    func token(_ body: [UInt8], now: Int64) -> HTTPResponse {
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { form[String(kv[0])] = Self.percentDecoded(kv[1]) }
        }
        return state.withLock { s in
            s.calls["token", default: 0] += 1
            guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"] else {
                return Self.oauthError("unsupported_grant_type")
            }
            guard let problem = s.configuration.problem(with: assertion, now: now) else {
                s.grants += 1
                let token = "ya29.simulated-\(s.grants)-\(now)"
                s.granted[token] = now + s.configuration.tokenLifetimeSeconds * 1_000
                return HTTPResponse(
                    status: .ok, headers: ["Content-Type": "application/json"],
                    body: JSONValue.object(strings: [
                        "access_token": .string(token), "expires_in": .int(s.configuration.tokenLifetimeSeconds),
                        "token_type": .string("Bearer"),
                    ]).jsonBytes)
            }
            return Self.oauthError("invalid_grant", description: problem)
        }
    }

    func control(_ request: HTTPRequest, path: String, now: Int64) -> HTTPResponse {
        let body = (try? JSONValue.parse(request.body)) ?? .null
        switch (request.method, path) {
        case (.post, "/control/google/purchase"):
            // `{"scenario": "active", "tag": "u1"}` → `{"purchase_token": …}`.
            guard let name = body["scenario"]?.string, let scenario = PlayScenario(rawValue: name),
                let tag = body["tag"]?.string ?? Optional("0"), PlayIdentifier.isValid(tag, as: .productID)
            else { return Self.error(400, "INVALID_ARGUMENT", "send {\"scenario\": NAME, \"tag\": TEXT}") }
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json"],
                body: JSONValue.object(strings: ["purchase_token": .string(purchase(scenario, tag: tag))]).jsonBytes)
        case (.post, "/control/google/void"):
            guard let token = body["purchase_token"]?.string, PlayScenario.parse(token) != nil else {
                return Self.error(400, "INVALID_ARGUMENT", "send {\"purchase_token\": TOKEN}")
            }
            void(token)
            return HTTPResponse(status: .noContent)
        case (.post, "/control/google/push"):
            // `{"purchase_token", "notification_type"?, "voided"?}` → what Pub/Sub would push to
            // receiptd: `{"authorization", "body"}`, to send on to POST /v1/notifications/google.
            guard let token = body["purchase_token"]?.string, PlayScenario.parse(token) != nil,
                let push = push(token, type: body["notification_type"]?.int64, voided: body["voided"]?.bool ?? false),
                let pushed = try? JSONValue.parse(push.body)
            else {
                return Self.error(400, "INVALID_ARGUMENT", "send {\"purchase_token\": TOKEN} (the simulator pushes with its key)")
            }
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json"],
                body: JSONValue.object(strings: ["authorization": .string(push.authorization), "body": pushed]).jsonBytes)
        case (.post, "/control/google/outage"):
            guard let seconds = body["seconds"]?.int64, (0...86_400).contains(seconds) else {
                return Self.error(400, "INVALID_ARGUMENT", "send {\"seconds\": N}, 0 to 86400")
            }
            setOutage(milliseconds: seconds * 1_000)
            return HTTPResponse(status: .noContent)
        default:
            return Self.error(404, "NOT_FOUND", "no such control")
        }
    }

    /// A form value's bytes, `%XX` and `+` decoded (application/x-www-form-urlencoded); nil when malformed.
    static func percentDecoded(_ text: Substring) -> String? {
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let b = bytes.next() {
            switch b {
            case UInt8(ascii: "+"): out.append(0x20)
            case UInt8(ascii: "%"):
                guard let h = bytes.next(), let l = bytes.next(),
                    let v = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16)
                else { return nil }
                out.append(v)
            default: out.append(b)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    static func error(_ code: Int, _ status: String, _ message: String, reason: String? = nil) -> HTTPResponse {
        var error: [String: JSONValue] = ["code": .int(code), "message": .string(message), "status": .string(status)]
        if let reason {
            error["errors"] = .array([.object(strings: ["reason": .string(reason), "message": .string(message)])])
        }
        return HTTPResponse(
            status: HTTPStatus(code: code), headers: ["Content-Type": "application/json"],
            body: JSONValue.object(strings: ["error": .object(strings: error)]).jsonBytes)
    }

    static func oauthError(_ code: String, description: String? = nil) -> HTTPResponse {
        var body: [String: JSONValue] = ["error": .string(code)]
        if let description { body["error_description"] = .string(description) }
        return HTTPResponse(
            status: .badRequest, headers: ["Content-Type": "application/json"], body: JSONValue.object(strings: body).jsonBytes)
    }

    // MARK: Serving

    /// A simulator being served, and the URLs to point receiptd at.
    package struct Served: Sendable {
        package let server: HTTPServer
        package let port: Int
        package let simulator: GooglePlaySimulator
        package let host: String
        package var apiBase: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
        package var tokenURI: String { apiBase + "/token" }

        package func stop() async {
            server.shutdown()
            await server.waitUntilStopped()
        }
    }

    /// The service account the simulator stands for when receiptd runs it (`googlePlay.simulator`).
    package static let serviceAccount = "receiptd@simulator.iam.gserviceaccount.com"
    /// The account its simulated Pub/Sub pushes as, and the audience and key id of their tokens.
    package static let pushAccount = "pubsub-push@simulator.iam.gserviceaccount.com"
    package static let pushAudience = "receiptd-simulator"
    package static let pushKeyID = "simulator-push"

    /// Starts a simulator for receiptd's `packages` that accepts `key`'s assertions, and the
    /// service account key receiptd signs in with (pointing at the simulator's token endpoint).
    package static func serve(
        packages: [String], key: _RSA.Signing.PrivateKey, pushKey: _RSA.Signing.PrivateKey? = nil, clock: WallClock = .system,
        logger: Logger
    ) throws -> (Served, ServiceAccountKey) {
        let served = try serve(
            configuration: .init(
                packageNames: packages, clientEmail: serviceAccount, publicKey: key.publicKey, tokenURI: "", pushKey: pushKey),
            clock: clock, logger: logger)
        let account = try ServiceAccountKey(
            json: ServiceAccountKey.keyFile(
                clientEmail: serviceAccount, privateKeyID: "simulator", privateKey: key, tokenURI: served.tokenURI))
        return (served, account)
    }

    /// Starts a simulator on `host`:`port` (a loopback address; port 0 picks a free one); its
    /// token URI is set to its own.
    package static func serve(
        configuration: Configuration, host: String = "127.0.0.1", port: Int = 0, clock: WallClock = .system, logger: Logger
    ) throws -> Served {
        let simulator = GooglePlaySimulator(configuration: configuration, clock: clock)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: host, port: port, eventLoops: 1, accessLog: false),
            responder: simulator, logger: logger)
        let served = Served(server: server, port: try server.start(), simulator: simulator, host: host)
        simulator.setTokenURI(served.tokenURI)
        return served
    }
}
