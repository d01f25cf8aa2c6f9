import AppStore
import Entitlements
import JSON
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore
@testable import ReceiptService

/// Product ids are exact bytes in the document too. Two subscriptions whose product ids
/// are canonically equivalent spellings are two entries, each with its own state.
extension SubscriberDocumentTests {
    @Test func equivalentProductSpellingsAreTwoSubscriptions() {
        let day: Int64 = 86_400_000
        let now: Int64 = 1_735_689_600_000
        func transaction(_ id: String, product: String, expires: Int64) -> TransactionRecord {
            TransactionRecord(
                transactionID: id, originalTransactionID: id, productID: product, bundleID: "com.example.app",
                environment: "production", purchaseDate: now - 30 * day, expiresDate: expires, rawJSON: "{}")
        }
        let record = SubscriberRecord(
            appUserID: "u", version: 1, stateHash: nil,
            transactions: [
                transaction("1", product: "caf\u{00E9}", expires: now + day),
                transaction("2", product: "cafe\u{0301}", expires: now - day),
            ],
            renewalHistory: [], transfers: [])
        let settings = EntitlementSettings(rules: EntitlementRules([:]), catalog: Catalog(), policy: DerivationPolicy())
        let rendered = SubscriberDocument(record, settings: settings, now: now).rendered(version: 1, now: now, explain: false)
        guard case .object(let subscriptions)? = rendered["subscriptions"] else {
            Issue.record("no subscriptions in \(rendered)")
            return
        }
        #expect(subscriptions.count == 2)
        #expect(subscriptions[Identifier("caf\u{00E9}")]?["active"] == .bool(true))
        #expect(subscriptions[Identifier("cafe\u{0301}")]?["active"] == .bool(false))
    }
}
