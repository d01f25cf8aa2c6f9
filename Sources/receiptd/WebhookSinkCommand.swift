import ArgumentParser
import Dispatch
import Glibc
import HTTPServer
import JSON
import Logging
import WebhookSink
import Webhooks

/// `receiptd webhook-sink`: receives receiptd's webhooks on a loopback port, checks each signature
/// and payload, and prints one JSON line per request (`webhook_id`, `type`, `app_user_id`,
/// `version`, `signature`, `schema_problems`, `answered`). Point `webhooks.<name>.url` at
/// `http://127.0.0.1:PORT/hooks` (with `webhooks.allowHttp`) and give it the endpoint's secret.
struct WebhookSinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook-sink", abstract: "Receive, verify and print receiptd's webhooks (local development).")

    @Option(help: "Address to bind (loopback).")
    var host = "127.0.0.1"
    @Option(help: "Port to bind; 0 picks a free one (printed on start).")
    var port = 8091
    @Option(name: .customLong("secret"), help: "The endpoint's signing secret (twice while rotating).")
    var secrets: [String] = []
    @Option(name: .customLong("tolerance-seconds"), help: "How far the signature's t may be from now.")
    var toleranceSeconds: Int64 = 300
    @Option(name: .customLong("fail-status"), help: "Answer every request with this status instead of 204 (try retries).")
    var failStatus: Int?
    @Option(name: .customLong("delay-ms"), help: "Answer 204 only after this many milliseconds (a slow receiver).")
    var delayMs: Int?

    func validate() throws {
        guard host == "127.0.0.1" || host == "::1" else { throw ValidationError("--host must be 127.0.0.1 or ::1") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard !secrets.isEmpty else {
            throw ValidationError("--secret is required (the endpoint's RECEIPTD_WEBHOOKS_<NAME>_SECRET)")
        }
        if let failStatus, !(100...599).contains(failStatus) { throw ValidationError("--fail-status must be an HTTP status") }
        if let delayMs, !(1...600_000).contains(delayMs) { throw ValidationError("--delay-ms must be in 1...600000") }
        if failStatus != nil, delayMs != nil { throw ValidationError("--fail-status and --delay-ms exclude each other") }
    }

    func run() async throws {
        var logger = Logger(label: "receiptd-webhook-sink")
        logger.logLevel = .warning
        let sink = WebhookSink(secrets: secrets, tolerance: toleranceSeconds, keepsArrivals: false) { arrival in
            print(String(decoding: Self.line(arrival).jsonBytes, as: UTF8.self))
            fflushStandardOutput()
        }
        if let failStatus { sink.behaviour = .fail(status: failStatus) }
        if let delayMs { sink.behaviour = .hang(.milliseconds(delayMs)) }
        let served = try WebhookSink.serve(sink, host: host, port: port, logger: logger)
        let server = served.server
        let signals = shutDownOnSignals([server])
        printError("webhook sink on http://\(host):\(served.port)/hooks")
        await server.waitUntilStopped()
        withExtendedLifetime(signals) {}
    }

    static func line(_ a: WebhookSink.Arrival) -> JSONValue {
        .object([
            "webhook_id": a.webhookID.map(JSONValue.string) ?? .null, "attempt": a.attempt.map { .int($0) } ?? .null,
            "type": a.type.map(JSONValue.string) ?? .null, "app_user_id": a.appUserID.map(JSONValue.string) ?? .null,
            "version": a.version.map { .int(Int($0)) } ?? .null, "signature": .string(a.signature.rawValue),
            "standard_signature": a.standardSignature.map { .string($0.rawValue) } ?? .null,
            "schema_problems": .array(a.schemaProblems.map(JSONValue.string)), "answered": .int(a.answered),
        ])
    }
}
