import Foundation
import ReceiptTesting
import Testing

/// The web console's files (Docs/console.md): served from the binary, under a strict policy.
/// What the page does is tested in a real browser (Scripts/console_test.py).
@Suite("The console's files")
struct ConsoleTests {
    @Test func thePageAndItsFilesAreServedUnderAStrictPolicy() async throws {
        try await withService { port, _ in
            let page = try await get(port, "/console")
            #expect(page.status == 200)
            let head = page.head.lowercased()
            #expect(head.contains("content-type: text/html; charset=utf-8"))
            #expect(head.contains("content-security-policy: default-src 'none'; script-src 'self'; style-src 'self';"))
            #expect(head.contains("x-content-type-options: nosniff") && head.contains("x-frame-options: deny"))
            // No inline script or handler: the policy would refuse them, and none is needed.
            #expect(page.body.contains(#"<script src="/console/console.js" defer></script>"#))
            #expect(page.body.components(separatedBy: "<script").count == 2)
            #expect(page.body.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil)
            #expect(!page.body.contains("style="))

            let script = try await get(port, "/console/console.js")
            #expect(script.status == 200 && script.head.lowercased().contains("content-type: text/javascript"))
            // Values are written as text: no HTML sinks in the script.
            for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
                #expect(!script.body.contains(sink), "\(sink)")
            }
            let style = try await get(port, "/console/console.css")
            #expect(style.status == 200 && style.head.lowercased().contains("content-type: text/css"))

            // Revalidation by ETag; no key needed, and no data in them.
            let tag = page.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }.map {
                String($0.dropFirst(5)).trimmingCharacters(in: .whitespaces)
            }
            let again = try await get(port, "/console", headers: "If-None-Match: \(tag ?? "")\r\n")
            #expect(again.status == 304)
            #expect(try await get(port, "/console/other.js").status == 404)
        }
    }

    @Test func aTransactionIdFindsItsHolderAndNotificationsFilter() async throws {
        try await withService { port, _ in
            let posted = try await postReceipt(port, user: "holder", "active_monthly:find-me")
            let original = (posted.json["subscriptions"] as? [String: [String: Any]])?["monthly"]?["original_transaction_id"]
            let id = try #require(original as? String)
            let found = try await get(port, "/v1/admin/transactions/\(id)", key: TestSecrets.secretKey)
            #expect(found.status == 200 && found.json["app_user_id"] as? String == "holder", "\(found.body)")
            #expect(found.json["product_id"] as? String == "monthly")
            let missing = try await get(port, "/v1/admin/transactions/999999", key: TestSecrets.secretKey)
            #expect(missing.status == 404 && missing.errorCode == "purchase_not_found")
            #expect(try await get(port, "/v1/admin/transactions/\(id)", key: TestSecrets.publicKey).status == 403)

            let none = try await get(port, "/v1/notifications?type=DID_RENEW&app_user_id=holder", key: TestSecrets.secretKey)
            #expect(none.status == 200 && (none.json["notifications"] as? [Any])?.isEmpty == true, "\(none.body)")
            let bad = try await get(port, "/v1/notifications?type=DID%20RENEW", key: TestSecrets.secretKey)
            #expect(bad.status == 400 && bad.errorCode == "invalid_request")
        }
    }
}
