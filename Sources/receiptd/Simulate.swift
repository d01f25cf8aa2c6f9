import AppStoreSimulator
import ArgumentParser
import Dispatch
import Glibc
import Logging

/// `receiptd simulate`: the built-in App Store simulator on a loopback port, for offline runs and
/// load tests. Point `verifyReceipt` at `http://HOST:PORT/production/verifyReceipt` and
/// `/sandbox/verifyReceipt`; receipts are base64 of a scenario name (see AppStoreSimulator).
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

    func validate() throws {
        guard host == "127.0.0.1" || host == "::1" else { throw ValidationError("--host must be 127.0.0.1 or ::1") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (0...60_000).contains(latencyMs) else { throw ValidationError("--latency-ms must be in 0...60000") }
    }

    func run() async throws {
        // The expected shared secret comes from the environment, like receiptd's own.
        let secret = getenv("RECEIPTD_APP_STORE_SHARED_SECRET").map { String(cString: $0) }
        var logger = Logger(label: "receiptd-simulator")
        logger.logLevel = .warning
        let served = try AppStoreSimulator.serve(
            configuration: .init(bundleID: bundleID, sharedSecret: secret, latency: .milliseconds(latencyMs)), host: host,
            port: port, eventLoops: max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))), logger: logger)
        let server = served.server
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { @Sendable in server.shutdown() }
            source.resume()
            return source
        }
        print("App Store simulator on http://\(host):\(served.port)/production/verifyReceipt and /sandbox/verifyReceipt")
        fflushStandardOutput()
        await server.waitUntilStopped()
        withExtendedLifetime(signals) {}
    }
}

/// Flushes standard output, so a parent reading a pipe sees the start-up line at once.
func fflushStandardOutput() { fflush(nil) }
