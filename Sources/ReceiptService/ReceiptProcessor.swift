import AppStore
import Entitlements
import FoundationEssentials
import HTTPServer
import Logging
import Storage

/// POST /v1/receipts and GET /v1/subscribers/{id}: verify with Apple, store, answer the document.
struct ReceiptProcessor: Sendable {
    let client: VerifyReceiptClient
    let database: DatabaseQueue
    let bundleIDs: [String]
    let rules: EntitlementRules
    let policy: OwnershipPolicy
    let logger: Logger
    let now: @Sendable () -> Int64

    /// The body of POST /v1/receipts.
    struct PostReceipt: Sendable {
        var appUserID: String
        var receiptData: String
        var bundleID: String?
        var excludeOldTransactions: Bool
    }

    /// Reads and checks the request body; every problem names its field.
    static func parse(_ body: [UInt8]) throws(APIError) -> PostReceipt {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let user)? = json["app_user_id"], !user.isEmpty, user.utf8.count <= 256 else {
            throw .invalidRequest("`app_user_id` must be a non-empty string of at most 256 bytes.")
        }
        guard case .string(let receipt)? = json["receipt_data"], !receipt.isEmpty else {
            throw .invalidRequest("`receipt_data` must be a non-empty base64 string.")
        }
        guard Data(base64Encoded: receipt) != nil else { throw .invalidRequest("`receipt_data` is not valid base64.") }
        var bundleID: String?
        switch json["bundle_id"] {
        case nil, .null?: bundleID = nil
        case .string(let b)? where !b.isEmpty: bundleID = b
        default: throw .invalidRequest("`bundle_id` must be a non-empty string.")
        }
        var exclude = false
        switch json["exclude_old_transactions"] {
        case nil, .null?: break
        case .bool(let b)?: exclude = b
        default: throw .invalidRequest("`exclude_old_transactions` must be a boolean.")
        }
        return PostReceipt(appUserID: user, receiptData: receipt, bundleID: bundleID, excludeOldTransactions: exclude)
    }

    func post(_ request: HTTPRequest, requestID: String) async -> HTTPResponse {
        do {
            let input = try Self.parse(request.body)
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
                receiptData: input.receiptData, excludeOldTransactions: input.excludeOldTransactions)
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
            let at = now()
            // One hop to the database: the receipt and its log row in one write transaction, then the read.
            let (saved, subscriber) = try await database.run { [policy] db in
                let store = ReceiptStore(db)
                let saved = try store.save(record, for: input.appUserID, policy: policy, now: at, log: entry)
                return (saved, try store.subscriber(input.appUserID))
            }
            if case .receiptInUse = saved { throw APIError.receiptInUse() }
            guard let subscriber else { throw APIError.serverFault }
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json"],
                body: SubscriberDocument.build(subscriber, rules: rules, now: at).jsonBytes)
        } catch let error as APIError {
            return error.response(requestID: requestID)
        } catch {
            logger.error("POST /v1/receipts failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.serverFault.response(requestID: requestID)
        }
    }

    func subscriber(_ appUserID: String, requestID: String) async -> HTTPResponse {
        do {
            guard let subscriber = try await database.run({ db in try ReceiptStore(db).subscriber(appUserID) }) else {
                return APIError.subscriberNotFound.response(requestID: requestID)
            }
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json"],
                body: SubscriberDocument.build(subscriber, rules: rules, now: now()).jsonBytes)
        } catch {
            logger.error("GET /v1/subscribers failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.serverFault.response(requestID: requestID)
        }
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
            throw .unavailable(appleStatus: status?.rawValue)
        }
    }

    /// One verification-log row: never the receipt or the secret.
    private static func logEntry(_ v: VerifyReceiptClient.Verification, user: String) -> VerificationLogEntry {
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
