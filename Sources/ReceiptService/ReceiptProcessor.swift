import AppStore
import Entitlements
import FoundationEssentials
import HTTPServer
import JSON
import Logging
import SignedData
import Storage

/// POST /v1/receipts, GET /v1/subscribers/{id} and its events: verify with Apple, store, answer.
struct ReceiptProcessor: Sendable {
    let client: VerifyReceiptClient
    let verifier: SignedDataVerifier
    let database: DatabaseQueue
    let bundleIDs: [String]
    let state: SubscriberState
    let policy: OwnershipPolicy
    let logger: Logger
    let now: @Sendable () -> Int64
    /// Rendered documents for GET; see ``SubscriberCache``.
    var cache = SubscriberCache(capacity: 0)

    /// The body of POST /v1/receipts.
    struct PostReceipt: Sendable {
        var appUserID: String
        var proof: Proof
        var bundleID: String?
        var excludeOldTransactions: Bool
    }

    /// What the app sends as proof of purchase.
    enum Proof: Sendable, Equatable {
        /// `receipt_data`: an app receipt, verified by Apple's verifyReceipt.
        case receipt(String)
        /// `signed_transaction` (and optionally `signed_renewal_info`): StoreKit 2's JWS, verified here.
        case signed(transaction: String, renewal: String?)
    }

    /// A receipt's base64 text: Apple's receipts for years of renewals stay well below this.
    static let maxReceiptBytes = 512 * 1024

