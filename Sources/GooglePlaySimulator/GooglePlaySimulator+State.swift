import Clocks
import CryptoExtras
import Entitlements
import FoundationEssentials
import GooglePlay
import HTTPServer
import JSON
import Logging
import Synchronization

// The simulator's state answering what needs more than one purchase (voided purchases, orders),
// and its check of a service account's assertion.

extension GooglePlaySimulator.State {
    /// The order a scripted token's purchase is paid by now (its latest).
    func orderID(of token: String) -> String? {
        guard let (scenario, tag) = PlayScenario.parse(token), let p = purchases[token] else { return nil }
        let script = PlayScript(scenario: scenario, tag: tag, anchor: p.anchor, now: p.anchor, acknowledged: false, voidedAt: nil)
        return script.orderID
    }

    /// `purchases.voidedpurchases.list`: the purchases voided in [`startTime`, `endTime`], oldest
    /// first, a page at a time (`token` is the next entry's index).
    mutating func voided(query: String, package: String) -> HTTPResponse {
        calls["voidedpurchases", default: 0] += 1
        var params: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { params[String(kv[0])] = GooglePlaySimulator.percentDecoded(kv[1]) }
        }
        guard let start = params["startTime"].flatMap({ Int64($0) }), let end = params["endTime"].flatMap({ Int64($0) }),
            start <= end
        else { return GooglePlaySimulator.error(400, "INVALID_ARGUMENT", "startTime and endTime are required") }
        let all = purchases.filter { _, p in p.voidedAt.map { $0 >= start && $0 <= end } ?? false }
            .sorted { ($0.value.voidedAt!, $0.key) < ($1.value.voidedAt!, $1.key) }
        let from = params["token"].flatMap { Int($0) } ?? 0
        let size = min(configuration.voidedPageSize, Int(params["maxResults"] ?? "1000") ?? 1_000)
        let page = all.dropFirst(from).prefix(size)
        var body: [String: JSONValue] = [
            "voidedPurchases": .array(
                page.map { token, p in
                    .object(strings: [
                        "kind": .string("androidpublisher#voidedPurchase"), "purchaseToken": .string(token),
                        "orderId": .string(orderID(of: token) ?? ""), "purchaseTimeMillis": .string(String(p.anchor)),
                        "voidedTimeMillis": .string(String(p.voidedAt!)), "voidedSource": .int(0), "voidedReason": .int(1),
                    ])
                })
        ]
        if from + page.count < all.count {
            body["tokenPagination"] = .object(strings: ["nextPageToken": .string(String(from + page.count))])
        }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json"], body: JSONValue.object(strings: body).jsonBytes)
    }

    /// Registers a scripted token; false for one the simulator does not know.
    mutating func remember(_ token: String, now: Int64) -> Bool {
        guard PlayScenario.parse(token) != nil else { return false }
        if purchases[token] == nil { purchases[token] = .init(anchor: now) }
        return true
    }

    /// One API call under `/purchases/`: `segments` after it.
    mutating func api(_ method: HTTPMethod, _ segments: [String], now: Int64) -> HTTPResponse {
        func notFound() -> HTTPResponse {
            GooglePlaySimulator.error(404, "NOT_FOUND", "The purchase token was not found.", reason: "purchaseTokenNotFound")
        }
        switch (method, segments.count, segments[0]) {
        case (.get, 3, "subscriptionsv2") where segments[1] == "tokens", (.get, 3, "productsv2") where segments[1] == "tokens":
            let token = segments[2]
            calls[segments[0], default: 0] += 1
            guard let (scenario, tag) = PlayScenario.parse(token), remember(token, now: now), let p = purchases[token]
            else { return notFound() }
            // A token of the other kind: Google answers 400, not 404 (issue 57), so a client
            // that only falls back on "not found" never finds a one-time product.
            guard scenario.isSubscription == (segments[0] == "subscriptionsv2") else {
                return GooglePlaySimulator.error(
                    400, "INVALID_ARGUMENT", "The purchase token does not match the product type.", reason: "invalidValue")
            }
            let script = PlayScript(
                scenario: scenario, tag: tag, anchor: p.anchor, now: now, acknowledged: p.acknowledged, voidedAt: p.voidedAt,
                paidAt: p.paidAt)
            let body = scenario.isSubscription ? script.subscription : script.product(consumed: p.consumed)
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body.jsonBytes)
        case (.post, 4, "subscriptions"), (.post, 4, "products"):
            // {product}/tokens/{token}:acknowledge | :consume
            guard segments[2] == "tokens", let colon = segments[3].lastIndex(of: ":") else { return notFound() }
            let token = String(segments[3][..<colon])
            let verb = String(segments[3][segments[3].index(after: colon)...])
            guard verb == "acknowledge" || (verb == "consume" && segments[0] == "products") else {
                return GooglePlaySimulator.error(404, "NOT_FOUND", "no such method")
            }
            calls[verb, default: 0] += 1
            guard let (scenario, _) = PlayScenario.parse(token), scenario.isSubscription == (segments[0] == "subscriptions"),
                purchases[token] != nil
            else { return notFound() }
            guard scenario.productID == segments[1] else {
                return GooglePlaySimulator.error(
                    400, "INVALID_ARGUMENT", "The product id does not match the purchase token.", reason: "productNotOwnedByUser")
            }
            guard scenario != .pending && scenario != .productPending else {
                return GooglePlaySimulator.error(
                    400, "FAILED_PRECONDITION", "The purchase is not in a valid state to perform the desired operation.",
                    reason: "invalidPurchaseState")
            }
            if verb == "consume" {
                purchases[token]?.consumed = true
                purchases[token]?.acknowledged = true
            } else {
                purchases[token]?.acknowledged = true
            }
            return HTTPResponse(status: .noContent)
        default:
            return GooglePlaySimulator.error(404, "NOT_FOUND", "no such method")
        }
    }
}

extension GooglePlaySimulator.Configuration {
    /// What is wrong with an assertion, or nil when `/token` grants it.
    func problem(with assertion: String, now: Int64) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0].utf8),
            let claimBytes = Base64URL.decode(parts[1].utf8),
            let signature = Base64URL.decode(parts[2].utf8), let header = try? JSONValue.parse(headerBytes),
            let claims = try? JSONValue.parse(claimBytes)
        else { return "the assertion is not a JWT" }
        guard header["alg"]?.string == "RS256" else { return "the assertion is not signed with RS256" }
        let input = Array((parts[0] + "." + parts[1]).utf8)
        guard
            publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: input),
                padding: .insecurePKCS1v1_5)
        else { return "Invalid JWT Signature." }
        guard claims["iss"]?.string == clientEmail else { return "the assertion's issuer is not the service account" }
        guard claims["aud"]?.string == tokenURI else { return "the assertion's audience is not this token endpoint" }
        guard (claims["scope"]?.string ?? "").split(separator: " ").contains(Substring(ServiceAccountKey.androidPublisherScope))
        else { return "the assertion does not ask for the androidpublisher scope" }
        guard let iat = claims["iat"]?.int64, let exp = claims["exp"]?.int64, exp > iat, exp - iat <= 3_600 else {
            return "the assertion's iat and exp are missing or more than an hour apart"
        }
        let seconds = now / 1_000
        guard iat <= seconds + 60, exp > seconds else {
            return "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe"
        }
        return nil
    }
}
