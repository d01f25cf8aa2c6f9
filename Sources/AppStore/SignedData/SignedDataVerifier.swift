import Crypto
package import Entitlements
import FoundationEssentials
import JSON
import SwiftASN1
import Synchronization
// A fixed validation time (the payload's signedDate) is this SPI's documented purpose.
@_spi(FixedExpiryValidationTime) package import X509

/// Verifies Apple's signed data (App Store Server Notifications V2, StoreKit 2 transactions and
/// renewal info) the way Docs/apple-protocols.md §3.7 describes Apple's own library doing it, with
/// swift-certificates and swift-crypto:
///
/// 1. three base64url parts, `alg` ES256, `x5c` of exactly three certificates;
/// 2. Apple's marker OIDs on the intermediate and the leaf;
/// 3. leaf and intermediate valid at the validation time (the payload's `signedDate`, or now);
/// 4. RFC 5280 path validation from the leaf through `x5c[1]` to a **configured** root (the root
///    sent in `x5c[2]` is ignored);
/// 5. the ES256 signature (raw R‖S) over `header.payload` with the leaf's P-256 key;
/// 6. the claims: bundle id, environment, and in production the app's Apple id.
///
/// Offline only: no OCSP request is made (revocation is not checked; Docs/app-store.md "Notifications").
package struct SignedDataVerifier: Sendable {
    package struct Configuration: Sendable {
        /// Trust anchors: Apple Root CA - G3 in production, Apple's test CA in tests.
        package var roots: [Certificate]
        /// Apps whose data is accepted.
        package var bundleIDs: [String]
        /// App Store ids of those apps; production notifications must name one (sandbox has none).
        package var appAppleIDs: [Int64]
        /// Environments accepted (Xcode and LocalTesting data are never accepted).
        package var environments: Set<StoreEnvironment>
        package var validationTime: ValidationTime

        package init(
            roots: [Certificate], bundleIDs: [String], appAppleIDs: [Int64] = [],
            environments: Set<StoreEnvironment> = [.production, .sandbox], validationTime: ValidationTime = .signedDate
        ) {
            self.roots = roots
            self.bundleIDs = bundleIDs
            self.appAppleIDs = appAppleIDs
            self.environments = environments
            self.validationTime = validationTime
        }
    }

    /// When certificates must be valid.
    package enum ValidationTime: String, Sendable, CaseIterable {
        /// The payload's `signedDate` (Apple's offline default: old data stays verifiable after the
        /// leaf rotates), or now when it has none.
        case signedDate
        /// The time of verification.
        case now
    }

    /// Apple's marker extensions (§3.7 table): presence is what counts, not the value.
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]

    package let configuration: Configuration
    private let now: @Sendable () -> Int64
    private let verifiedChains = ChainCache()

    package init(configuration: Configuration, now: @escaping @Sendable () -> Int64) {
        self.configuration = configuration
        self.now = now
    }

    /// A notification's `signedPayload`, and the signed transaction and renewal info inside it,
    /// each verified on its own.
    package func notification(_ jws: String) async throws(SignedDataError) -> SignedNotification {
        let payload = try await verify(jws)
        guard let notification = try mapped(SignedNotification.init, payload) else {
            throw .malformed("the payload has no notificationType or notificationUUID")
        }
        if let bundle = notification.bundleID {
            guard configuration.bundleIDs.contains(bundle) else { throw .wrongApp("bundleId \(bundle) is not configured") }
        } else if notification.transactionJWS != nil || notification.renewalJWS != nil || notification.appTransactionJWS != nil {
            throw .wrongApp("the notification names no bundleId")
        }
        let environment = try accepted(notification.environment)
        if environment == .production, notification.bundleID != nil {
            guard let id = notification.appAppleID, configuration.appAppleIDs.contains(id) else {
                throw .wrongApp("appAppleId \(notification.appAppleID.map(String.init) ?? "absent") is not configured")
            }
        }
        var result = notification
        if let inner = notification.transactionJWS {
            let transaction = try await transaction(inner)
            guard transaction.bundleID == notification.bundleID else { throw .wrongApp("the transaction is for another app") }
            result.transaction = transaction
        }
        if let inner = notification.renewalJWS { result.renewal = try await renewalInfo(inner) }
        if let inner = notification.appTransactionJWS {
            let app = try await appTransaction(inner)
            guard app.bundleID == notification.bundleID else { throw .wrongApp("the app transaction is for another app") }
            result.appTransaction = app
        }
        return result
    }

    /// A StoreKit 2 signed transaction: verified, then its bundle id and environment checked.
    package func transaction(_ jws: String) async throws(SignedDataError) -> SignedTransaction {
        let payload = try await verify(jws)
        try checkTransactionClaims(payload)
        guard let transaction = try mapped(SignedTransaction.init, payload) else {
            throw .malformed("the payload is not a transaction (transactionId, productId)")
        }
        return transaction
    }

    /// Signed renewal info: verified, then its environment checked (it carries no bundle id).
    package func renewalInfo(_ jws: String) async throws(SignedDataError) -> SignedRenewalInfo {
        let payload = try await verify(jws)
        try checkRenewalClaims(payload)
        guard let renewal = try mapped(SignedRenewalInfo.init, payload) else {
            throw .malformed("the payload is not renewal info (originalTransactionId)")
        }
        return renewal
    }

    /// StoreKit's AppTransaction: verified, then its app (the bundle id, and in production the
    /// app's Apple id when any is configured) and environment (`receiptType`) checked.
    package func appTransaction(_ jws: String) async throws(SignedDataError) -> SignedAppTransaction {
        let payload = try await verify(jws)
        guard let app = try mapped(SignedAppTransaction.init, payload) else {
            throw .malformed("the payload is not an app transaction (bundleId)")
        }
        guard configuration.bundleIDs.contains(app.bundleID) else {
            throw .wrongApp("bundleId \(app.bundleID) is not configured")
        }
        let environment = try accepted(app.environment)
        if environment == .production, !configuration.appAppleIDs.isEmpty {
            guard let id = app.appAppleID, configuration.appAppleIDs.contains(id) else {
                throw .wrongApp("appAppleId \(app.appAppleID.map(String.init) ?? "absent") is not configured")
            }
        }
        return app
    }

    /// A Retention Messaging real-time request: verified, then its environment and, in production,
    /// the app's Apple id checked (it names no bundle id).
    package func realtimeRequest(_ jws: String) async throws(SignedDataError) -> SignedRealtimeRequest {
        let payload = try await verify(jws)
        guard let request = try mapped(SignedRealtimeRequest.init, payload) else {
            throw .malformed("the payload is not a real-time request (originalTransactionId, productId, requestIdentifier)")
        }
        if try accepted(request.environment) == .production {
            guard let id = request.appAppleID, configuration.appAppleIDs.contains(id) else {
                throw .wrongApp("appAppleId \(request.appAppleID.map(String.init) ?? "absent") is not configured")
            }
        }
        return request
    }

    /// §3.7 step 9 for a transaction: the bundle id and the environment.
    func checkTransactionClaims(_ payload: JSONValue) throws(SignedDataError) {
        let bundle = payload["bundleId"]?.string
        guard let bundle, configuration.bundleIDs.contains(bundle) else {
            throw .wrongApp("bundleId \(bundle ?? "absent") is not configured")
        }
        _ = try accepted(payload["environment"]?.string)
    }

    /// §3.7 step 9 for renewal info: the environment only.
    func checkRenewalClaims(_ payload: JSONValue) throws(SignedDataError) {
        _ = try accepted(payload["environment"]?.string)
    }

    /// A verified payload read as `T`; a date outside ``AppleDate/range`` makes it `invalid_jws`.
    private func mapped<T>(
        _ read: (JSONValue) throws(AppleDate.OutOfRange) -> T?, _ payload: JSONValue
    ) throws(SignedDataError) -> T? {
        do {
            return try read(payload)
        } catch {
            throw .malformed(error.description)
        }
    }

    private func accepted(_ name: String?) throws(SignedDataError) -> StoreEnvironment {
        guard let name, let environment = StoreEnvironment(appleName: name), configuration.environments.contains(environment)
        else { throw .wrongEnvironment(name ?? "absent") }
        return environment
    }

    /// Steps 1–5: the payload of a JWS whose signature and chain check out.
    ///
    /// The only thing read from the untrusted payload before the signature is checked is
    /// `signedDate`, the validation time, and it must be a date in ``AppleDate/range`` (else
    /// `invalid_jws`), so no time arithmetic below can overflow whatever a stranger signs.
    func verify(_ text: String) async throws(SignedDataError) -> JSONValue {
        let jws = try CompactJWS(text)
        guard jws.header["alg"]?.string == "ES256" else { throw .malformed("alg must be ES256") }
        guard let x5c = jws.header["x5c"]?.array else { throw .malformed("the header has no x5c") }
        guard x5c.count == 3 else { throw .malformed("x5c must hold 3 certificates, it holds \(x5c.count)") }
        let signedDate: Int64?
        do {
            signedDate = try jws.payload.date("signedDate")
        } catch {
            throw .malformed(error.description)
        }
        let at: Int64 =
            switch configuration.validationTime {
            case .signedDate: signedDate ?? now()
            case .now: now()
            }
        guard AppleDate.range.contains(at) else { throw .malformed("the validation time is outside 1970–9999") }
        let time = Date(timeIntervalSince1970: Double(at) / 1000)
        let chain = try await verifiedChain(x5c, at: time, ms: at)
        for (role, window) in [(SignedDataError.CertificateRole.leaf, chain.leaf), (.intermediate, chain.intermediate)] {
            guard window.contains(time) else { throw .notValidAt(role, at) }
        }
        guard chain.root.contains(time) else { throw .untrustedChain("the trust anchor is not valid at the validation time") }
        guard jws.signature.count == 64, let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature),
            chain.leafKey.isValidSignature(signature, for: jws.signingInput)
        else { throw .invalidSignature }
        return jws.payload
    }

    /// Steps 2–4 for `x5c`, remembered by its leaf and intermediate exactly as sent: a chain that
    /// led to a configured root once still does, so a known chain costs no decoding and no path
    /// validation, only the validity windows (checked by the caller at each validation time).
    private func verifiedChain(_ x5c: [JSONValue], at time: Date, ms at: Int64) async throws(SignedDataError) -> VerifiedChain {
        let key = ChainCache.key(x5c[0].string ?? "", x5c[1].string ?? "")
        if let known = verifiedChains.chain(for: key) { return known }
        var certificates: [Certificate] = []
        for (i, entry) in x5c.prefix(2).enumerated() {
            guard let text = entry.string, let der = Data(base64Encoded: text) else {
                throw .invalidCertificate("x5c[\(i)] is not standard base64")
            }
            do {
                certificates.append(try Certificate(derEncoded: Array(der)))
            } catch {
                throw .invalidCertificate("x5c[\(i)] is not a DER X.509 certificate")
            }
        }
        let (leaf, intermediate) = (certificates[0], certificates[1])
        guard intermediate.extensions[oid: Self.intermediateMarker] != nil else { throw .missingMarker(.intermediate) }
        guard leaf.extensions[oid: Self.leafMarker] != nil else { throw .missingMarker(.leaf) }
        for (role, certificate) in [(SignedDataError.CertificateRole.leaf, leaf), (.intermediate, intermediate)] {
            guard certificate.notValidBefore <= time, time <= certificate.notValidAfter else { throw .notValidAt(role, at) }
        }
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw .invalidCertificate("the leaf's key is not P-256, so it cannot sign ES256")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(configuration.roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            AppleMarkerPolicy()
        }
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate])) {
        case .validCertificate(let path):
            let root = path.last ?? intermediate
            let chain = VerifiedChain(
                leafKey: leafKey, leaf: leaf.notValidBefore...leaf.notValidAfter,
                intermediate: intermediate.notValidBefore...intermediate.notValidAfter,
                root: root.notValidBefore...root.notValidAfter)
            verifiedChains.remember(key, chain)
            return chain
        case .couldNotValidate(let failures):
            throw .untrustedChain(failures.first.map { "\($0.policyFailureReason)" } ?? "no path to a configured root")
        }
    }
}

