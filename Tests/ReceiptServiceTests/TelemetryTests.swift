import Foundation
import ReceiptTesting
import Testing

@testable import ReceiptCore
@testable import ReceiptService

/// The series of `family` in Prometheus text whose labels include every one of `labels`.
private func samples(_ text: String, _ family: String, _ labels: [String] = []) -> [Double] {
    text.split(separator: "\n").filter { line in
        !line.hasPrefix("#") && (line.hasPrefix(family + "{") || line.hasPrefix(family + " "))
            && labels.allSatisfy { line.contains($0) }
    }.compactMap { line in line.split(separator: " ").last.flatMap { Double($0) } }
}

@Suite("Metrics", .serialized)
struct TelemetryTests {
    @Test func theTestFlowShowsEveryFamily() async throws {
        try await withService { port, _ in
            #expect(
                try await postReceipts(port, receiptBody(user: "m1", "active_monthly:m1"))
                    .status == 200)
            #expect(
                try await postReceipts(port, receiptBody(user: "m2", "sandbox_only:m2")).status
                    == 200)
            #expect(
                try await postReceipts(port, receiptBody(user: "m3", "retryable_once:m3"))
                    .status == 200)
            #expect(
                try await postReceipts(port, receiptBody(user: "m4", "status_21003:m4")).status
                    == 422)
            #expect(try await request(port, "GET", "/v1/subscribers/m1", key: TestSecrets.secretKey).status == 200)
            #expect(try await request(port, "GET", "/v1/subscribers/m1", key: TestSecrets.secretKey).status == 200)
            #expect(try await request(port, "GET", "/v1/subscribers/nobody", key: TestSecrets.secretKey).status == 404)
            #expect(try await request(port, "POST", "/v1/notifications/apple", try NotificationProcessorTests.v1()).status == 200)
            #expect(try await request(port, "POST", "/v1/notifications/apple", "[]").status == 400)
            #expect(try await request(port, "GET", "/no/such/path").status == 404)

            #expect(try await request(port, "GET", "/metrics").status == 401)
            let scraped = try await request(port, "GET", "/metrics", key: TestSecrets.secretKey)
            #expect(scraped.status == 200)
            let text = scraped.body
            let receipts = #"route="/v1/receipts""#
            #expect(samples(text, "http_requests_total", [receipts, #"status="200""#]) == [3])
            #expect(samples(text, "http_requests_total", [receipts, #"status="422""#]) == [1])
            let subscriber = #"route="/v1/subscribers/{app_user_id}""#
            #expect(samples(text, "http_requests_total", [subscriber, #"status="200""#]) == [2])
            #expect(samples(text, "http_requests_total", [#"route="unmatched""#, #"status="404""#]) == [1])
            #expect(samples(text, "http_request_duration_seconds_count", [subscriber, #"status="404""#]) == [1])
            #expect(!samples(text, "http_request_duration_seconds_bucket", [receipts]).isEmpty)
            // Apple: the 21007 fallback to sandbox, the 21100 retry, 21003 refused.
            #expect(samples(text, "appstore_exchanges_total", [#"kind="fallback""#, #"environment="sandbox""#]) == [1])
            #expect(samples(text, "appstore_exchanges_total", [#"kind="first""#, #"status="21007""#]) == [1])
            #expect(samples(text, "appstore_exchanges_total", [#"kind="retry""#, #"status="0""#]) == [1])
            #expect(samples(text, "appstore_exchanges_total", [#"status="21100""#]) == [1])
            #expect(samples(text, "appstore_verifications_total", [#"result="invalid_receipt""#]) == [1])
            #expect(samples(text, "appstore_verifications_total", [#"result="valid""#]) == [3])
            #expect(samples(text, "appstore_exchange_duration_seconds_count", [#"environment="production""#]) == [5])
            #expect(samples(text, "notifications_total", [#"version="1""#, #"type="DID_CHANGE_RENEWAL_STATUS""#]).count == 1)
            #expect(samples(text, "notifications_total", [#"outcome="refused_invalid_request""#]) == [1])
            #expect(samples(text, "database_write_duration_seconds_count", [#"outcome="committed""#]).reduce(0, +) >= 4)
            #expect(samples(text, "database_write_duration_seconds_count", [#"durability="full""#]) == [1])
            #expect(samples(text, "http_open_connections") == [1])  // this scrape's own
            #expect(samples(text, "appstore_circuit_state", [#"state="closed""#]) == [1])
            #expect(samples(text, "appstore_circuit_state", [#"state="open""#]) == [0])
            #expect(samples(text, "subscriber_cache_entries") == [1])
        }
    }

    @Test func theRefresherReportsItsBacklog() async throws {
        try await withClockedService { app, port, _, clock async throws in
            for user in ["r1", "r2"] {
                #expect(
                    try await request(
                        port, "POST", "/v1/receipts", receiptBody(user: user, "cancelled:\(user)"), key: TestSecrets.publicKey
                    )
                    .status == 200)
            }
            clock.advance(by: 40 * 86_400_000)  // both ended; Apple has not spoken since
            let pass = await app.refresher.runPass()
            let text = try await request(port, "GET", "/metrics", key: TestSecrets.secretKey).body
            #expect(pass.due == 2)
            #expect(samples(text, "refresher_backlog") == [2])
            #expect(samples(text, "refresher_refreshes_total").reduce(0, +) == 2)
        }
    }
}
