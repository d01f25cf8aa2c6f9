import AppStore
import AppStoreSimulator
import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import GooglePlay
import GooglePlaySimulator
import HTTPServer
import Logging

/// `receiptd simulate`: the built-in App Store simulator on a loopback port, for offline runs and
/// load tests. Point `verifyReceipt` at `http://HOST:PORT/production/verifyReceipt` and
/// `/sandbox/verifyReceipt`; receipts are base64 of a scenario name (see AppStoreSimulator). Its
/// App Store Server API (`/serverapi/production`, `/serverapi/sandbox`) accepts the JWTs of the
/// In-App Purchase key receiptd is configured with, read from the same variables
/// (`RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY` or `…_FILE`, `…_KEY_ID`, `…_ISSUER_ID`).
///
/// With `--google-play-port`, a Google Play stand-in too (GooglePlaySimulator): its token
/// endpoint accepts the assertions of receiptd's service account (`RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY`
/// or `…_FILE`), its Play Developer API answers scripted tokens (`gp1.<scenario>.<tag>`) of the
/// `--package` apps. Point `googlePlay.apiUrl` and `googlePlay.tokenUrl` at the printed URLs.
struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve a fake App Store verifyReceipt with scripted receipts.")

    @Option(help: "Address to bind (a loopback address: the simulator is not for the network).")
    var host = "127.0.0.1"
    @Option(help: "Port to bind; 0 picks a free one (printed on start).")
    var port = 8090
    @Option(help: "The bundle id the scripted receipts carry.")
    var bundleID = "com.example.app"
    @Option(name: .customLong("latency-ms"), help: "Milliseconds added before every answer.")
    var latencyMs = 0
    @Option(name: .customLong("server-api-requests-per-second"), help: "Server API requests a second above which it answers 429.")
    var serverAPIRequestsPerSecond = 10_000
    @Option(
        name: .customLong("google-play-port"),
        help: "Also serve a Google Play stand-in on this port (0 picks a free one); off when absent.")
    var googlePlayPort: Int?
    @Option(name: .customLong("package"), help: "An Android package the Google Play stand-in answers for (repeatable).")
    var packages: [String] = ["com.example.app"]

    func validate() throws {
        guard host == "127.0.0.1" || host == "::1" else { throw ValidationError("--host must be 127.0.0.1 or ::1") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (0...60_000).contains(latencyMs) else { throw ValidationError("--latency-ms must be in 0...60000") }
        guard serverAPIRequestsPerSecond > 0 else { throw ValidationError("--server-api-requests-per-second must be positive") }
        if let googlePlayPort, !(0...65_535).contains(googlePlayPort) {
            throw ValidationError("--google-play-port must be in 0...65535")
        }
        for package in packages where !PlayIdentifier.isValid(package, as: .packageName) {
            throw ValidationError("--package \(package) is not an Android package name")
        }
    }

    /// The service account whose assertions the Google Play stand-in accepts: receiptd's own.
    static func googlePlayAccount(_ environment: [String: String]) throws -> ServiceAccountKey {
        var json = environment["RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY"]
        if json == nil, let file = environment["RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY_FILE"] {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY_FILE")
            }
            json = String(decoding: data, as: UTF8.self)
        }
        guard let json else {
            throw ValidationError(
                "--google-play-port needs the service account key receiptd uses (RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY_FILE)")
        }
        do { return try ServiceAccountKey(json: Array(json.utf8)) } catch {
            throw ValidationError("RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY: \(error)")
        }
    }

    /// The key whose JWTs the simulated Server API accepts: receiptd's own, from the environment;
    /// nil (every Server API call refused with 401) when none is set.
    static func serverAPIKey(_ environment: [String: String]) throws -> ServerAPISimulator.Key? {
        var p8 = environment["RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY"]
        if p8 == nil, let file = environment["RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY_FILE"] {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY_FILE")
            }
            p8 = String(decoding: data, as: UTF8.self)
        }
        guard let p8 else { return nil }
        guard let keyID = environment["RECEIPTD_APP_STORE_SERVER_API_KEY_ID"],
            let issuerID = environment["RECEIPTD_APP_STORE_SERVER_API_ISSUER_ID"]
        else { throw ValidationError("the Server API key needs RECEIPTD_APP_STORE_SERVER_API_KEY_ID and …_ISSUER_ID") }
        do {
            return .init(try ServerAPIToken.Credentials(keyID: keyID, issuerID: issuerID, p8: p8))
        } catch {
            throw ValidationError("RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY: \(error)")
        }
    }

    func run() async throws {
        // The expected shared secret comes from the environment, like receiptd's own.
        let secret = getenv("RECEIPTD_APP_STORE_SHARED_SECRET").map { String(cString: $0) }
        var logger = Logger(label: "receiptd-simulator")
        logger.logLevel = .warning
        let served = try AppStoreSimulator.serve(
            configuration: .init(
                bundleID: bundleID, sharedSecret: secret, latency: .milliseconds(latencyMs),
                serverAPIKey: try Self.serverAPIKey(ProcessInfo.processInfo.environment),
                serverAPIRequestsPerSecond: serverAPIRequestsPerSecond),
            host: host, port: port, eventLoops: max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))), logger: logger)
        let server = served.server
        var google: GooglePlaySimulator.Served?
        if let googlePlayPort {
            let account = try Self.googlePlayAccount(ProcessInfo.processInfo.environment)
            google = try GooglePlaySimulator.serve(
                configuration: .init(
                    packageNames: packages, clientEmail: account.clientEmail, publicKey: account.publicKey, tokenURI: ""),
                host: host, port: googlePlayPort, logger: logger)
        }
        let signals = shutDownOnSignals([server] + (google.map { [$0.server] } ?? []))
        print("App Store simulator on http://\(host):\(served.port)/production/verifyReceipt and /sandbox/verifyReceipt")
        if let google {
            print("Google Play simulator: googlePlay.apiUrl=\(google.apiBase) googlePlay.tokenUrl=\(google.tokenURI)")
        }
        fflushStandardOutput()
        await server.waitUntilStopped()
        await google?.server.waitUntilStopped()
        withExtendedLifetime(signals) {}
    }
}

/// SIGTERM and SIGINT shut `servers` down gracefully while the returned sources live. One
/// source per signal for all of them: setting a signal's disposition again once a source
/// watches it would take it away from the source (a second SIGTERM source made SIGTERM ignored).
func shutDownOnSignals(_ servers: [HTTPServer]) -> [any DispatchSourceSignal] {
    [SIGTERM, SIGINT].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { @Sendable in
            for server in servers { server.shutdown() }
        }
        source.resume()
        return source
    }
}

/// Flushes standard output, so a parent reading a pipe sees the start-up line at once.
func fflushStandardOutput() { fflush(nil) }
