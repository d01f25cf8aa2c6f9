import Foundation
import ReceiptTesting
import Testing

/// `receiptd backfill-prices`, `build-rollups` and `export-data`, in the admin commands' suite (its scratch
/// database, the in-process simulator, its helpers).
extension AdminTests {
    /// Apple's prices arriving is tested in-process (ReceiptServiceTests' Charts API): here a
    /// second process's simulator knows none of the purchases the first one verified, which is
    /// what a purchase Apple does not know looks like.
    @Test func backfillPricesAsksOncePerPurchaseEvenWhenAppleKnowsNone() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (user, scenario) in [("ann", "trial:bp1"), ("ben", "active_monthly:bp2")] {
            let file = dir + "/\(user).txt"
            try (simulatedReceipt(scenario) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let verified = try await run(["verify", "--receipt", file, "--user", user], environment: env)
            #expect(verified.status == 0, "\(verified.stderr)")
        }
        let first = try await run(["backfill-prices"], environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        let summary = object(first.stdout)
        #expect(summary?["asked"] as? Int == 2 && summary?["unknown"] as? Int == 2, "\(first.stdout)")
        #expect(summary?["priced"] as? Int == 0 && summary?["failed"] as? Int == 0, "\(first.stdout)")
        let second = try await run(["backfill-prices"], environment: env)
        #expect(object(second.stdout)?["asked"] as? Int == 0, "\(second.stdout)")
        let again = try await run(["backfill-prices", "--again", "--limit", "1"], environment: env)
        #expect(again.status == 0 && object(again.stdout)?["asked"] as? Int == 1, "\(again.stdout)")
        let bad = try await run(["backfill-prices", "--limit", "0"], environment: env)
        #expect(bad.status == 1 && bad.stderr.contains("--limit"))
    }

    @Test func exportDataWritesADayFilePerTableAndRefusesBadArguments() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/ann.txt"
        try (simulatedReceipt("active_monthly:ex1") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await run(["verify", "--receipt", file, "--user", "ann"], environment: env).status == 0)
        let today = String(ISO8601DateFormatter().string(from: Date()).prefix(10))
        let out = dir + "/export"
        let done = try await run(["export-data", "--since", today, "--format", "csv", out], environment: env)
        #expect(done.status == 0, "\(done.stderr)")
        let tables = object(done.stdout)
        #expect((tables?["subscribers"] as? [String: Any])?["rows"] as? Int == 1, "\(done.stdout)")
        #expect((tables?["transactions"] as? [String: Any])?["files"] as? Int == 1, "\(done.stdout)")
        #expect(FileManager.default.fileExists(atPath: out + "/transactions/\(today).csv.gz"))
        #expect(FileManager.default.fileExists(atPath: out + "/schema.json"))
        for (arguments, complaint) in [
            (["export-data", "--since", "yesterday", out], "--since"),
            (["export-data", "--since", today, "--until", "2000-01-01", out], "--until"),
            (["export-data", "--since", today, "--format", "parquet", out], "--format"),
        ] {
            let refused = try await run(arguments, environment: env)
            #expect(refused.status == 1 && refused.stderr.contains(complaint), "\(arguments): \(refused.stderr)")
        }
    }

    @Test func buildRollupsRebuildsThenAppliesChanges() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func verify(_ user: String, _ scenario: String) async throws {
            let file = dir + "/\(user).txt"
            try (simulatedReceipt(scenario) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            #expect(try await run(["verify", "--receipt", file, "--user", user], environment: env).status == 0)
        }
        try await verify("ann", "active_monthly:br1")
        try await verify("ben", "trial:br2")
        let built = try await run(["build-rollups"], environment: env)
        #expect(built.status == 0, "\(built.stderr)")
        #expect(object(built.stdout)?["holders"] as? Int == 2, "\(built.stdout)")
        let idle = try await run(["build-rollups"], environment: env)
        #expect(object(idle.stdout)?["holders"] as? Int == 0 && object(idle.stdout)?["changes"] as? Int == 0, "\(idle.stdout)")
        try await verify("cat", "active_monthly:br3")
        let applied = try await run(["build-rollups"], environment: env)
        #expect(object(applied.stdout)?["changes"] as? Int ?? 0 >= 1, "\(applied.stdout)")
        #expect(object(applied.stdout)?["holders"] as? Int == 0, "\(applied.stdout)")
        // New rates move every converted figure: the next build starts over.
        let rates = dir + "/rates.csv"
        try "Date, USD, GBP,\n2026-11-24, 1.0512, 0.8311,\n".write(toFile: rates, atomically: true, encoding: .utf8)
        #expect(try await run(["rates", "import", rates], environment: env).status == 0)
        let rebuilt = try await run(["build-rollups"], environment: env)
        #expect(object(rebuilt.stdout)?["holders"] as? Int == 3, "\(rebuilt.stdout)")
    }
}
