import Foundation
import Testing

@testable import ReceiptTesting

/// The tests' PostgreSQL servers start on a port chosen free; one taken before the server binds
/// it (a connection of the tests running beside can take it as its own end) is replaced by
/// another, as the server's log says; nothing else is retried, and the log's end says why.
@Suite("PostgreSQL test servers")
struct PostgresTestServerTests {
    private let log = FileManager.default.temporaryDirectory.appendingPathComponent(
        "receiptd-port-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
    ).path

    private func failing(_ message: String) -> PostgresTestServer.SetupError {
        try? message.write(toFile: log, atomically: true, encoding: .utf8)
        return PostgresTestServer.SetupError(description: "pg_ctl ended with status 256: could not start server")
    }

    @Test func aPortTakenBeforeTheServerBindsItIsReplaced() throws {
        defer { try? FileManager.default.removeItem(atPath: log) }
        var tried: [Int] = []
        let port = try PostgresTestServer.onAFreePort(avoiding: [5_432], log: log) { port throws(PostgresTestServer.SetupError) in
            tried.append(port)
            if tried.count < 3 {
                throw failing("LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use")
            }
        }
        #expect(tried.count == 3 && port == tried[2])
        #expect(Set(tried).count == 3 && !tried.contains(5_432))
    }

    @Test func anyOtherFailureIsThrownAtOnceAndAPortTakenFiveTimesToo() {
        defer { try? FileManager.default.removeItem(atPath: log) }
        var tries = 0
        let error = #expect(throws: PostgresTestServer.SetupError.self) {
            _ = try PostgresTestServer.onAFreePort(log: log) { _ throws(PostgresTestServer.SetupError) in
                tries += 1
                throw failing("FATAL:  data directory has wrong ownership")
            }
        }
        #expect(tries == 1)
        #expect(error?.description.hasSuffix("its log: FATAL:  data directory has wrong ownership") == true)
        tries = 0
        #expect(throws: PostgresTestServer.SetupError.self) {
            _ = try PostgresTestServer.onAFreePort(log: log) { _ throws(PostgresTestServer.SetupError) in
                tries += 1
                throw failing("Address already in use")
            }
        }
        #expect(tries == 5)
    }
}
