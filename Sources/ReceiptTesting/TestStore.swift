package import Clocks
package import Entitlements
import Identifiers
package import JSON
package import ReceiptCore

/// A third store, made up, plugged in through the seam Apple and Google use (``PurchaseStore``):
/// POST /v1/receipts reads `{"store": "test_store", "code": "<product>.<tag>"}`, the store
/// answers with facts, and from there its purchases take the one road to the document, events
/// and webhooks. It stays in the tests so the seam cannot rot: a store that needs more than this
/// file and its test to be wired is a seam that broke (issue 58).
///
/// Its "store" is a function of the code and the clock: `monthly.<tag>` is a monthly
/// subscription bought a day ago, `lifetime.<tag>` a one-time purchase; `down.<tag>` is the store
/// not answering; `"bare": true` makes the code a bare id rather than the device's proof. What it
/// states is kept as raw JSON (`{"code", "bought"}`), from which its
/// mapping states the same facts again.
package struct TestStore: PurchaseStore {
    package static let store = Store(
        "test_store",
        rules: StoreRules(
            displayName: "Test Store", purchaseNoun: "Test Store", errorName: "test_store", nameInSentences: "The Test Store",
            misconfigured: "The Test Store refused receiptd's settings.", commission: .playServiceFee, readsStatedState: false,
            offers: .byKind, namedInEvents: true))

    let clock: WallClock
    package init(clock: WallClock) { self.clock = clock }

    package var store: Store { Self.store }
    package var mapping: StoredFactsMapping {
        StoredFactsMapping(
            purchase: { stored in
                guard let again = Self.facts(raw: stored.rawJSON)?.purchases.first else { return nil }
                return Stated(again.fact, bundleID: stored.bundleID, rawJSON: stored.rawJSON)
            },
            renewal: { _ in nil })
    }

    /// `code`: `<product>.<tag>`.
    package func claim(in body: JSONValue) throws(ReceiptError) -> (code: String, bare: Bool) {
        guard case .string(let code)? = body["code"], code.split(separator: ".").count == 2 else {
            throw .invalidRequest("`code` is required for a `test_store` purchase: `<product>.<tag>`.")
        }
        return (code, body["bare"] == .bool(true))
    }

    package func verify(_ claim: (code: String, bare: Bool)) async throws(ReceiptError) -> StoreAnswer {
        let code = claim.code
        if code.hasPrefix("down.") { throw .storeUnavailable(Self.store, retryAfterSeconds: 7) }
        let bought: Int64 = clock.now() - 86_400_000
        let answer = JSONValue.object(strings: ["code": .string(code), "bought": .int(bought)])
        let raw = String(decoding: answer.jsonBytes, as: UTF8.self)
        guard let facts = Self.facts(raw: raw) else { throw .invalidRequest("`code` names no purchase.") }
        return StoreAnswer(
            facts: facts,
            proven: Set(
                facts.purchases.flatMap { [Identifier($0.fact.transactionID), Identifier($0.fact.originalTransactionID)] }),
            possession: claim.bare ? .bareID : .proven)
    }

    /// The one mapping: what the store's answer states.
    static func facts(raw: String) -> VerifiedFacts? {
        guard let json = try? JSONValue.parse(Array(raw.utf8)), case .string(let code)? = json["code"],
            let bought = json["bought"]?.int64
        else { return nil }
        let parts = code.split(separator: ".").map(String.init)
        guard parts.count == 2, ["monthly", "lifetime"].contains(parts[0]) else { return nil }
        let monthly = parts[0] == "monthly"
        let purchase = Purchase(
            transactionID: "ts-\(parts[1])-1", originalTransactionID: "ts-\(parts[1])", productID: parts[0],
            purchaseDate: bought, originalPurchaseDate: bought, expiresDate: monthly ? bought + 30 * 86_400_000 : nil,
            isTrialPeriod: false, isInIntroOfferPeriod: false, isUpgraded: false, ownershipType: "PURCHASED",
            environment: .production, store: store,
            commerce: Commerce(price: Price(milliunits: 4990, currency: "USD", source: .store), transactionReason: "PURCHASE"))
        return VerifiedFacts(
            environment: .production, purchases: [Stated(purchase, bundleID: "com.example.app", rawJSON: raw)])
    }
}
