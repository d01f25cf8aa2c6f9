import DatabaseEngine
import Entitlements
import Storage
import Testing

@testable import ReceiptCore

private let settings = EntitlementSettings(rules: EntitlementRules([:]), catalog: Catalog(), policy: DerivationPolicy())
private func document(_ user: String) -> SubscriberDocument {
    SubscriberDocument(appUserID: user, facts: Facts(purchases: []), settings: settings, now: 0)
}
private func change(_ sequence: Int64, _ user: String) -> ChangeLog.Change {
    ChangeLog.Change(sequence: sequence, appUserID: user, at: 0)
}

@Suite("Subscriber cache: who changed")
struct SubscriberCacheRulesTests {
    @Test func aChangeVoidsItsSubscriberOnly() {
        let cache = SubscriberCache(capacity: 10)
        cache.store("a", document: document("a"), version: 1, sequence: 5, now: 0)
        cache.store("b", document: document("b"), version: 1, sequence: 5, now: 0)
        cache.invalidate([change(6, "a")])
        #expect(cache.entry("a", now: 0) == nil)
        #expect(cache.entry("b", now: 0) != nil)
    }

    @Test func aChangeTheReadAlreadySawLeavesItsEntry() {
        let cache = SubscriberCache(capacity: 10)
        cache.store("a", document: document("a"), version: 2, sequence: 7, now: 0)  // read after change 7 committed
        cache.invalidate([change(7, "a")])  // heard of it only now
        #expect(cache.entry("a", now: 0)?.version == 2)
    }

    @Test func aDocumentReadBeforeAChangeAndStoredAfterItIsRefused() {
        let cache = SubscriberCache(capacity: 10)
        cache.invalidate([change(8, "a")])
        cache.store("a", document: document("a"), version: 1, sequence: 7, now: 0)  // its read began before 8
        #expect(cache.entry("a", now: 0) == nil)
        cache.store("b", document: document("b"), version: 1, sequence: 7, now: 0)  // 8 was about someone else
        #expect(cache.entry("b", now: 0) != nil)
        cache.store("a", document: document("a"), version: 2, sequence: 8, now: 0)
        #expect(cache.entry("a", now: 0)?.version == 2)
    }

    @Test func pastWhatIsRememberedAnOldReadIsRefused() {
        let cache = SubscriberCache(capacity: 10)
        let many = (1...Int64(SubscriberCache.remembered + 1)).map { change($0, "other\($0)") }
        cache.invalidate(many)
        cache.store("a", document: document("a"), version: 1, sequence: 0, now: 0)  // change 1 is forgotten
        #expect(cache.entry("a", now: 0) == nil)
        cache.store("a", document: document("a"), version: 1, sequence: 1, now: 0)  // 2… are remembered: none is a's
        #expect(cache.entry("a", now: 0) != nil)
    }

    @Test func changesGoneUnheardForgetEverythingReadBefore() {
        let cache = SubscriberCache(capacity: 10)
        cache.store("a", document: document("a"), version: 1, sequence: 5, now: 0)
        cache.forgetAll(upTo: 10)  // PostgreSQL: the listening connection was lost and is back
        #expect(cache.entry("a", now: 0) == nil)
        cache.store("a", document: document("a"), version: 1, sequence: 9, now: 0)  // read before: refused
        #expect(cache.entry("a", now: 0) == nil)
        cache.store("a", document: document("a"), version: 2, sequence: 10, now: 0)
        #expect(cache.entry("a", now: 0)?.version == 2)
    }

    @Test func anOffCacheKeepsNothing() {
        let cache = SubscriberCache(capacity: 0)
        cache.store("a", document: document("a"), version: 1, sequence: 0, now: 0)
        #expect(cache.entry("a", now: 0) == nil)
        #expect(cache.count == 0)
    }
}
