import DatabaseEngine
import Entitlements
import Identifiers
import JSON
import Storage
import Testing

@testable import ReceiptCore

@Suite("Subscriber document")
struct SubscriberDocumentTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"), (1_611_147_600_000, "2021-01-20T13:00:00.000Z"),
        (951_782_400_123, "2000-02-29T00:00:00.123Z"), (4_102_444_799_999, "2099-12-31T23:59:59.999Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
    ])
    func timesAreRFC3339UTC(ms: Int64, text: String) {
        #expect(SubscriberDocument.time(ms) == .string(text))
        #expect(SubscriberDocument.time(nil) == .null)
    }
}

/// Product ids are exact bytes in the document too. Two subscriptions whose product ids
/// are canonically equivalent spellings are two entries, each with its own state.
extension SubscriberDocumentTests {
    @Test func equivalentProductSpellingsAreTwoSubscriptions() {
        let day: Int64 = 86_400_000
        let now: Int64 = 1_735_689_600_000
        func purchase(_ id: String, product: String, expires: Int64) -> Purchase {
            Purchase(
                transactionID: id, originalTransactionID: id, productID: product, purchaseDate: now - 30 * day,
                expiresDate: expires)
        }
        let facts = Facts(purchases: [
            purchase("1", product: "caf\u{00E9}", expires: now + day),
            purchase("2", product: "cafe\u{0301}", expires: now - day),
        ])
        let settings = EntitlementSettings(rules: EntitlementRules([:]), catalog: Catalog(), policy: DerivationPolicy())
        let rendered = SubscriberDocument(appUserID: "u", facts: facts, settings: settings, now: now)
            .rendered(version: 1, now: now, explain: false)
        guard case .object(let subscriptions)? = rendered["subscriptions"] else {
            Issue.record("no subscriptions in \(rendered)")
            return
        }
        #expect(subscriptions.count == 2)
        #expect(subscriptions[Identifier("caf\u{00E9}")]?["active"] == .bool(true))
        #expect(subscriptions[Identifier("cafe\u{0301}")]?["active"] == .bool(false))
    }
}

/// The body, the cached template and the fingerprint are cut from bytes written once; they must
/// be exactly what writing the whole document gives, or every stored version would move.
extension SubscriberDocumentTests {
    @Test(arguments: [0, 1, 3])
    func theBodyAndFingerprintAreTheWholeDocumentsBytes(purchases: Int) {
        let day: Int64 = 86_400_000
        let now: Int64 = 1_735_689_600_000
        var facts = Facts(purchases: [])
        for i in 0..<purchases {
            facts.purchases.append(
                Purchase(
                    transactionID: "s\(i)", originalTransactionID: "s\(i)", productID: "monthly\(i)", purchaseDate: now - day,
                    expiresDate: now + Int64(i) * day))
            facts.purchases.append(
                Purchase(transactionID: "p\(i)", originalTransactionID: "p\(i)", productID: "gems", purchaseDate: now - day))
        }
        let settings = EntitlementSettings(
            rules: EntitlementRules(["pro": ["monthly0", "monthly1"]]), catalog: Catalog(), policy: DerivationPolicy())
        let document = SubscriberDocument(appUserID: "u\u{0301}\"", facts: facts, settings: settings, now: now)
        #expect(document.body(version: 7, now: now + 1) == document.rendered(version: 7, now: now + 1, explain: false).jsonBytes)
        #expect(document.fingerprint == SubscriberDocument.fnv1a64([JSONValue.object(document.content).jsonBytes]))
        // FNV-1a 64 of the empty input is its offset basis: the hash itself is unchanged.
        #expect(SubscriberDocument.fnv1a64([[]]) == "cbf29ce484222325")
        #expect(SubscriberDocument.fnv1a64([Array("ab".utf8)]) == SubscriberDocument.fnv1a64([[0x61], [], [0x62]]))
    }
}