/// What a validated chain leaves to check each time: the leaf's key and the validity windows.
struct VerifiedChain: Sendable {
    var leafKey: P256.Signing.PublicKey
    var leaf: ClosedRange<Date>
    var intermediate: ClosedRange<Date>
    var root: ClosedRange<Date>
}

/// The chain policy beside RFC 5280: exactly leaf, intermediate, root, with Apple's markers.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else { return .failsToMeetPolicy(reason: "the chain must be leaf, intermediate, root") }
        guard chain[1].extensions[oid: SignedDataVerifier.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks 1.2.840.113635.100.6.2.1")
        }
        guard chain[0].extensions[oid: SignedDataVerifier.leafMarker] != nil else {
            return .failsToMeetPolicy(reason: "the leaf lacks 1.2.840.113635.100.6.11.1")
        }
        return .meetsPolicy
    }
}

/// Chains that validated, by the SHA-256 of their leaf and intermediate as sent (base64). Bounded:
/// Apple rotates leaves every two years, so a handful of entries is the steady state; past 64 it
/// starts over.
final class ChainCache: Sendable {
    private let entries = Mutex<[[UInt8]: VerifiedChain]>([:])

    static func key(_ leaf: String, _ intermediate: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(leaf.utf8) + [0x2E] + Array(intermediate.utf8)))
    }

    func chain(for key: [UInt8]) -> VerifiedChain? { entries.withLock { $0[key] } }

    func remember(_ key: [UInt8], _ chain: VerifiedChain) {
        entries.withLock {
            if $0.count >= 64 { $0.removeAll() }
            $0[key] = chain
        }
    }
}
