import Foundation
import ReceiptTesting
import Subprocess
import SystemPackage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// README's five-minute tour, as a newcomer runs it: `receiptd serve` on the development
/// configuration (the simulators, its price table and simulated rates), then every `sh` block of
/// the tour in bash, the ports moved off 8080 and 8081. The money step's figures are checked
/// against sums worked out here from the simulators' scripts.
extension ReceiptdCommandTests {
    @Test func theReadmeTourShowsMoneyByHandComputedFigures() async throws {
        let dir = scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (port, rcPort) = (Int.random(in: 20000..<26000), Int.random(in: 26000..<32000))
        let env = [
            "RECEIPTD_HTTP_PORT": "\(port)", "RECEIPTD_REVENUE_CAT_PORT": "\(rcPort)",
            "RECEIPTD_DATABASE_PATH": dir + "/receiptd.sqlite",
            "RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY": root.path + "/Migrations",
        ]
        let blocks = try Self.tourBlocks()
        #expect(blocks.count == 5, "the tour's sh blocks: \(blocks.count)")
        var outputs: [String] = []
        var now: Int64 = 0
        let served = try await run(["serve"], environment: env) { execution in
            defer { try? execution.send(signal: .terminate) }
            let up = try await eventually {
                guard let (_, response) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!)
                else { return false }
                return (response as? HTTPURLResponse)?.statusCode == 200
            }
            guard up else {
                Issue.record("receiptd did not become ready")
                return
            }
            now = Int64(Date().timeIntervalSince1970 * 1000)
            for (n, block) in blocks.enumerated() {
                // A reader takes a moment over the steps before the money's: the rollup keeper
                // takes in the posts within its second meanwhile (`pending_changes` says how many
                // it has not yet).
                if n == 4 { #expect(try await Self.keeperCaughtUp(port: port), "the rollups took in the tour's posts") }
                let script = block.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(port)")
                    .replacingOccurrences(of: "localhost:8081", with: "127.0.0.1:\(rcPort)")
                let result = try await Subprocess.run(
                    .path(FilePath("/bin/bash")), arguments: ["-euo", "pipefail", "-c", script],
                    environment: .custom(["PATH": "/usr/bin:/bin"]), output: .string(limit: 1 << 20),
                    error: .string(limit: 1 << 20))
                #expect(result.terminationStatus.isSuccess, "\(script)\n\(result.standardError)")
                outputs.append(result.standardOutput)
            }
        }
        #expect(served.status == 0, "\(served.stderr.suffix(2000))")
        guard outputs.count == 5 else { return }
        // Steps 1 to 4 answered JSON: alice's, bob's and carol's documents, bob's explanation and events.
        for output in outputs.prefix(4) { #expect(output.hasPrefix("{"), "\(output.prefix(300))") }
        #expect(outputs[1].contains("\"grace_period\""), "bob's explanation names his rule")

        // Step 5, worked by hand from the simulators' scripts (ReceiptScript, PlayScenario):
        // alice's active_monthly paid 9.99 USD 35 days ago and 5 days ago; bob's grace_period 61
        // and 31 days ago (his renewal failed a day ago: in his grace period now); carol's Play
        // purchase 9.99 EUR 5 days ago, 10.789 USD at the simulated 1.08 (10.7892).
        let answers = outputs[4].split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
            .compactMap { $0 as? [String: Any] }
        #expect(answers.count == 3, "\(outputs[4].prefix(500))")
        guard answers.count == 3 else { return }
        let (revenue, mrr, drill) = (answers[0], answers[1], answers[2])
        let day: Int64 = 86_400_000
        let sales: [(at: Int64, milliunits: Int64, new: Bool)] = [
            (now - 35 * day, 9_990, true), (now - 5 * day, 9_990, false), (now - 61 * day, 9_990, true),
            (now - 31 * day, 9_990, false), (now - 5 * day, 10_789, true),
        ]
        #expect(revenue["simulated_rates"] as? [String: String] == ["USD": "1.080000"], "\(revenue)")
        #expect((revenue["missing_rates"] as? [Any])?.isEmpty == true && (revenue["missing_prices"] as? [Any])?.isEmpty == true)
        let months = (revenue["values"] as? [[String: Any]] ?? [])
        #expect(months.count >= 3, "from 90 days ago by month")
        for month in months {
            let label = month["period"] as? String ?? ""
            let inIt = sales.filter { Self.month(of: $0.at) == label }
            let sum = { (sales: [(at: Int64, milliunits: Int64, new: Bool)]) in Self.text(sales.reduce(0) { $0 + $1.milliunits })
            }
            #expect(month["transactions"] as? Int == inIt.count, "\(label)")
            #expect(month["gross"] as? String == sum(inIt) && month["net"] as? String == sum(inIt), "\(label): \(month)")
            #expect(month["new_revenue"] as? String == sum(inIt.filter(\.new)), "\(label)")
            #expect(month["renewal_revenue"] as? String == sum(inIt.filter { !$0.new }), "\(label)")
        }
        #expect(months.contains { $0["gross"] as? String != "0.000" })
        // MRR at each month's end (or now): each subscription from its first payment on, all
        // three still paid for now (bob in his grace period).
        for month in mrr["values"] as? [[String: Any]] ?? [] {
            let label = month["period"] as? String ?? ""
            let end = min(Self.monthEnd(label) - 1, now)
            let paying = [(now - 35 * day, 9_990), (now - 61 * day, 9_990), (now - 5 * day, 10_789)].filter { $0.0 <= end }
            #expect(month["subscriptions"] as? Int == paying.count, "\(label)")
            #expect(month["mrr"] as? String == Self.text(Int64(paying.reduce(0) { $0 + $1.1 })), "\(label): \(month)")
        }
        // This month's MRR drills down to the three people behind it.
        #expect(drill["value"] as? String == "30.769", "\(drill)")
        let people = (drill["contributions"] as? [[String: Any]] ?? []).map {
            "\($0["app_user_id"] as? String ?? "") \($0["value"] as? String ?? "")"
        }
        #expect(people.sorted() == ["alice 9.990", "bob 9.990", "carol 10.789"], "\(drill)")
        #expect(drill["simulated_rates"] as? [String: String] == ["USD": "1.080000"])
    }

    /// Whether the charts' rollups include every change within ten seconds.
    static func keeperCaughtUp(port: Int) async throws -> Bool {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/admin/charts/revenue")!)
        request.setValue("Bearer dev-secret-key", forHTTPHeaderField: "Authorization")
        for _ in 0..<100 {
            if let (data, _) = try? await URLSession.shared.data(for: request),
                let answer = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                answer["pending_changes"] as? Int == 0
            {
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// The `sh` blocks of README's "A five-minute tour" section, in order.
    static func tourBlocks() throws -> [String] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = readme.range(of: "## A five-minute tour") else { return [] }
        let section = readme[start.upperBound...].components(separatedBy: "\n## ").first ?? ""
        var blocks: [String] = []
        var current: [String]?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```sh" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(String(line))
            }
        }
        return blocks
    }

    /// The label of the UTC month holding `ms` (`2026-11-01`).
    static func month(of ms: Int64) -> String {
        let c = Calendar(identifier: .gregorian).dateComponents(
            in: TimeZone(identifier: "UTC")!, from: Date(timeIntervalSince1970: Double(ms / 1000)))
        return String(format: "%04d-%02d-01", c.year!, c.month!)
    }

    /// The first instant after the UTC month labelled `label`.
    static func monthEnd(_ label: String) -> Int64 {
        let parts = label.split(separator: "-").compactMap { Int($0) }
        var c = DateComponents()
        (c.year, c.month, c.day, c.timeZone) = (parts[0], parts[1] + 1, 1, TimeZone(identifier: "UTC"))
        return Int64(Calendar(identifier: .gregorian).date(from: c)!.timeIntervalSince1970 * 1000)
    }

    /// Milliunits as the API writes money: `9990` → `9.990`.
    static func text(_ milliunits: Int64) -> String { String(format: "%d.%03d", milliunits / 1000, milliunits % 1000) }
}
