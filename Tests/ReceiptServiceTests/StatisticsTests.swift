import Foundation
import ReceiptTesting
import Testing

/// GET /v1/admin/stats: the overview's numbers.
@Suite("Statistics over the API")
struct StatisticsTests {
    private let day: Int64 = 86_400_000

    private func stats(_ port: Int, _ query: String = "", key: String = TestSecrets.secretKey) async throws -> Reply {
        try await get(port, "/v1/admin/stats" + query, key: key)
    }

    private func products(_ reply: Reply) -> [String: Int] {
        let list = (reply.json["subscribers"] as? [String: Any])?["products"] as? [[String: Any]] ?? []
        var counts: [String: Int] = [:]
        for p in list {
            counts["\(p["product_id"] ?? "")/\(p["kind"] ?? "")/\(p["state"] ?? "")"] = p["subscribers"] as? Int
        }
        return counts
    }

    private func totals(_ reply: Reply) -> [String: Int] {
        var totals: [String: Int] = [:]
        for bucket in reply.json["buckets"] as? [[String: Any]] ?? [] {
            for (type, n) in bucket["counts"] as? [String: Int] ?? [:] { totals[type, default: 0] += n }
        }
        return totals
    }

    @Test func countsSubscribersByProductAndStateAndEventsPerDay() async throws {
        try await withClockedService { _, port, _, clock in
            for i in 0..<3 { #expect(try await postReceipt(port, user: "m\(i)", "active_monthly:m\(i)").status == 200) }
            for i in 0..<2 { #expect(try await postReceipt(port, user: "t\(i)", "trial:t\(i)").status == 200) }
            #expect(try await postReceipt(port, user: "life", "non_consumable:life").status == 200)
            #expect(try await postReceipt(port, user: "gone", "expired_voluntary:gone").status == 200)

            let now = try await stats(port)
            #expect(now.status == 200, "\(now.body)")
            #expect((now.json["subscribers"] as? [String: Any])?["total"] as? Int == 7)
            #expect((now.json["subscribers"] as? [String: Any])?["stale"] as? Int == 0)
            #expect(
                products(now) == [
                    "monthly/subscription/active": 5, "monthly/subscription/expired": 1,
                    "lifetime/non_consumable/active": 1,
                ])
            // The last 30 days by default, one bucket a day, each at a UTC midnight.
            let buckets = now.json["buckets"] as? [[String: Any]] ?? []
            #expect(buckets.count == 31 || buckets.count == 30)
            #expect(buckets.allSatisfy { ($0["start"] as? String)?.hasSuffix("T00:00:00.000Z") == true })
            let seen = totals(now)
            #expect(seen["trial_started"] == 2)
            #expect(seen["renewal"] == 3, "the active ones renewed in the range; the expired one before it")
            #expect(seen["expiration"] == 1)
            #expect(seen["refund"] == 0 && seen["billing_issue"] == 0, "every counted type is present, zero or not")
            let apple = now.json["apple"] as? [String: Any] ?? [:]
            let exchanges = apple["verifications"] as? [[String: Any]] ?? []
            #expect(exchanges.first { $0["outcome"] as? String == "valid" }?["count"] as? Int == 7)
            #expect((apple["circuit"] as? [String: Any])?["circuit"] as? String == "closed")

            // A week: buckets start on Mondays; the whole history of one purchase falls in range.
            let weeks = try await stats(port, "?interval=week&from=2026-06-01&to=2026-10-01")
            #expect(weeks.status == 200, "\(weeks.body)")
            let starts = (weeks.json["buckets"] as? [[String: Any]] ?? []).compactMap { $0["start"] as? String }
            #expect(starts.first == "2026-06-01T00:00:00.000Z", "2026-06-01 was a Monday")
            #expect(totals(weeks)["initial_purchase"] == 5, "3 monthly, 1 lifetime, 1 expired: the trials began with a trial")

            // Time passes the monthly expiries with nobody reading them: the overview re-derives them.
            clock.advance(by: 40 * day)
            let later = try await stats(port)
            #expect(products(later)["monthly/subscription/active"] == nil, "\(products(later))")
            #expect(products(later)["monthly/subscription/expired"] == 6)
            #expect(products(later)["lifetime/non_consumable/active"] == 1)
            // The monthly ones expired 15 days ago; the trials 35 days ago, out of the last 30 days.
            #expect(totals(later)["expiration"] == 3, "\(totals(later))")
        }
    }

    @Test func promotionsAreCounted() async throws {
        try await withService { port, _ in
            #expect(try await postReceipt(port, user: "p", "expired_voluntary:p").status == 200)
            let granted = try await post(
                port, "/v1/subscribers/p/entitlements/premium/promotional", #"{"duration":"P7D","reason":"outage"}"#,
                key: TestSecrets.secretKey)
            #expect(granted.status == 201, "\(granted.body)")
            let reply = try await stats(port)
            #expect(products(reply)["premium/promotional/active"] == 1)
            #expect(totals(reply)["promotional_grant"] == 1)
            let types = reply.json["event_types"] as? [String] ?? []
            #expect(types.starts(with: ["initial_purchase", "trial_started", "trial_converted", "renewal"]))
            #expect(types.contains("promotional_grant"))
        }
    }

    @Test func refusesBadRangesAndPublicKeys() async throws {
        try await withService { port, _ in
            #expect(try await stats(port, key: TestSecrets.publicKey).status == 403)
            #expect(try await get(port, "/v1/admin/stats").status == 401)
            for query in [
                "?interval=month", "?from=yesterday", "?to=2026-13-01", "?from=2026-10-02&to=2026-10-01",
                "?interval=hour&from=2020-01-01&to=2026-01-01",
            ] {
                let reply = try await stats(port, query)
                #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(query): \(reply.body)")
            }
            let hours = try await stats(port, "?interval=hour&from=2026-10-01T00:00:00Z&to=2026-10-02T00:00:00Z")
            #expect((hours.json["buckets"] as? [Any])?.count == 24)
        }
    }
}
