import AppStoreServerAPI
import AppStoreSimulator
import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import HTTPServer
import Logging

/// `receiptd simulate`: the built-in App Store simulator on a loopback port, for offline runs and
/// load tests. Point `verifyReceipt` at `http://HOST:PORT/production/verifyReceipt` and
/// `/sandbox/verifyReceipt`; receipts are base64 of a scenario name (see AppStoreSimulator). Its
/// App Store Server API (`/serverapi/production`, `/serverapi/sandbox`) accepts the JWTs of the
/// In-App Purchase key receiptd is configured with, read from the same variables
/// (`RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY` or `…_FILE`, `…_KEY_ID`, `…_ISSUER_ID`).
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

    func validate() throws {
        guard host == "127.0.0.1" || host == "::1" else { throw ValidationError("--host must be 127.0.0.1 or ::1") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (0...60_000).contains(latencyMs) else { throw ValidationError("--latency-ms must be in 0...60000") }
        guard serverAPIRequestsPerSecond > 0 else { throw ValidationError("--server-api-requests-per-second must be positive") }
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
        let signals = shutDownOnSignals(server)
        print("App Store simulator on http://\(host):\(served.port)/production/verifyReceipt and /sandbox/verifyReceipt")
        fflushStandardOutput()
        await server.waitUntilStopped()
        withExtendedLifetime(signals) {}
    }
}

/// SIGTERM and SIGINT shut `server` down gracefully while the returned sources live.
func shutDownOnSignals(_ server: HTTPServer) -> [any DispatchSourceSignal] {
    [SIGTERM, SIGINT].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { @Sendable in server.shutdown() }
        source.resume()
        return source
    }
}

/// Flushes standard output, so a parent reading a pipe sees the start-up line at once.
func fflushStandardOutput() { fflush(nil) }
