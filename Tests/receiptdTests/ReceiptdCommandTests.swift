import Foundation
import ReceiptTesting
import Subprocess
import SystemPackage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The receiptd binary built beside this test bundle.
let binary: URL = {
    let directory = URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0]).deletingLastPathComponent()
    return directory.appendingPathComponent("receiptd")
}()

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Runs receiptd with `arguments` in a scratch folder; returns exit status and output.
/// `whileRunning` gets the child's execution (to probe it, to signal it) while output is collected.
/// Subprocess, not Foundation's Process: on Linux, Process reads `/proc/self/fd` past the end of
/// readdir's buffer and crashes once this test process holds ~1,400 descriptors, which the server
/// tests running beside these do.
func run(
    _ arguments: [String], environment: [String: String] = [:],
    whileRunning: ((Execution<NoInput, StringOutput<UTF8>, StringOutput<UTF8>>) async throws -> Void)? = nil
) async throws -> (status: Int32, stdout: String, stderr: String) {
    var env: [Environment.Key: String] = ["PATH": "/usr/bin:/bin"]
    for (k, v) in environment { env[Environment.Key(rawValue: k)!] = v }
    let result = try await Subprocess.run(
        .path(FilePath(binary.path)),
        arguments: Arguments(arguments == ["version"] ? arguments : arguments + ["--config-dir", root.path + "/Config"]),
        environment: .custom(env), input: .none, output: .string(limit: 16 << 20), error: .string(limit: 16 << 20)
    ) { execution in
        try await whileRunning?(execution)
    }
    let status: Int32
    switch result.terminationStatus {
    case .exited(let code): status = code
    case .signaled(let signal): status = 128 + signal
    }
    return (status, result.standardOutput, result.standardError)
}

func scratch() -> String {
    let path = NSTemporaryDirectory() + "receiptd-cli-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite("receiptd command line", .serialized)
struct ReceiptdCommandTests {
    @Test func versionNamesTheLibraries() async throws {
        let result = try await run(["version"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("libcurl"))
        #expect(result.stdout.contains("SQLite"))
    }

    @Test func checkConfigPrintsEffectiveValues() async throws {
        let result = try await run(["check-config"], environment: ["RECEIPTD_HTTP_PORT": "9999"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("http.port"))
        #expect(result.stdout.contains("9999"))
    }

    /// Secrets given to the CLI: they appear in no output, whatever the command.
    static let secrets = [
        "RECEIPTD_API_PUBLIC_KEYS": "pk_cli_5e81c0d2a4", "RECEIPTD_API_SECRET_KEYS": "sk_cli_a9d3f70b16",
        "RECEIPTD_APP_STORE_SHARED_SECRET": "ss_cli_0c47e2b9d5",
    ]

    static func expectNoSecret(in result: (status: Int32, stdout: String, stderr: String)) {
        for secret in secrets.values {
            #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret), "\(secret) printed")
        }
    }

    @Test func checkConfigRedactsEverySecret() async throws {
        let result = try await run(["check-config"], environment: Self.secrets)
        #expect(result.status == 0)
        #expect(result.stdout.contains("api.secretKeys"))
        Self.expectNoSecret(in: result)
        // A bad value next to the secrets: the error names the key, not the secrets.
        let bad = try await run(
            ["check-config"], environment: Self.secrets.merging(["RECEIPTD_HTTP_PORT": "x"]) { $1 })
        #expect(bad.status == 78)
        Self.expectNoSecret(in: bad)
    }

    @Test func checkConfigNamesABadKeyAndFails() async throws {
        let result = try await run(["check-config"], environment: ["RECEIPTD_HTTP_MAX_BODY_BYTES": "lots"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("http.maxBodyBytes"))
        #expect(result.stderr.contains("RECEIPTD_HTTP_MAX_BODY_BYTES"))
    }

    @Test func migrateDryRunThenMigrate() async throws {
        let dir = scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let env = [
            "RECEIPTD_DATABASE_PATH": dir + "/db.sqlite",
            "RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY": root.path + "/Migrations",
        ]
        let dry = try await run(["migrate", "--dry-run"], environment: env)
        #expect(dry.status == 0)
        #expect(dry.stdout.contains("would apply 0001_subscribers"))
        let real = try await run(["migrate"], environment: env)
        #expect(real.stdout.contains("applied 0001_subscribers"))
        let again = try await run(["migrate"], environment: env)
        #expect(again.stdout.contains("up to date"))
    }

    @Test func serveAnswersAndExitsZeroOnSIGTERM() async throws {
        let dir = scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Below the ephemeral range (32768+), where the other tests' servers and clients take ports.
        let port = Int.random(in: 20000..<32000)
        let env = [
            "RECEIPTD_HTTP_PORT": "\(port)",
            "RECEIPTD_DATABASE_PATH": dir + "/db.sqlite",
            "RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY": root.path + "/Migrations",
            "RECEIPTD_LOG_LEVEL": "trace", "RECEIPTD_ENVIRONMENT": "test",
        ].merging(Self.secrets) { $1 }
        var answered = false
        let result = try await run(["serve"], environment: env) { execution in
            // Another process: polled until it answers.
            answered = try await eventually {
                guard
                    let (data, response) = try? await URLSession.shared.data(
                        from: URL(string: "http://127.0.0.1:\(port)/healthz")!)
                else { return false }
                return (response as? HTTPURLResponse)?.statusCode == 200 && String(decoding: data, as: UTF8.self).contains("ok")
            }
            try execution.send(signal: .terminate)
        }
        #expect(answered)
        #expect(result.status == 0)
        #expect(result.stderr.contains("signal received"))
        #expect(result.stderr.contains("stopped"))
        // Outside `development`, logs are JSON lines: every line one object with the fixed keys.
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count > 3)
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["time"] is String && object?["level"] is String && object?["message"] is String, "\(line)")
        }
        #expect(lines.contains { $0.contains(#""level":"info""#) })  // test.json says warning; the environment, trace
        Self.expectNoSecret(in: result)
    }
}
