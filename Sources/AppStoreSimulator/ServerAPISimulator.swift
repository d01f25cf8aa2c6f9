package import AppStore
package import Crypto
import FoundationEssentials
import HTTPServer
package import JSON
import SwiftASN1
import Synchronization
@_spi(CMS) import X509

/// The simulator's App Store Server API (Docs/apple-protocols.md §4), under
/// `/serverapi/production` and `/serverapi/sandbox`: it checks every request's JWT against the
/// configured public key (header and every claim), answers from the same scripted purchases as
/// verifyReceipt, signs every payload with Apple's test PKI (``SimulatorPKI``), pages history 20 at
/// a time, answers 429 with `Retry-After` when driven harder than its limit, and keeps the V2
/// notifications it has "sent" for Get Notification History.
package final class ServerAPISimulator: Sendable {
    /// The App Store id of the simulator's app: production data it signs names it.
    package static let appAppleID: Int64 = 1_234_567_890

    /// The public half of the In-App Purchase key receiptd signs with, and its ids.
    package struct Key: Sendable {
        package var keyID: String
        package var issuerID: String
        package var publicKey: P256.Signing.PublicKey

        package init(keyID: String, issuerID: String, publicKey: P256.Signing.PublicKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.publicKey = publicKey
        }

        /// The public half of the key receiptd signs with.
        package init(_ credentials: ServerAPIToken.Credentials) {
            self.init(keyID: credentials.keyID, issuerID: credentials.issuerID, publicKey: credentials.key.publicKey)
        }
    }

    let bundleID: String
    /// nil: every call is refused with 401 (no key configured).
    let key: Key?
    /// Other apps' keys (other App Store Connect accounts), by bundle id.
    let otherKeys: [String: Key]
    /// Requests a second above which the answer is 429.
    let requestsPerSecond: Int
    let pageSize: Int
    private let clock: @Sendable () -> Int64
    private let window = Mutex<(second: Int64, count: Int)>((0, 0))
    /// Notifications "sent", oldest first: (signedDate, environment, signedPayload).
    private let sent = Mutex<[(Int64, String, String)]>([])
    /// Test notification tokens → their signed payload.
    private let tests = Mutex<[String: String]>([:])
    /// Days added to a subscription's expiry by Extend a Subscription Renewal Date, per original id
    /// (verifyReceipt's answers carry them too).
    private let extensions = Mutex<[String: Int64]>([:])
    /// Extend Renewal Dates for All Active Subscribers requests, by request identifier.
    private let massExtensions = Mutex<[String: MassExtension]>([:])
    let massExtensionMs: Int64
    /// Milliseconds added to a subscription's expiry in this API's answers only (``skew(originalTransactionID:byMs:)``).
    private let skews = Mutex<[String: Int64]>([:])
    /// Send Consumption Information bodies received, oldest first.
    private let consumptions = Mutex<[(transactionID: String, body: JSONValue)]>([])
    private let finishes = Mutex<[String]>([])
    /// Set App Account Token: each original transaction's token, as Apple keeps it.
    private let accountTokens = Mutex<[String: String]>([:])
    /// The latest request targets as they arrived (path and query, after the environment's prefix
    /// was routed), oldest first: what receiptd really asked. Bounded: `receiptd simulate` runs long.
    private let targets = Mutex<[String]>([])
    static let keptTargets = 1_000
    private let counter = Atomic<Int>(0)
    private let refusedForRate = Atomic<Int>(0)

    /// Drills for shadow mode: from now on this API states the subscription's expiry moved by `ms`,
    /// while verifyReceipt does not: a planted difference between the two.
    package func skew(originalTransactionID: String, byMs ms: Int64) {
        skews.withLock { $0[originalTransactionID, default: 0] += ms }
    }

    /// The Send Consumption Information bodies received so far, oldest first.
    package var consumptionAnswers: [(transactionID: String, body: JSONValue)] { consumptions.withLock { $0 } }
    /// The tokens set through Set App Account Token, by original transaction.
    package var appAccountTokens: [String: String] { accountTokens.withLock { $0 } }
    /// The transactions finished through Finish Transaction, in order (once each, as Apple keeps them).
    package var finishedTransactions: [String] { finishes.withLock { $0 } }

    /// The latest ``keptTargets`` request targets as they arrived, oldest first.
    package var requestTargets: [String] { targets.withLock { $0 } }

    /// Requests answered 429 so far.
    package var throttledCount: Int { refusedForRate.load(ordering: .relaxed) }

    init(
        bundleID: String, key: Key?, otherKeys: [String: Key] = [:], requestsPerSecond: Int, pageSize: Int,
        massExtensionMs: Int64 = 0, clock: @escaping @Sendable () -> Int64
    ) {
        self.otherKeys = otherKeys
        self.massExtensionMs = massExtensionMs
        self.bundleID = bundleID
        self.key = key
        self.requestsPerSecond = requestsPerSecond
        self.pageSize = pageSize
        self.clock = clock
    }

    /// A request's answer. `purchases` finds the scripted receipt answer holding a transaction id
    /// (original or not) in an environment; nil when the id is unknown there. `everyPurchase`
    /// gives every scripted receipt answer handed out, in an environment (for mass extensions).
    func answer(
        _ request: HTTPRequest, path: Substring, environment: String, purchases: (String, String) -> JSONValue?,
        everyPurchase: (String) -> [JSONValue] = { _ in [] }
    ) -> HTTPResponse {
        targets.withLock {
            $0.append(request.target)
            if $0.count > Self.keptTargets { $0.removeFirst($0.count - Self.keptTargets) }
        }
        let now = clock()
        guard authorized(request.headers[first: "Authorization"], now: now) else { return HTTPResponse(status: .unauthorized) }
        if let retryAfter = throttled(now: now) {
            refusedForRate.add(1, ordering: .relaxed)
            return Self.error(429, 4_290_000, "Rate limit exceeded.", headers: ["Retry-After": String(retryAfter)])
        }
        let parts = path.split(separator: "/").map(String.init)  // inApps, v1, …
        let query = Self.query(request.target)
        func script(_ id: String) -> ServerAPIScript? {
            purchases(id, environment).map {
                ServerAPIScript(receipt: extended($0), bundleID: bundleID, environment: environment, signedDate: now)
            }
        }
        func sign(_ payload: JSONValue) -> JSONValue { .string(try! SimulatorPKI.signer.sign(payload)) }
        switch (request.method, parts.count >= 3 ? Array(parts[1...2]) : []) {
        case (.get, ["v2", "history"]), (.get, ["v2", "refund"]):
            let refunds = parts[2] == "refund"
            guard let id = parts.last, let s = script(id) else { return Self.notFound }
            var all = s.transactions
            if refunds { all = all.filter { $0["revocationDate"] != nil } }
            let start = query["revision"].flatMap(Int.init) ?? 0
            let page = Array(all.dropFirst(start).prefix(pageSize))
            let hasMore = start + page.count < all.count
            var body: [Identifier: JSONValue] = [
                "revision": .string(String(start + page.count)), "hasMore": .bool(hasMore),
                "signedTransactions": .array(page.map(sign)),
            ]
            if !refunds {
                body["bundleId"] = .string(bundleID)
                body["environment"] = .string(environment)
                body["appAppleId"] = .int(Self.appAppleID)
            }
            return Self.json(.object(body))
        case (.get, ["v1", "subscriptions"]) where parts.count == 7 && parts[3] == "extend" && parts[4] == "mass":
            guard let mass = massExtensions.withLock({ $0[parts[6]] }), mass.productID == parts[5],
                mass.environment == environment
            else { return Self.error(404, 4_040_000, "Not found.") }
            let complete = now >= mass.completeAt
            var body: [Identifier: JSONValue] = ["requestIdentifier": .string(parts[6]), "complete": .bool(complete)]
            if complete {
                body["completeDate"] = .int(mass.completeAt)
                body["succeededCount"] = .int(Int64(mass.extended.count))
                body["failedCount"] = .int(0)
            }
            return Self.json(.object(body))
        case (.get, ["v1", "subscriptions"]):
            guard let id = parts.last, let s = script(id) else { return Self.notFound }
            let renewals = s.renewals
            var groups: [String: [JSONValue]] = [:]
            var order: [String] = []
            let subscriptions = s.transactions.filter { $0["expiresDate"] != nil }
            let originals = subscriptions.reduce(into: [String]()) { list, t in
                let o = t["originalTransactionId"]?.string ?? ""
                if !list.contains(o) { list.append(o) }
            }
            for original in originals {
                guard let last = subscriptions.last(where: { $0["originalTransactionId"]?.string == original }) else { continue }
                let renewal = renewals.first { $0["originalTransactionId"]?.string == original }
                let group = last["subscriptionGroupIdentifier"]?.string ?? ""
                if groups[group] == nil { order.append(group) }
                var item: [Identifier: JSONValue] = [
                    "status": .int(ServerAPIScript.status(last: last, renewal: renewal, now: now)),
                    "originalTransactionId": .string(original), "signedTransactionInfo": sign(last),
                ]
                if let renewal { item["signedRenewalInfo"] = sign(renewal) }
                groups[group, default: []].append(.object(item))
            }
            return Self.json(
                .object([
                    "environment": .string(environment), "bundleId": .string(bundleID), "appAppleId": .int(Self.appAppleID),
                    "data": .array(
                        order.map {
                            .object(["subscriptionGroupIdentifier": .string($0), "lastTransactions": .array(groups[$0]!)])
                        }),
                ]))
        case (.get, ["v1", "transactions"]) where parts.count == 5 && parts[3] == "appTransactions":
            // The customer's AppTransaction: first got at version 2.0 when their first purchase is
            // over a year old, else 3.1 (the sandbox's always 1.0, as Apple's).
            guard let id = parts.last, let s = script(id), let app = appTransaction(s, now: now) else { return Self.notFound }
            return Self.json(.object(["signedAppTransactionInfo": sign(app)]))
        case (.get, ["v1", "transactions"]):
            guard let id = parts.last, let s = script(id),
                let t = s.transactions.first(where: { $0["transactionId"]?.string == id }) ?? s.transactions.last
            else { return Self.notFound }
            return Self.json(.object(["signedTransactionInfo": sign(t)]))
        case (.get, ["v1", "lookup"]):
            // Order ids are `M` and the original transaction id.
            guard let order = parts.last, order.hasPrefix("M"), let s = script(String(order.dropFirst())) else {
                return Self.json(.object(["status": .int(1), "signedTransactions": .array([])]))
            }
            return Self.json(.object(["status": .int(0), "signedTransactions": .array(s.transactions.map(sign))]))
        case (.post, ["v1", "subscriptions"]) where parts.count == 5 && parts[3] == "extend" && parts[4] == "mass":
            return massExtend(request.body, environment: environment, now: now, everyPurchase: everyPurchase)
        case (.put, ["v1", "subscriptions"]) where parts.count == 5 && parts[3] == "extend":
            guard let body = try? JSONValue.parse(request.body), let days = body["extendByDays"]?.int64, (1...90).contains(days),
                body["extendReasonCode"]?.int64 != nil, body["requestIdentifier"]?.string != nil
            else { return Self.error(400, 4_000_000, "Invalid request.") }
            let original = parts[4]
            guard let s = script(original), let last = s.transactions.last(where: { $0["expiresDate"] != nil }) else {
                return Self.notFound
            }
            extensions.withLock { $0[original, default: 0] += days }
            return Self.json(
                .object([
                    "originalTransactionId": .string(original), "webOrderLineItemId": last["webOrderLineItemId"] ?? .null,
                    "success": .bool(true), "effectiveDate": .int((last["expiresDate"]?.int64 ?? now) + days * 86_400_000),
                ]))
        case (.put, ["v2", "transactions"]) where parts.count == 5 && parts[3] == "consumption":
            guard let body = try? JSONValue.parse(request.body), body["customerConsented"]?.bool == true,
                body["sampleContentProvided"]?.bool != nil, body["deliveryStatus"]?.string != nil
            else { return Self.error(400, 4_000_000, "Invalid request.") }
            guard script(parts[4]) != nil else { return Self.notFound }
            consumptions.withLock { $0.append((parts[4], body)) }
            return HTTPResponse(status: .accepted)
        case (.put, ["v1", "transactions"]) where parts.count == 5 && parts[4] == "appAccountToken":
            // Set App Account Token: a UUID for one of the scripted purchases; its transactions carry it from now on.
            guard let body = try? JSONValue.parse(request.body), let token = body["appAccountToken"]?.string,
                UUID(uuidString: token) != nil
            else { return Self.error(400, 4_000_033, "Invalid app account token.") }
            guard script(parts[3]) != nil else { return Self.notFound }
            accountTokens.withLock { $0[parts[3]] = token.lowercased() }
            return HTTPResponse(status: .ok)
        case (.post, ["v1", "transactions"]) where parts.count == 5 && parts[4] == "finish":
            // Finish Transaction: the transaction must be one of the scripted purchases.
            guard script(parts[3]) != nil else { return Self.notFound }
            finishes.withLock { if !$0.contains(parts[3]) { $0.append(parts[3]) } }
            return HTTPResponse(status: .ok)
        case (.post, ["v1", "notifications"]) where parts.last == "history":
            guard let body = try? JSONValue.parse(request.body), let start = body["startDate"]?.int64,
                let end = body["endDate"]?.int64
            else { return Self.error(400, 4_000_000, "Invalid request.") }
            let matching = sent.withLock { $0 }.filter { $0.0 >= start && $0.0 < end && $0.1 == environment }
            let offset = query["paginationToken"].flatMap(Int.init) ?? 0
            let page = Array(matching.dropFirst(offset).prefix(pageSize))
            let more = offset + page.count < matching.count
            var out: [Identifier: JSONValue] = [
                "hasMore": .bool(more),
                "notificationHistory": .array(
                    page.map {
                        .object([
                            "signedPayload": .string($0.2),
                            "sendAttempts": .array([
                                .object(["attemptDate": .int($0.0), "sendAttemptResult": .string("NO_RESPONSE")])
                            ]),
                        ])
                    }),
            ]
            if more { out["paginationToken"] = .string(String(offset + page.count)) }
            return Self.json(.object(out))
        case (.post, ["v1", "notifications"]) where parts.last == "test":
            let token = "test-\(counter.add(1, ordering: .relaxed).newValue)"
            let payload = notification(type: "TEST", subtype: nil, environment: environment, data: [:], now: now)
            tests.withLock { $0[token] = payload }
            return Self.json(.object(["testNotificationToken": .string(token)]))
        case (.get, ["v1", "notifications"]) where parts.count == 5 && parts[3] == "test":
            guard let payload = tests.withLock({ $0[parts[4]] }) else {
                return Self.error(404, 4_040_008, "Test notification not found.")
            }
            return Self.json(
                .object([
                    "signedPayload": .string(payload),
                    "sendAttempts": .array([.object(["attemptDate": .int(now), "sendAttemptResult": .string("SUCCESS")])]),
                ]))
        default:
            return Self.error(404, 4_040_000, "Not found.")
        }
    }

    /// One mass extension as Apple holds it: what was asked, and which subscriptions it extended.
    struct MassExtension: Sendable {
        var productID: String
        var environment: String
        var days: Int64
        var storefronts: [String]
        var completeAt: Int64
        var extended: [String]
    }

    /// Extend Renewal Dates for All Active Subscribers: every scripted subscription to the product
    /// active now (in one of the storefronts, when named; the simulator's are all `USA`) is
    /// extended at once, and the request reports complete `massExtensionMs` later. The same
    /// `requestIdentifier` again is the same request: nothing is extended twice.
    func massExtend(_ raw: [UInt8], environment: String, now: Int64, everyPurchase: (String) -> [JSONValue]) -> HTTPResponse {
        guard let body = try? JSONValue.parse(raw), let product = body["productId"]?.string,
            let days = body["extendByDays"]?.int64, (1...90).contains(days),
            let reason = body["extendReasonCode"]?.int64, (0...3).contains(reason),
            let id = body["requestIdentifier"]?.string, (1...128).contains(id.utf8.count)
        else { return Self.error(400, 4_000_000, "Invalid request.") }
        var storefronts: [String] = []
        switch body["storefrontCountryCodes"] {
        case nil: break
        case .array(let codes)?:
            storefronts = codes.compactMap(\.string)
            guard storefronts.count == codes.count else { return Self.error(400, 4_000_000, "Invalid request.") }
        default: return Self.error(400, 4_000_000, "Invalid request.")
        }
        if let known = massExtensions.withLock({ $0[id] }) {
            guard known.productID == product, known.environment == environment else {
                return Self.error(400, 4_000_000, "Invalid request.")
            }
            return Self.json(.object(["requestIdentifier": .string(id)]))
        }
        // Each subscription as its newest transaction states it: of the product, running, not upgraded away.
        var reached: [String] = []
        for receipt in everyPurchase(environment) {
            let s = ServerAPIScript(receipt: extended(receipt), bundleID: bundleID, environment: environment, signedDate: now)
            var newest: [String: JSONValue] = [:]
            for t in s.transactions where t["expiresDate"] != nil {
                guard let original = t["originalTransactionId"]?.string else { continue }
                if (t["purchaseDate"]?.int64 ?? 0) >= (newest[original]?["purchaseDate"]?.int64 ?? .min) { newest[original] = t }
            }
            for (original, t) in newest.sorted(by: { $0.key < $1.key })
            where t["productId"]?.string == product && (t["expiresDate"]?.int64 ?? 0) > now && t["revocationDate"] == nil
                && (storefronts.isEmpty || storefronts.contains(t["storefront"]?.string ?? "")) && !reached.contains(original)
            {
                reached.append(original)
            }
        }
        extensions.withLock { for original in reached { $0[original, default: 0] += days } }
        massExtensions.withLock {
            $0[id] = MassExtension(
                productID: product, environment: environment, days: days, storefronts: storefronts,
                completeAt: now + massExtensionMs, extended: reached)
        }
        return Self.json(.object(["requestIdentifier": .string(id)]))
    }

    /// The `RENEWAL_EXTENSION`/`SUMMARY` notification of a mass extension, signed and kept in the
    /// history as Apple sends it once the request completes; nil when the request is unknown.
    package func massExtensionSummary(requestID: String) -> String? {
        guard let mass = massExtensions.withLock({ $0[requestID] }) else { return nil }
        var summary: [Identifier: JSONValue] = [
            "requestIdentifier": .string(requestID), "productId": .string(mass.productID),
            "storefrontCountryCodes": .array(mass.storefronts.map(JSONValue.string)),
            "succeededCount": .int(Int64(mass.extended.count)), "failedCount": .int(0),
        ]
        summary["bundleId"] = .string(bundleID)
        return notification(
            type: "RENEWAL_EXTENSION", subtype: "SUMMARY", environment: mass.environment, data: summary,
            now: max(clock(), mass.completeAt))
    }

    /// The subscriptions a mass extension extended, by original transaction id.
    package func massExtended(requestID: String) -> [String]? { massExtensions.withLock { $0[requestID]?.extended } }

    /// A receipt answer with the extensions granted so far added to its subscriptions' expiries,
    /// and with `skewed`, this API's planted skews.
    func extended(_ receipt: JSONValue, skewed: Bool = true) -> JSONValue {
        var shift = extensions.withLock { $0 }.mapValues { $0 * 86_400_000 }
        if skewed { shift.merge(skews.withLock { $0 }, uniquingKeysWith: +) }
        let tokens = accountTokens.withLock { $0 }
        let receipt = tokens.isEmpty ? receipt : Self.tokened(receipt, tokens)
        guard !shift.isEmpty, case .object(var o) = receipt, case .array(let latest)? = o["latest_receipt_info"] else {
            return receipt
        }
        o["latest_receipt_info"] = .array(
            latest.map { t in
                guard case .object(var f) = t, let ms = shift[f["original_transaction_id"]?.string ?? ""],
                    let expires = f["expires_date_ms"]?.int64
                else { return t }
                f["expires_date_ms"] = .string(String(expires + ms))
                return .object(f)
            })
        return .object(o)
    }

    /// `receipt` with each transaction of a purchase whose token was set carrying it
    /// (`app_account_token`, as verifyReceipt names it; ``ServerAPIScript`` maps it).
    static func tokened(_ receipt: JSONValue, _ tokens: [String: String]) -> JSONValue {
        func apply(_ list: JSONValue?) -> JSONValue? {
            guard case .array(let items)? = list else { return list }
            return .array(
                items.map { item in
                    guard case .object(var f) = item, let token = tokens[f["original_transaction_id"]?.string ?? ""] else {
                        return item
                    }
                    f["app_account_token"] = .string(token)
                    return .object(f)
                })
        }
        guard case .object(var o) = receipt else { return receipt }
        if o["latest_receipt_info"] != nil { o["latest_receipt_info"] = apply(o["latest_receipt_info"]) }
        if case .object(var inner)? = o["receipt"] {
            inner["in_app"] = apply(inner["in_app"])
            o["receipt"] = .object(inner)
        }
        return .object(o)
    }

    /// The customer's AppTransaction (unsigned): first got at version 2.0 when their first
    /// purchase is over a year old, else 3.1 (the sandbox's always 1.0, as Apple's); its
    /// `appTransactionId` is their signed transactions' (``ServerAPIScript/appTransactionID``).
    func appTransaction(_ s: ServerAPIScript, now: Int64) -> JSONValue? {
        guard let first = s.transactions.first, let appTransactionID = s.appTransactionID else { return nil }
        let firstPurchase = first["originalPurchaseDate"]?.int64 ?? first["purchaseDate"]?.int64 ?? now
        var app: [Identifier: JSONValue] = [
            "bundleId": .string(bundleID), "receiptType": .string(s.environment), "appTransactionId": .string(appTransactionID),
            "applicationVersion": .string("3.4"), "originalPurchaseDate": .int(firstPurchase),
            "originalApplicationVersion": .string(
                s.environment == "Sandbox" ? "1.0" : now - firstPurchase > 365 * 86_400_000 ? "2.0" : "3.1"),
            "originalPlatform": .string("iOS"), "receiptCreationDate": .int(now), "signedDate": .int(now),
        ]
        if s.environment == "Production" { app["appAppleId"] = .int(Self.appAppleID) }
        return .object(app)
    }

    /// Signs a V2 notification about a scripted purchase and keeps it in the history; the signed
    /// payload is returned (post it to receiptd, or don't: a missed notification). `data` goes
    /// under `appData` for `RESCIND_CONSENT`, as Apple sends it.
    func notification(
        type: String, subtype: String?, environment: String, data: [Identifier: JSONValue], now: Int64
    ) -> String {
        var body = data
        body["bundleId"] = .string(bundleID)
        body["environment"] = .string(environment)
        if environment == "Production" { body["appAppleId"] = .int(Self.appAppleID) }
        var payload: [Identifier: JSONValue] = [
            "notificationType": .string(type), "notificationUUID": .string(UUID().uuidString.lowercased()),
            "version": .string("2.0"), "signedDate": .int(now),
            type == "RESCIND_CONSENT" ? "appData" : subtype == "SUMMARY" ? "summary" : "data": .object(body),
        ]
        if let subtype { payload["subtype"] = .string(subtype) }
        let signed = try! SimulatorPKI.signer.sign(.object(payload))
        if type != "TEST" { sent.withLock { $0.append((now, environment, signed)) } }
        return signed
    }

    /// Apple's Retention Messaging real-time request body about a purchase, signed with the test PKI.
    func realtimeRequest(
        originalTransactionID: String, productID: String, userLocale: String, requestIdentifier: UUID, environment: String,
        now: Int64
    ) -> [UInt8] {
        var payload: [Identifier: JSONValue] = [
            "originalTransactionId": .string(originalTransactionID), "productId": .string(productID),
            "userLocale": .string(userLocale), "requestIdentifier": .string(requestIdentifier.uuidString.lowercased()),
            "signedDate": .int(now), "environment": .string(environment),
        ]
        if environment == "Production" { payload["appAppleId"] = .int(Self.appAppleID) }
        return JSONValue.object(["signedPayload": .string(try! SimulatorPKI.signer.sign(.object(payload)))]).jsonBytes
    }

    /// Signs the transaction and renewal of `script` into a notification's `data`.
    func notificationData(_ script: ServerAPIScript, transactionID: String) -> [Identifier: JSONValue] {
        let transactions = script.transactions
        guard let t = transactions.first(where: { $0["transactionId"]?.string == transactionID }) ?? transactions.last else {
            return [:]
        }
        var data: [Identifier: JSONValue] = ["signedTransactionInfo": .string(try! SimulatorPKI.signer.sign(t))]
        if let renewal = script.renewals.first(where: { $0["originalTransactionId"] == t["originalTransactionId"] }) {
            data["signedRenewalInfo"] = .string(try! SimulatorPKI.signer.sign(renewal))
        }
        if t["expiresDate"] != nil {
            data["status"] = .int(ServerAPIScript.status(last: t, renewal: nil, now: script.signedDate) == 1 ? 1 : 2)
        }
        return data
    }

    // MARK: The rate limit

    /// nil when the request is within this second's allowance; else `Retry-After` (UNIX ms).
    private func throttled(now: Int64) -> Int64? {
        window.withLock { w in
            let second = now / 1000
            if w.second != second { w = (second, 0) }
            w.count += 1
            return w.count > requestsPerSecond ? (second + 1) * 1000 : nil
        }
    }
}
