import DatabaseEngine
import Entitlements
import JSON
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore
@testable import Webhooks

private let day: Int64 = 86_400_000
private let t0: Int64 = 1_700_000_000_000

private func monthly(bundle: String = "b") -> VerifiedFacts {
    VerifiedFacts(
        environment: .sandbox,
        purchases: [
            Stated(
                Purchase(
                    transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: t0,
                    expiresDate: t0 + 30 * day, environment: .sandbox),
                bundleID: bundle, rawJSON: "{}")
        ])
}

private let secret = "whsec-0123456789abcdef"

private func state(_ endpoints: [WebhookEndpoint]) -> SubscriberState {
    SubscriberState(
        settings: EntitlementSettings(
            rules: EntitlementRules(["pro": ["monthly"]]), catalog: Catalog(), policy: DerivationPolicy()),
        outbox: WebhookOutbox(endpoints: endpoints))
}

private func migrated() throws -> Database {
    let db = try Database(path: ":memory:")
    _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
    return db
}

/// Stores `facts` for `user` and records what they derive to at `now`, in one transaction that
/// `rollBack` undoes.
private func save(
    _ facts: VerifiedFacts, user: String, _ state: SubscriberState, in db: Database, now: Int64, rollBack: Bool = false
)
    throws -> SubscriberState.Recorded?
{
    struct RolledBack: Error {}
    do {
        return try db.transaction {
            _ = try state.store(facts, for: user, policy: .transfer, in: db, now: now)
            let subscriber = try #require(try ReceiptStore(db).subscriber(user))
            let pinned = subscriber.pinnedFacts
            let recorded = try state.record(
                subscriber, document: state.document(subscriber, facts: pinned, now: now),
                events: state.events(subscriber, facts: pinned, now: now), in: db, now: now)
            if rollBack { throw RolledBack() }
            return recorded
        }
    } catch is RolledBack {
        return nil
    }
}

@Suite("Webhook outbox")
struct WebhookOutboxTests {
    @Test func aRolledBackSaveLeavesNoDeliveryACommittedOneLeavesOnePerEventAndEndpoint() throws {
        let db = try migrated()
        let hooks = state([
            WebhookEndpoint(name: "crm", url: "https://crm.example", secrets: [secret]),
            WebhookEndpoint(name: "billing", url: "https://b.example", eventTypes: ["refund"], secrets: [secret]),
        ])
        #expect(try save(monthly(), user: "u", hooks, in: db, now: t0 + day, rollBack: true) == nil)
        for table in ["events", "webhook_messages", "webhook_deliveries", "subscribers"] {
            #expect(try db.scalarInt("SELECT count(*) FROM \(table)") == 0, "\(table)")
        }
        let recorded = try #require(try save(monthly(), user: "u", hooks, in: db, now: t0 + day))
        // initial_purchase only (a month ahead of its expiry): to crm; billing takes refunds alone.
        #expect(recorded.events.added == 1 && recorded.deliveries == 1)
        #expect(try db.scalarText("SELECT endpoint || ':' || status FROM webhook_deliveries") == "crm:pending")
        // A month later the expiry is noticed on read: one more event, one more delivery, same queue.
        let later = try #require(try save(monthly(), user: "u", hooks, in: db, now: t0 + 31 * day))
        #expect(later.events.added == 1 && later.deliveries == 1, "\(later)")  // expiration
        #expect(try db.scalarInt("SELECT count(*) FROM webhook_deliveries WHERE due_at IS NULL") == 1)
    }

    @Test func thePayloadCarriesTheEventAsListedAndTheDocumentAfterTheChange() throws {
        let db = try migrated()
        let hooks = state([WebhookEndpoint(name: "crm", url: "https://crm.example", secrets: [secret])])
        _ = try save(monthly(), user: "zoë", hooks, in: db, now: t0 + day)
        let body = try #require(try db.scalarText("SELECT body FROM webhook_messages"))
        let payload = try JSONValue.parse(Array(body.utf8))
        let event = try #require(try EventStore(db).page(for: "zoë", limit: 1, before: nil).first)
        #expect(payload["event"] == event.json)
        #expect(payload["id"]?.string == WebhookPayload.messageID(appUserID: "zoë", eventKey: event.key))
        #expect(payload["type"]?.string == "initial_purchase" && payload["app_user_id"]?.string == "zoë")
        #expect(payload["version"] == .int(1) && payload["subscriber"]?["version"] == .int(1))
        #expect(payload["subscriber"]?["entitlements"]?["pro"]?["active"] == .bool(true))
        #expect(payload["created_at"]?.string == "2023-11-15T22:13:20.000Z")
        // Canonical: what the parser reads back writes the same bytes.
        #expect(payload.jsonBytes == Array(body.utf8))
        // The id is stable: the same user and event key give the same id, another user another.
        #expect(
            WebhookPayload.messageID(appUserID: "zoë", eventKey: event.key)
                != WebhookPayload.messageID(appUserID: "zoe", eventKey: event.key))
    }

    @Test func anAppFilterTakesOnlyThatAppsEvents() throws {
        let db = try migrated()
        let hooks = state([WebhookEndpoint(name: "crm", url: "https://crm.example", bundleIDs: ["other"], secrets: [secret])])
        #expect(try save(monthly(bundle: "b"), user: "u", hooks, in: db, now: t0 + day)?.deliveries == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM webhook_messages") == 0)
    }
}
