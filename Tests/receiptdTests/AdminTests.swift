import Foundation
import ReceiptTesting
import Testing

/// `receiptd verify`, `subscriber`, `backup` and `backfill` against a scratch database and the simulator.
@Suite("receiptd admin commands", .serialized)
struct AdminTests {
    let dir = scratch()
    var env: [String: String] {
        [
            "RECEIPTD_DATABASE_PATH": dir + "/db.sqlite",
            "RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY": root.path + "/Migrations",
            "RECEIPTD_APP_STORE_SIMULATOR": "true",
        ]
    }

    func object(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    @Test func verifyStoresAndPrintsTheDocumentThenSubscriberReadsIt() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/receipt.txt"
        try (simulatedReceipt("trial:cli") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let verified = try await run(["verify", "--receipt", file, "--user", "ann"], environment: env)
        #expect(verified.status == 0, "\(verified.stderr)")
        let document = object(verified.stdout)
        #expect(document?["app_user_id"] as? String == "ann")
        #expect(((document?["entitlements"] as? [String: Any])?["premium"] as? [String: Any])?["state"] as? String == "active")

        let read = try await run(["subscriber", "ann", "--explain"], environment: env)
        #expect(read.status == 0, "\(read.stderr)")
        let premium = (object(read.stdout)?["entitlements"] as? [String: Any])?["premium"] as? [String: Any]
        #expect(premium?["state"] as? String == "active" && premium?["explanation"] != nil)

        let missing = try await run(["subscriber", "nobody"], environment: env)
        #expect(missing.status == 1 && missing.stderr.contains("subscriber_not_found") && missing.stdout.isEmpty)
        let refused = try await run(["verify", "--receipt", file, "--user", ""], environment: env)
        #expect(refused.status == 1 && refused.stderr.contains("invalid_request"))
        let absent = try await run(["verify", "--receipt", dir + "/none"], environment: env)
        #expect(absent.status == 1 && absent.stderr.contains("cannot read"))
    }

    @Test func eraseRemovesASubscriberAndSaysSoOnce() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/receipt.txt"
        try simulatedReceipt("active_monthly:erase-cli").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await run(["verify", "--receipt", file, "--user", "eve-7c1"], environment: env).status == 0)
        let receipt = Data(simulatedReceipt("active_monthly:erase-cli").utf8)
        func stored(_ needle: Data) -> Bool {
            ["/db.sqlite", "/db.sqlite-wal"].contains { name in
                ((try? Data(contentsOf: URL(fileURLWithPath: dir + name))) ?? Data()).range(of: needle) != nil
            }
        }
        #expect(stored(receipt) && stored(Data("eve-7c1".utf8)))
        let erased = try await run(["erase", "eve-7c1"], environment: env)
        #expect(erased.status == 0, "\(erased.stderr)")
        #expect(object(erased.stdout)?["erased"] as? Bool == true && (object(erased.stdout)?["rows"] as? Int ?? 0) > 5)
        let read = try await run(["subscriber", "eve-7c1"], environment: env)
        #expect(read.status == 1 && read.stderr.contains("subscriber_not_found"))
        let again = try await run(["erase", "eve-7c1"], environment: env)
        #expect(again.status == 1 && again.stderr.contains("subscriber_not_found"))
        // The person's receipt and id are in neither the file nor its WAL.
        #expect(!stored(receipt) && !stored(Data("eve-7c1".utf8)))
    }

    @Test func aBinaryReceiptFileIsSentAsBase64() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/receipt.bin"
        try Data("grace_period:bin".utf8).write(to: URL(fileURLWithPath: file))  // not base64 text: raw bytes
        let verified = try await run(["verify", "--receipt", file, "--user", "bo"], environment: env)
        #expect(verified.status == 0, "\(verified.stderr)")
        let premium = (object(verified.stdout)?["entitlements"] as? [String: Any])?["premium"] as? [String: Any]
        #expect(premium?["state"] as? String == "grace_period")
    }

    @Test func backupCopiesAConsistentDatabaseAndNeverOverwrites() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/receipt.txt"
        try simulatedReceipt("active_monthly:bk").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await run(["verify", "--receipt", file, "--user", "cy"], environment: env).status == 0)
        let copy = dir + "/copy.sqlite"
        let backup = try await run(["backup", copy], environment: env)
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.contains("integrity_check ok"))
        // The copy is a working database: the subscriber reads back from it.
        let fromCopy = try await run(["subscriber", "cy"], environment: env.merging(["RECEIPTD_DATABASE_PATH": copy]) { $1 })
        #expect(fromCopy.status == 0 && object(fromCopy.stdout)?["app_user_id"] as? String == "cy")
        let again = try await run(["backup", copy], environment: env)
        #expect(again.status == 1 && again.stderr.contains("never overwrites"))
    }

    @Test(.enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
    func copyDataMovesAnSQLiteDatabaseToPostgreSQLAndKeepsPasswordsOffTheCommandLine() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/receipt.txt"
        try simulatedReceipt("active_monthly:cd").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await run(["verify", "--receipt", file, "--user", "dee"], environment: env).status == 0)
        let url = try await PostgresTestServer.freshDatabase(migrated: false)
        let copied = try await run(["copy-data", "--from", "sqlite:" + dir + "/db.sqlite", "--to", url], environment: env)
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(copied.stdout.contains("copied: every table matches"))
        let fromPostgres = try await run(["subscriber", "dee"], environment: env.merging(["RECEIPTD_DATABASE_URL": url]) { $1 })
        #expect(fromPostgres.status == 0 && object(fromPostgres.stdout)?["app_user_id"] as? String == "dee")
        // A password on the command line is refused before anything connects, and not echoed.
        for withPassword in ["postgresql://postgres:hunter2@127.0.0.1/x", "postgresql://postgres@127.0.0.1/x?password=hunter2"] {
            let refused = try await run(["copy-data", "--from", dir + "/db.sqlite", "--to", withPassword], environment: env)
            #expect(refused.status == 1 && refused.stderr.contains("PGPASSWORD") && !refused.stderr.contains("hunter2"))
        }
        let noTarget = try await run(["copy-data", "--from", dir + "/db.sqlite"], environment: env)
        #expect(noTarget.status == 1 && noTarget.stderr.contains("needs a PostgreSQL target"))
    }

    @Test func backfillReadsTheNotificationHistoryOfAPeriodAndRefusesABadOne() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The in-process simulator has sent nothing: an empty history, read and reported.
        let done = try await run(["backfill", "--since", "2026-11-01", "--until", "2026-11-02T12:00:00Z"], environment: env)
        #expect(done.status == 0, "\(done.stderr)")
        #expect(object(done.stdout)?["listed"] as? Int == 0 && object(done.stdout)?["failed"] as? Int == 0, "\(done.stdout)")
        let backwards = try await run(["backfill", "--since", "2026-11-02", "--until", "2026-11-01"], environment: env)
        #expect(backwards.status == 1 && backwards.stderr.contains("--until"))
        let garbage = try await run(["backfill", "--since", "yesterday"], environment: env)
        #expect(garbage.status == 1 && garbage.stderr.contains("--since"))
    }
}