    /// Reads and checks the request body; every problem names its field.
    static func parse(_ body: [UInt8]) throws(APIError) -> PostReceipt {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let user)? = json["app_user_id"] else {
            throw .invalidRequest("`app_user_id` is required and must be a string.")
        }
        _ = try FieldRules.appUserID(user)
        let proof: Proof
        switch (json["receipt_data"] ?? .null, json["signed_transaction"] ?? .null) {
        case (.null, .null):
            throw .invalidRequest("Either `receipt_data` or `signed_transaction` is required.")
        case (.null, .string(let jws)) where !jws.isEmpty && jws.utf8.count <= 65_536:
            switch json["signed_renewal_info"] ?? .null {
            case .null: proof = .signed(transaction: jws, renewal: nil)
            case .string(let info) where !info.isEmpty && info.utf8.count <= 65_536:
                proof = .signed(transaction: jws, renewal: info)
            default: throw .invalidRequest("`signed_renewal_info` must be a JWS string.")
            }
        case (.null, _):
            throw .invalidRequest("`signed_transaction` must be a JWS string of at most 65536 bytes.")
        case (.string(let receipt), .null) where !receipt.isEmpty && receipt.utf8.count <= Self.maxReceiptBytes:
            guard FieldRules.isPlausibleReceipt(receipt) else {
                throw .invalidRequest("`receipt_data` is not a receipt: canonical base64 of at least 4 bytes.")
            }
            proof = .receipt(receipt)
        case (_, .null):
            throw .invalidRequest("`receipt_data` must be a non-empty base64 string of at most \(Self.maxReceiptBytes) bytes.")
        default:
            throw .invalidRequest("Send `receipt_data` or `signed_transaction`, not both.")
        }
        var bundleID: String?
        switch json["bundle_id"] {
        case nil, .null?: bundleID = nil
        case .string(let b)? where FieldRules.isValidBundleID(b): bundleID = b
        default: throw .invalidRequest("`bundle_id` must be a bundle identifier: 1 to 155 letters, digits, `.`, `-` or `_`.")
        }
        var exclude = false
        switch json["exclude_old_transactions"] {
        case nil, .null?: break
        case .bool(let b)?: exclude = b
        default: throw .invalidRequest("`exclude_old_transactions` must be a boolean.")
        }
        return PostReceipt(
            appUserID: user, proof: proof, bundleID: bundleID, excludeOldTransactions: exclude)
    }

    func post(_ request: HTTPRequest, requestID: String) async -> HTTPResponse {
        do {
            let input = try Self.parse(request.body)
            let explain = try Self.explain(request)
            let receiptData: String
            switch input.proof {
            case .receipt(let receipt): receiptData = receipt
            case .signed(let transaction, let renewal):
                return try await postSigned(
                    input, transaction: transaction, renewal: renewal, explain: explain, request: request)
            }
            let expectedBundle: String
            if let given = input.bundleID {
                guard bundleIDs.contains(given) else { throw APIError.bundleMismatch("`bundle_id` is not a configured app.") }
                expectedBundle = given
            } else {
                guard bundleIDs.count == 1 else {
                    throw APIError.invalidRequest("`bundle_id` is required: several apps are configured.")
                }
                expectedBundle = bundleIDs[0]
            }
            let verification = await client.verify(
                receiptData: receiptData, excludeOldTransactions: input.excludeOldTransactions)
            let entry = Self.logEntry(verification, user: input.appUserID)
            let (response, environment): (VerifyReceiptResponse, AppStoreEnvironment)
            do {
                (response, environment) = try outcome(verification)
                guard response.receipt?.bundleID == expectedBundle else {
                    throw APIError.bundleMismatch("The receipt belongs to another app.", appleStatus: response.status.rawValue)
                }
            } catch {
                // Nothing to store: the verification log still records the attempt.
                let at = now()
                try await database.run { db in try ReceiptStore(db).log(entry, at: at) }
                throw error
            }
            let record = RecordMapping.record(of: response, environment: environment)
            return try await store(record, for: input.appUserID, log: entry, explain: explain, request: request)
        } catch let error as APIError where error.code == "app_store_unavailable" {
            return await unavailable(error, request: request, requestID: requestID)
        } catch let error as APIError {
            return error.response(requestID: requestID)
        } catch {
            logger.error("POST /v1/receipts failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.serverFault.response(requestID: requestID)
        }
    }

    /// 503 while Apple is down, with the user's last known document marked `"stale": true` and its
    /// age (`stale_seconds` since `verified_at`, Apple's last word on them), when there is one.
    /// Nothing stored changes: what the user had, they keep.
    private func unavailable(_ error: APIError, request: HTTPRequest, requestID: String) async -> HTTPResponse {
        guard let input = try? Self.parse(request.body), let explain = try? Self.explain(request) else {
            return error.response(requestID: requestID)
        }
        let at = now()
        guard let (document, version) = try? await state.current(input.appUserID, database: database, now: at) else {
            return error.response(requestID: requestID)
        }
        let verifiedAt = (try? await database.run { db in try ReceiptStore(db).lastVerifiedAt(input.appUserID) }) ?? nil
        guard case .object(var fields) = document.rendered(version: version, now: at, explain: explain) else {
            return error.response(requestID: requestID)
        }
        fields["stale"] = .bool(true)
        fields["verified_at"] = SubscriberDocument.time(verifiedAt)
        let age = verifiedAt.map { max(0, at - $0) / 1000 }
        fields["stale_seconds"] = age.map { .int($0) } ?? .null
        return error.response(requestID: requestID, with: ["subscriber": .object(fields)])
    }

    /// One hop to the database, one write transaction: the facts, the log row, the version and
    /// events; then the document.
    private func store(
        _ record: VerifiedReceiptRecord, for user: String, log: VerificationLogEntry, explain: Bool, request: HTTPRequest
    ) async throws -> HTTPResponse {
        let at = now()
        let saved = try await database.run { [policy, state] db in
            try db.transaction { try state.save(record, for: user, policy: policy, in: db, now: at, log: log) }
        }
        guard case .document(let document, let version, _) = saved else { throw APIError.receiptInUse() }
        return Self.documentResponse(document, version: version, now: at, explain: explain, request: request)
    }

    /// POST /v1/receipts with `signed_transaction` (StoreKit 2): verified offline like a V2
    /// notification's transaction, with no call to Apple.
    private func postSigned(
        _ input: PostReceipt, transaction signedTransaction: String, renewal signedRenewal: String?, explain: Bool,
        request: HTTPRequest
    ) async throws -> HTTPResponse {
        let started = ContinuousClock.now
        let transaction: SignedTransaction
        var renewal: SignedRenewalInfo?
        do {
            transaction = try await verifier.transaction(signedTransaction)
            if let signedRenewal { renewal = try await verifier.renewalInfo(signedRenewal) }
        } catch {
            logger.notice("signed transaction refused", metadata: ["reason": "\(error.code)", "user": "\(input.appUserID)"])
            throw APIError.signedData(error)
        }
        if let given = input.bundleID, given != transaction.bundleID {
            throw APIError.bundleMismatch("The signed transaction belongs to another app.")
        }
        if let renewal, !renewal.originalTransactionID.isExactly(transaction.originalTransactionID) {
            throw APIError.invalidRequest("`signed_renewal_info` is about another purchase than `signed_transaction`.")
        }
        let (seconds, attos) = (ContinuousClock.now - started).components
        let log = VerificationLogEntry(
            appUserID: input.appUserID,
            environment: transaction.environment.flatMap(AppStoreEnvironment.init(appleName:))?.rawValue,
            appleStatus: nil, outcome: "signed_transaction", attempts: 0,
            latencyMs: seconds * 1000 + attos / 1_000_000_000_000_000)
        let record = RecordMapping.record(
            transaction: transaction, renewal: renewal, statedAt: transaction.signedDate ?? renewal?.signedDate)
        return try await store(record, for: input.appUserID, log: log, explain: explain, request: request)
    }

    /// GET /v1/subscribers/{id} from ``cache`` alone, on the event loop; nil when the cache does not
    /// know the answer (then ``subscriber(_:request:requestID:)`` reads storage).
    func cachedSubscriber(_ appUserID: String, request: HTTPRequest) -> HTTPResponse? {
        guard (try? Self.explain(request)) == false else { return nil }
        let at = now()
        guard let entry = cache.entry(appUserID, generation: database.generation, now: at) else { return nil }
        let tag = Self.entityTag(version: entry.version, explain: false)
        if let unchanged = Self.notModified(tag, request) { return unchanged }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json", "ETag": tag], body: entry.body(now: at))
    }

    func subscriber(_ appUserID: String, request: HTTPRequest, requestID: String) async -> HTTPResponse {
        do {
            let explain = try Self.explain(request)
            let at = now()
            let generation = database.generation  // before the read: a write after it voids the entry
            guard let (document, version) = try await state.current(appUserID, database: database, now: at) else {
                return APIError.subscriberNotFound.response(requestID: requestID)
            }
            cache.store(appUserID, document: document, version: version, generation: generation, now: at)
            return Self.documentResponse(document, version: version, now: at, explain: explain, request: request)
        } catch let error as APIError {
            return error.response(requestID: requestID)
        } catch {
            logger.error("GET /v1/subscribers failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.serverFault.response(requestID: requestID)
        }
    }

    /// GET /v1/subscribers/{id}/events: newest first, `limit` (1–200, default 50) at a time, the
    /// next page from `next_cursor`.
    func events(_ appUserID: String, request: HTTPRequest, requestID: String) async -> HTTPResponse {
        do {
            let limit = try Self.limit(request)
            let cursor = try Self.cursor(request)
            // Bring the events up to date with time first (an expiration nobody has read yet).
            guard try await state.current(appUserID, database: database, now: now()) != nil else {
                return APIError.subscriberNotFound.response(requestID: requestID)
            }
            let page = try await database.run { db in try EventStore(db).page(for: appUserID, limit: limit + 1, before: cursor) }
            let events = page.prefix(limit)
            let next: JSONValue = page.count > limit ? events.last.map { .string("\($0.at).\($0.id)") } ?? .null : .null
            let body: JSONValue = .object([
                "app_user_id": .string(appUserID), "events": .array(events.map(Self.json)), "next_cursor": next,
            ])
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body.jsonBytes)
        } catch let error as APIError {
            return error.response(requestID: requestID)
        } catch {
            logger.error("GET /v1/subscribers/…/events failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.serverFault.response(requestID: requestID)
        }
    }

    private static func json(_ e: EventRecord) -> JSONValue {
        .object([
            "id": .string(String(e.id)), "type": .string(e.type), "at": SubscriberDocument.time(e.at),
            "recorded_at": SubscriberDocument.time(e.recordedAt), "product_id": .string(e.productID),
            "original_transaction_id": .string(e.originalTransactionID),
            "transaction_id": e.transactionID.map(JSONValue.string) ?? .null,
            "facts": (try? JSONValue.parse(Array(e.factsJSON.utf8))) ?? .object([:]),
        ])
    }

    /// `?explain=true` (or `1`); `false`, `0` or absent: no explanations.
    static func explain(_ request: HTTPRequest) throws(APIError) -> Bool {
        switch request.queryValue("explain") {
        case nil, "false", "0": false
        case "true", "1": true
        default: throw .invalidRequest("`explain` must be true or false.")
        }
    }

    static func limit(_ request: HTTPRequest) throws(APIError) -> Int {
        guard let text = request.queryValue("limit") else { return 50 }
        guard let n = Int(text), (1...200).contains(n) else { throw .invalidRequest("`limit` must be an integer from 1 to 200.") }
        return n
    }

    static func cursor(_ request: HTTPRequest) throws(APIError) -> (at: Int64, id: Int64)? {
        guard let text = request.queryValue("cursor") else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let at = Int64(parts[0]), let id = Int64(parts[1]) else {
            throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.")
        }
        return (at, id)
    }

    /// The subscriber document with its `ETag` (`W/"<version>"`, `W/"<version>-explained"`), or 304
    /// when `If-None-Match` names it. `?explain=true` adds the explanations.
    static func documentResponse(
        _ document: SubscriberDocument, version: Int64, now: Int64, explain: Bool, request: HTTPRequest
    ) -> HTTPResponse {
        let tag = entityTag(version: version, explain: explain)
        if let unchanged = notModified(tag, request) { return unchanged }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json", "ETag": tag],
            body: document.rendered(version: version, now: now, explain: explain).jsonBytes)
    }

    /// A document's weak ETag: its version, and whether it carries explanations.
    static func entityTag(version: Int64, explain: Bool) -> String { "W/\"\(version)\(explain ? "-explained" : "")\"" }

    /// 304 when `If-None-Match` names `tag`.
    static func notModified(_ tag: String, _ request: HTTPRequest) -> HTTPResponse? {
        let wanted = request.headers[all: "If-None-Match"]
        guard !wanted.isEmpty, EntityTag.weakMatch(tag, anyOf: wanted.joined(separator: ",")) else { return nil }
        return HTTPResponse(status: .notModified, headers: ["ETag": tag])
    }

    /// The valid answer, or the API error its result maps to.
    private func outcome(_ v: VerifyReceiptClient.Verification) throws(APIError) -> (VerifyReceiptResponse, AppStoreEnvironment) {
        switch v.result {
        case .valid(let response, let environment):
            return (response, environment)
        case .invalidReceipt(let status):
            throw .invalidReceipt(appleStatus: status.rawValue)
        case .misconfigured(let status), .unexpected(let status):
            logger.critical(
                "Apple refused receiptd's request: check appStore.sharedSecret and the verifyReceipt URLs",
                metadata: ["apple_status": "\(status.rawValue)"])
            throw .misconfigured(appleStatus: status.rawValue)
        case .unavailable(let status, let reason):
            logger.warning("App Store unavailable", metadata: ["reason": "\(reason)", "attempts": "\(v.attempts)"])
            let seconds = v.retryAfter?.secondsRoundedUp
            throw .unavailable(appleStatus: status?.rawValue, retryAfterSeconds: max(1, seconds ?? 30))
        }
    }

    /// One verification-log row: never the receipt or the secret.
    static func logEntry(_ v: VerifyReceiptClient.Verification, user: String) -> VerificationLogEntry {
        let (outcome, status): (String, Int?) =
            switch v.result {
            case .valid(let r, _): ("valid", r.status.rawValue)
            case .invalidReceipt(let s): ("invalid_receipt", s.rawValue)
            case .misconfigured(let s): ("misconfigured", s.rawValue)
            case .unexpected(let s): ("unexpected", s.rawValue)
            case .unavailable(let s, _): ("unavailable", s?.rawValue)
            }
        let (seconds, attos) = v.duration.components
        return VerificationLogEntry(
            appUserID: user, environment: v.environment.rawValue, appleStatus: status, outcome: outcome,
            attempts: v.attempts, latencyMs: seconds * 1000 + attos / 1_000_000_000_000_000)
    }
}
