import AppStore
package import Clocks
package import FoundationEssentials
package import HTTPServer
import JSON
package import Logging
import Synchronization

/// A loopback stand-in for Apple's verifyReceipt (Docs/apple-protocols.md §1) and App Store Server
/// API (§4, ``ServerAPISimulator``), for tests and offline development: `POST
/// /production/verifyReceipt` and `POST /sandbox/verifyReceipt` answer the scripted `Scenario`
/// named by the receipt's content, with dates relative to when that receipt was first seen (so
/// re-posting it gets the same answer); `/serverapi/{production,sandbox}/inApps/…` answer about
/// the same purchases by transaction id. It honours the shared secret (21004 on mismatch) and can
/// add latency to every answer.
package final class AppStoreSimulator: HTTPResponder, Sendable {
    package struct Configuration: Sendable {
        package var bundleID: String
        /// The expected `password`; nil accepts any.
        package var sharedSecret: String?
        /// Added before every answer (e.g. 300 ms for benchmarks).
        package var latency: Duration
        /// The key whose JWTs the Server API accepts; nil: every Server API call is refused (401).
        package var serverAPIKey: ServerAPISimulator.Key?
        /// Server API requests a second above which the answer is 429 (Apple's own limit is 50
        /// per endpoint; the simulator's is one budget for all, to drive clients into it).
        package var serverAPIRequestsPerSecond: Int
        /// Transactions per page of history.
        package var serverAPIPageSize: Int
        /// How long a mass renewal-date extension takes to complete (Apple: hours or days).
        package var massExtensionDuration: Duration
        /// Apps of other App Store Connect accounts, each with its own shared secret and key:
        /// their receipts (``AppStoreSimulator/purchase(_:tag:bundleID:)``) need their secret, and
        /// a Server API token for them their key. The Server API answers about the main app's
        /// purchases only.
        package var otherApps: [OtherApp] = []

        package struct OtherApp: Sendable {
            package var bundleID: String
            package var sharedSecret: String?
            package var serverAPIKey: ServerAPISimulator.Key?

            package init(bundleID: String, sharedSecret: String?, serverAPIKey: ServerAPISimulator.Key?) {
                self.bundleID = bundleID
                self.sharedSecret = sharedSecret
                self.serverAPIKey = serverAPIKey
            }
        }

        /// The shared secret `bundleID`'s receipts need (nil: any is accepted).
        func sharedSecret(of bundleID: String) -> String? {
            bundleID == self.bundleID ? sharedSecret : otherApps.first { $0.bundleID == bundleID }?.sharedSecret
        }

        package init(
            bundleID: String = "com.example.app", sharedSecret: String? = nil, latency: Duration = .zero,
            serverAPIKey: ServerAPISimulator.Key? = nil, serverAPIRequestsPerSecond: Int = 10_000, serverAPIPageSize: Int = 20,
            massExtensionDuration: Duration = .seconds(30)
        ) {
            self.massExtensionDuration = massExtensionDuration
            self.bundleID = bundleID
            self.sharedSecret = sharedSecret
            self.latency = latency
            self.serverAPIKey = serverAPIKey
            self.serverAPIRequestsPerSecond = serverAPIRequestsPerSecond
            self.serverAPIPageSize = serverAPIPageSize
        }
    }

    package let configuration: Configuration
    private let clock: @Sendable () -> Int64
    private let calls = Mutex<[String: Int]>([:])
    /// Drills: Apple down (HTTP 503 to every verifyReceipt) until this monotonic instant.
    private let outage = Mutex<(until: ContinuousClock.Instant?, calls: Int, downCalls: Int)>((nil, 0, 0))
    /// When each receipt was first seen: its dates are relative to that moment, so posting the
    /// same receipt again gets the same answer.
    private let firstSeen = Mutex<[String: Int64]>([:])
    /// Every transaction id (and original id) the simulator has handed out → its receipt's content.
    private let purchases = Mutex<[String: String]>([:])
    /// The receipts of other apps than the main one: content → bundle id.
    private let contentApps = Mutex<[String: String]>([:])
    package let serverAPI: ServerAPISimulator

    /// `now` gives epoch milliseconds; injectable for tests.
    package init(configuration: Configuration, now: @escaping @Sendable () -> Int64 = AppStoreSimulator.systemNow) {
        self.configuration = configuration
        self.clock = now
        serverAPI = ServerAPISimulator(
            bundleID: configuration.bundleID, key: configuration.serverAPIKey,
            otherKeys: Dictionary(
                configuration.otherApps.compactMap { app in app.serverAPIKey.map { (app.bundleID, $0) } },
                uniquingKeysWith: { a, _ in a }),
            requestsPerSecond: configuration.serverAPIRequestsPerSecond, pageSize: configuration.serverAPIPageSize,
            massExtensionMs: configuration.massExtensionDuration.milliseconds, clock: now)
    }

    /// A purchase of `scenario` as a StoreKit 2 app has it after buying: its newest transaction id
    /// (what `POST /v1/receipts {"transaction_id"}` sends) and a PKCS#7 app receipt holding its
    /// transaction ids (what `receipt_data` sends in `server_api` mode). Known to both APIs from now on.
    /// `bundleID` names one of ``Configuration/otherApps`` (nil: the main app): its receipt then
    /// needs that app's shared secret, and verifyReceipt's answer names that app.
    package func purchase(_ scenario: Scenario, tag: String, bundleID: String? = nil) -> (
        transactionID: String, receiptData: String
    ) {
        let content = "\(scenario.rawValue):\(tag)"
        let app = bundleID ?? configuration.bundleID
        if app != configuration.bundleID { contentApps.withLock { $0[content] = app } }
        let environment = scenario == .sandboxOnly ? "Sandbox" : "Production"
        guard let body = script(content: content, environment: environment) else { return ("", "") }
        let transactions = ServerAPIScript(receipt: body, bundleID: app, environment: environment, signedDate: 0).transactions
        let ids = transactions.map { ($0["transactionId"]?.string ?? "", $0["originalTransactionId"]?.string ?? "") }
        return (
            ids.last?.0 ?? "", ServerAPISimulator.appReceipt(bundleID: app, transactions: ids.map { (id: $0.0, original: $0.1) })
        )
    }

    /// The app a receipt's content was bought in.
    private func app(of content: String) -> String { contentApps.withLock { $0[content] } ?? configuration.bundleID }

    /// A V2 notification about the purchase holding `transactionID`, signed with the test PKI and
    /// kept in the Server API's notification history; nil when the id is unknown. A
    /// `CONSUMPTION_REQUEST` states the customer's `reason` (Apple's `consumptionRequestReason`).
    package func notification(
        _ type: String, subtype: String? = nil, transactionID: String, reason: String = "UNINTENDED_PURCHASE"
    ) -> String? {
        guard let content = purchases.withLock({ $0[transactionID] }) else { return nil }
        let environment = content.hasPrefix(Scenario.sandboxOnly.rawValue + ":") ? "Sandbox" : "Production"
        guard let body = script(content: content, environment: environment) else { return nil }
        let now = clock()
        let s = ServerAPIScript(
            receipt: ServerAPISimulator.tokened(body, serverAPI.appAccountTokens), bundleID: configuration.bundleID,
            environment: environment, signedDate: now)
        // RESCIND_CONSENT names the customer by their signed AppTransaction, not a purchase.
        var data =
            type == "RESCIND_CONSENT"
            ? ["signedAppTransactionInfo": .string(try! SimulatorPKI.signer.sign(serverAPI.appTransaction(s, now: now) ?? .null))]
            : serverAPI.notificationData(s, transactionID: transactionID)
        if type == "CONSUMPTION_REQUEST" { data["consumptionRequestReason"] = .string(reason) }
        return serverAPI.notification(type: type, subtype: subtype, environment: environment, data: data, now: now)
    }

    /// The body Apple's Retention Messaging posts to the "Get Retention Message" endpoint while
    /// the customer holding `transactionID` views the subscription (`{"signedPayload"}`, a
    /// `DecodedRealtimeRequestBody` signed with the test PKI); nil when the id is unknown.
    package func realtimeRequest(transactionID: String, userLocale: String = "en-US", requestIdentifier: UUID = UUID())
        -> [UInt8]?
    {
        guard let content = purchases.withLock({ $0[transactionID] }) else { return nil }
        let environment = content.hasPrefix(Scenario.sandboxOnly.rawValue + ":") ? "Sandbox" : "Production"
        guard let body = script(content: content, environment: environment) else { return nil }
        let s = ServerAPIScript(receipt: body, bundleID: configuration.bundleID, environment: environment, signedDate: clock())
        guard let t = s.transactions.first(where: { $0["transactionId"]?.string == transactionID }) ?? s.transactions.last,
            let original = t["originalTransactionId"]?.string, let product = t["productId"]?.string
        else { return nil }
        return serverAPI.realtimeRequest(
            originalTransactionID: original, productID: product, userLocale: userLocale, requestIdentifier: requestIdentifier,
            environment: environment, now: clock())
    }

    /// The scripted answer (status 0) for a receipt's content in `environment`, its transaction
    /// ids registered; nil for scenarios that answer only an error status there.
    func script(content: String, environment: String) -> JSONValue? {
        let parts = content.split(separator: ":", maxSplits: 1)
        guard let name = parts.first, let scenario = Scenario(rawValue: String(name)) else { return nil }
        switch scenario {
        case .sandboxOnly where environment == "Production", .productionOnly where environment == "Sandbox": return nil
        case .malformed, .serverUnavailable, .notAuthenticated, .accountNotFound: return nil
        case .sandboxOnly: break
        default: if environment == "Sandbox" { return nil }
        }
        return scripted(scenario, content: content, environment: environment, receiptData: Scenario.receiptData(content))
    }

    /// `scenario`'s answer for the receipt `content` (`scenario:tag`), dated from when that
    /// content was first seen, its transaction ids registered for the Server API.
    private func scripted(_ scenario: Scenario, content: String, environment: String, receiptData: String) -> JSONValue {
        let parts = content.split(separator: ":", maxSplits: 1)
        let tag = parts.count > 1 ? String(parts[1]) : "0"
        let now = clock()
        let anchor = firstSeen.withLock { seen in
            if let t = seen[content] { return t }
            seen[content] = now
            return now
        }
        let body = ReceiptScript(scenario: scenario, tag: tag, bundleID: app(of: content), now: anchor, asOf: now)
            .response(environment: environment, receiptData: receiptData)
        register(body, content: content)
        return body
    }

    private func register(_ body: JSONValue, content: String) {
        let all = (body["latest_receipt_info"]?.array ?? []) + (body["receipt"]?["in_app"]?.array ?? [])
        purchases.withLock { known in
            for t in all {
                for key in ["transaction_id", "original_transaction_id"] {
                    if let id = t[key]?.string { known[id] = content }
                }
            }
        }
    }

    package static let systemNow: @Sendable () -> Int64 = { WallClock.system.now() }

    /// A simulator being served: its HTTP server (a service to run in a group, or stop with
    /// ``stop()``) and the two verifyReceipt URLs to point a client at.
    package struct Served: Sendable {
        package let server: HTTPServer
        package let port: Int
        package var productionURL: String { "http://127.0.0.1:\(port)/production/verifyReceipt" }
        package var sandboxURL: String { "http://127.0.0.1:\(port)/sandbox/verifyReceipt" }
        /// The App Store Server API's two base URLs.
        package var serverAPIProductionURL: String { "http://127.0.0.1:\(port)/serverapi/production" }
        package var serverAPISandboxURL: String { "http://127.0.0.1:\(port)/serverapi/sandbox" }
        package let simulator: AppStoreSimulator

        package func stop() async {
            server.shutdown()
            await server.waitUntilStopped()
        }
    }

    /// Starts a simulator on `host`:`port` (a loopback address; port 0 picks a free one).
    package static func serve(
        configuration: Configuration, host: String = "127.0.0.1", port: Int = 0, eventLoops: Int = 1, now: WallClock = .system,
        logger: Logger
    ) throws -> Served {
        let simulator = AppStoreSimulator(configuration: configuration, now: now.now)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: host, port: port, eventLoops: eventLoops, accessLog: false),
            responder: simulator, logger: logger)
        return Served(server: server, port: try server.start(), simulator: simulator)
    }

    /// Starts an outage of `duration` (zero ends one): every verifyReceipt answers HTTP 503.
    package func setOutage(_ duration: Duration) {
        outage.withLock { $0.until = duration > .zero ? ContinuousClock.now + duration : nil }
    }

    /// verifyReceipt requests so far, and how many of them arrived during an outage.
    package var callCounts: (total: Int, duringOutage: Int) { outage.withLock { ($0.calls, $0.downCalls) } }

    /// Counts the call; whether Apple is down for it.
    private func countCall() -> Bool {
        outage.withLock { o in
            o.calls += 1
            guard let until = o.until, ContinuousClock.now < until else { return false }
            o.downCalls += 1
            return true
        }
    }

    package func handler(for request: HTTPRequest) -> HTTPHandler {
        let environment: String
        for (prefix, name) in [("/serverapi/production/", "Production"), ("/serverapi/sandbox/", "Sandbox")]
        where request.path.hasPrefix(prefix) {
            let path = request.path.dropFirst(prefix.count - 1)
            return .task { [self] request, _ in
                if configuration.latency > .zero { try? await Task.sleep(for: configuration.latency) }
                if countCall() {
                    return HTTPResponse(
                        status: .serviceUnavailable, headers: ["Content-Type": "text/plain"], body: Array("outage drill".utf8))
                }
                return serverAPI.answer(
                    request, path: path, environment: name,
                    purchases: { id, environment in
                        guard let content = purchases.withLock({ $0[id] }) else { return nil }
                        return script(content: content, environment: environment)
                    },
                    everyPurchase: { environment in
                        Set(purchases.withLock { $0.values }).sorted().compactMap {
                            script(content: $0, environment: environment)
                        }
                    })
            }
        }
        switch (request.method, request.path) {
        case (.post, "/control/purchase"):
            // `{"scenario": "active_monthly", "tag": "u1"}` → the purchase's transaction id and app receipt.
            return .immediate { [self] request, _ in
                guard let body = try? JSONValue.parse(request.body), let name = body["scenario"]?.string,
                    let scenario = Scenario(rawValue: name)
                else {
                    return HTTPResponse(
                        status: .badRequest, headers: ["Content-Type": "application/json"],
                        body: Array(
                            #"{"error":{"code":"invalid_request","message":"send {\"scenario\": NAME, \"tag\": TEXT}"}}"#.utf8))
                }
                let bought = purchase(scenario, tag: body["tag"]?.string ?? "0")
                return HTTPResponse(
                    status: .ok, headers: ["Content-Type": "application/json"],
                    body: JSONValue.object([
                        "transaction_id": .string(bought.transactionID), "receipt_data": .string(bought.receiptData),
                    ]).jsonBytes)
            }
        case (.post, "/control/retention-request"):
            // `{"transaction_id": ID, "user_locale"?: "en-US"}` → the signed body Apple's Retention
            // Messaging would post to receiptd's POST /v1/retention-messages/apple.
            return .immediate { [self] request, _ in
                guard let body = try? JSONValue.parse(request.body), let id = body["transaction_id"]?.string,
                    let signed = realtimeRequest(transactionID: id, userLocale: body["user_locale"]?.string ?? "en-US")
                else {
                    return HTTPResponse(
                        status: .badRequest, headers: ["Content-Type": "application/json"],
                        body: Array(
                            #"{"error":{"code":"invalid_request","message":"send {\"transaction_id\": a purchased id}"}}"#.utf8))
                }
                return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: signed)
            }
        case (.post, "/control/outage"):
            // Drills: `{"seconds": N}` takes Apple down for N seconds (0 brings it back).
            return .immediate { [self] request, _ in
                guard case .object(let o)? = try? JSONValue.parse(request.body), case .number(let n, _)? = o["seconds"],
                    (0...86_400).contains(n)
                else {
                    return HTTPResponse(
                        status: .badRequest, headers: ["Content-Type": "application/json"],
                        body: Array(#"{"error":{"code":"invalid_request","message":"send {\"seconds\": N}, 0 to 86400"}}"#.utf8))
                }
                setOutage(.milliseconds(Int64(n * 1000)))
                return HTTPResponse(status: .noContent)
            }
        case (.get, "/control/stats"):
            return .immediate { [self] _, _ in
                let (total, down) = callCounts
                return HTTPResponse(
                    status: .ok, headers: ["Content-Type": "application/json"],
                    body: Array(#"{"calls":\#(total),"calls_during_outage":\#(down)}"#.utf8))
            }
        case (.post, "/production/verifyReceipt"): environment = "Production"
        case (.post, "/sandbox/verifyReceipt"): environment = "Sandbox"
        default:
            return .immediate { _, _ in
                HTTPResponse(
                    status: .notFound, headers: ["Content-Type": "application/json"], body: Array(#"{"error":{"code":404}}"#.utf8)
                )
            }
        }
        return .task { [self] request, _ in
            if configuration.latency > .zero { try? await Task.sleep(for: configuration.latency) }
            if countCall() {
                return HTTPResponse(
                    status: .serviceUnavailable, headers: ["Content-Type": "text/plain"], body: Array("outage drill".utf8))
            }
            let body = answer(requestBody: request.body, environment: environment)
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body.jsonBytes)
        }
    }

    /// The answer to one request body in `environment` (`Production` or `Sandbox`).
    func answer(requestBody: [UInt8], environment: String) -> JSONValue {
        guard let request = try? JSONValue.parse(requestBody), case .string(let receiptData)? = request["receipt-data"]
        else {
            return .status(21000)
        }
        let password: String? = if case .string(let p)? = request["password"] { p } else { nil }
        guard let bytes = Data(base64Encoded: receiptData) else { return .status(21002) }
        var text = String(data: bytes, encoding: .utf8)
        if text.map({ Scenario(rawValue: String($0.split(separator: ":").first ?? "")) == nil }) ?? true,
            let id = (try? AppReceipt.transactionID(der: Array(bytes))) ?? nil
        {
            // A PKCS#7 receipt from ``purchase(_:tag:)``: the purchase its transaction id names.
            text = purchases.withLock { $0[id] }
        }
        guard let content = text else { return .status(21002) }
        let parts = content.split(separator: ":", maxSplits: 1)
        guard let name = parts.first, let scenario = Scenario(rawValue: String(name)) else { return .status(21002) }
        if let secret = configuration.sharedSecret(of: app(of: content)), password != secret { return .status(21004) }
        let callNumber = calls.withLock { counts -> Int in
            counts[content + environment, default: 0] += 1
            return counts[content + environment]!
        }
        switch scenario {
        case .sandboxOnly where environment == "Production": return .status(21007)
        case .productionOnly where environment == "Sandbox": return .status(21008)
        case .unavailableOnce where callNumber == 1: return .status(21005)
        case .retryableOnce where callNumber == 1: return .object(["status": .int(21100), "is_retryable": .bool(true)])
        case .malformed: return .status(21002)
        case .serverUnavailable: return .status(21005)
        case .notAuthenticated: return .status(21003)
        case .accountNotFound: return .status(21010)
        default: break
        }
        // Extensions granted through the Server API show in verifyReceipt's answers too, as at Apple.
        return serverAPI.extended(
            ReceiptScript.verifyReceiptAnswer(
                scripted(scenario, content: content, environment: environment, receiptData: receiptData)), skewed: false)
    }
}