/// `app_transaction_id`: where a signed transaction stated it, the subscription (from any of its
/// periods when the current one came from verifyReceipt) and the purchase name it; elsewhere the
/// key is absent, so documents without it read (and fingerprint) as before.
extension SubscriberDocumentTests {
    @Test func theAppTransactionIDIsShownWhereStated() {
        let day: Int64 = 86_400_000
        let now: Int64 = 1_735_689_600_000
        let facts = Facts(purchases: [
            Purchase(
                transactionID: "1", originalTransactionID: "1", productID: "monthly", purchaseDate: now - 40 * day,
                expiresDate: now - 10 * day, appTransactionID: "7001"),
            Purchase(
                transactionID: "2", originalTransactionID: "1", productID: "monthly", purchaseDate: now - 10 * day,
                expiresDate: now + 20 * day),
            Purchase(transactionID: "3", originalTransactionID: "3", productID: "lifetime", purchaseDate: now - day),
            Purchase(
                transactionID: "4", originalTransactionID: "4", productID: "coins", purchaseDate: now - day,
                appTransactionID: "7001"),
        ])
        let settings = EntitlementSettings(rules: EntitlementRules([:]), catalog: Catalog(), policy: DerivationPolicy())
        let document = SubscriberDocument(appUserID: "u", facts: facts, settings: settings, now: now)
        let rendered = document.rendered(version: 1, now: now, explain: false)
        #expect(rendered["subscriptions"]?["monthly"]?["app_transaction_id"] == .string("7001"))
        #expect(rendered["non_subscriptions"]?["coins"]?.array?.first?["app_transaction_id"] == .string("7001"))
        guard case .object(let lifetime)? = rendered["non_subscriptions"]?["lifetime"]?.array?.first else {
            Issue.record("no lifetime purchase")
            return
        }
        #expect(lifetime["app_transaction_id"] == nil)
        // Without any: no key at all, and the fingerprint tells the two apart.
        var stripped = facts
        for i in stripped.purchases.indices { stripped.purchases[i].appTransactionID = nil }
        let before = SubscriberDocument(appUserID: "u", facts: stripped, settings: settings, now: now)
        #expect(before.fingerprint != document.fingerprint)
        #expect(before.rendered(version: 1, now: now, explain: false)["subscriptions"]?["monthly"]?["app_transaction_id"] == nil)
    }
}

/// A refunded entry says how: `refund_type` and `refund_percentage` (null when the store did not
/// say), and of several units bought at once how many went back; entries not refunded have none.
extension SubscriberDocumentTests {
    @Test func aRefundedEntrySaysHowItWasRefunded() {
        let day: Int64 = 86_400_000
        let now: Int64 = 1_735_689_600_000
        var monthly = Purchase(
            transactionID: "1", originalTransactionID: "1", productID: "monthly", purchaseDate: now - 10 * day,
            expiresDate: now + 20 * day, cancellationDate: now - day)
        monthly.commerce.revocationType = "REFUND_PRORATED"
        monthly.commerce.revocationPercentage = 66_667
        var coins = Purchase(
            transactionID: "2", originalTransactionID: "2", productID: "coins_100", purchaseDate: now - 2 * day,
            cancellationDate: now - day, quantity: 3)
        coins.commerce.revocationType = "REFUND_PRORATED"
        coins.commerce.revocationPercentage = 33_333
        let old = Purchase(
            transactionID: "3", originalTransactionID: "3", productID: "lifetime", purchaseDate: now - 2 * day,
            cancellationDate: now - day)
        let settings = EntitlementSettings(
            rules: EntitlementRules([:]), catalog: Catalog(["coins_100": .consumable]), policy: DerivationPolicy())
        let rendered = SubscriberDocument(
            appUserID: "u", facts: Facts(purchases: [monthly, coins, old]), settings: settings, now: now
        ).rendered(version: 1, now: now, explain: false)
        let subscription = rendered["subscriptions"]?["monthly"]
        #expect(subscription?["state"] == .string("refunded"))
        #expect(subscription?["refund_type"] == .string("refund_prorated"))
        #expect(subscription?["refund_percentage"] == .string("66.667"))
        let units = rendered["non_subscriptions"]?["coins_100"]?.array?.first
        #expect(units?["refunded_quantity"] == .int(1) && units?["quantity"] == .int(3))
        // verifyReceipt's refund: the date alone.
        let lifetime = rendered["non_subscriptions"]?["lifetime"]?.array?.first
        #expect(
            lifetime?["active"] == .bool(false) && lifetime?["refund_type"] == .null && lifetime?["refund_percentage"] == .null)
        guard case .object(let fields)? = lifetime else { return }
        #expect(fields["refunded_quantity"] == nil)
    }
}
