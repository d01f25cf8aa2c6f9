package import AppStore
package import CryptoExtras
package import Logging
import Synchronization
import Testing

/// The secrets the test services are configured with: distinctive, so any leak is found.
package enum TestSecrets {
    package static let publicKey = "pk_test_4f1c9a7e2b"
    package static let secretKey = "sk_test_91d0e3b58a"
    package static let sharedSecret = "ss_test_7c2e5a90f3"
    /// The App Store Server API's `.p8` key (Apple's published test key) and ids.
    package static let serverAPIKey = Fixtures.text("AppStoreServerAPI/testSigningKey.p8")
    package static let serverAPICredentials = try! ServerAPIToken.Credentials(
        keyID: "TESTKEY123", issuerID: "00000000-0000-4000-8000-0000000000aa", p8: serverAPIKey)
    /// A line of the key's base64: what a leak of the key would show.
    package static let serverAPIKeyLine = String(serverAPIKey.split(separator: "\n")[1])
    /// The Google Play simulator's service account key (made once per test process).
    package static let googlePlayKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    /// The simulated Pub/Sub's key for its pushes' OIDC tokens.
    package static let googlePushKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    /// A line of its PEM, and the access tokens the simulator grants: what a leak would show.
    package static let googlePlayKeyLine = String(googlePlayKey.pemRepresentation.split(separator: "\n")[1])
    package static let googleAccessTokenPrefix = "ya29.simulated"
    package static let all = [publicKey, secretKey, sharedSecret, serverAPIKeyLine, googlePlayKeyLine, googleAccessTokenPrefix]
}

/// Every log line of every test service and every response the tests receive (through
/// ``send(_:_:)``), scanned for ``TestSecrets`` as it is produced; each service checks on stop
/// that none was found.
package final class SecretAudit: Sendable {
    package static let shared = SecretAudit(secrets: TestSecrets.all)
    package let secrets: [String]
    private let state = Mutex<(scanned: Int, leaks: [String])>((0, []))

    package init(secrets: [String]) { self.secrets = secrets }

    package func scan(_ text: String, from source: String) {
        let found = secrets.filter { text.contains($0) }
        state.withLock { s in
            s.scanned += 1
            if !found.isEmpty { s.leaks.append("\(source): \(text.prefix(300))") }
        }
    }

    package var scanned: Int { state.withLock { $0.scanned } }
    package var leaks: [String] { state.withLock { $0.leaks } }
}

/// Logs everything (trace and up) into the audit, printing nothing.
package struct AuditingLogHandler: LogHandler {
    package let audit: SecretAudit
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    package var logLevel: Logger.Level = .trace

    package init(audit: SecretAudit) { self.audit = audit }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        audit.scan("\(event.level) \(event.message) \(all) \(event.error.map { "\($0)" } ?? "")", from: "log")
    }
}

/// The test services' logger: every line goes to ``SecretAudit``, none is printed.
package var quietLogger: Logger {
    Logger(label: "test") { _ in AuditingLogHandler(audit: .shared) }
}

/// Fails the running test when any log line or response so far held a configured secret.
package func expectNoSecretLeaked() {
    let leaks = SecretAudit.shared.leaks
    #expect(leaks.isEmpty, "secrets in logs or responses: \(leaks.prefix(5))")
}
