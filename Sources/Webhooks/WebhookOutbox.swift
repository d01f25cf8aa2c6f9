import Crypto
package import DatabaseEngine
import Entitlements
import Identifiers
import JSON
package import Storage
package import Workers

/// Writes the webhook messages of newly recorded events, and their deliveries to each endpoint
/// that takes them, in the transaction that records the events (``SubscriberState``): if the
/// change commits, its deliveries exist; if it rolls back, neither does. Then rings the
/// dispatcher's ``Doorbell`` so they go out now rather than at its next poll.
package struct WebhookOutbox: Sendable {
    package let endpoints: [WebhookEndpoint]
    package let doorbell: Doorbell

    package init(endpoints: [WebhookEndpoint], doorbell: Doorbell = Doorbell()) {
        self.endpoints = endpoints
        self.doorbell = doorbell
    }

    /// In the caller's transaction: a message for each event in `events` (just stored for
    /// `subscriber`, whose document after the change at `version` is what `document` renders, as
    /// `GET /v1/subscribers/{id}` would) that some endpoint takes, and its deliveries. How many
    /// deliveries were queued.
    package func enqueue(
        _ events: [EventRecord], of subscriber: SubscriberRecord, version: Int64, document: () -> [UInt8], in db: Database,
        now: Int64
    ) throws -> Int {
        guard !events.isEmpty, !endpoints.isEmpty else { return 0 }
        var bundles: [Identifier: String] = [:]
        for p in subscriber.purchases {
            if let bundle = p.bundleID { bundles[Identifier(p.fact.originalTransactionID)] = bundle }
        }
        let store = WebhookStore(db)
        var rendered: [UInt8]?  // once, and only if some endpoint takes an event
        var queued = 0
        let theirApps = Set(bundles.values)
        for event in events {
            // A purchase they no longer hold (a transfer away) is not among theirs: its app from storage.
            // An event of no purchase (a merge) is about each app they have bought in.
            let apps: [String?] =
                event.originalTransactionID.isEmpty
                ? (theirApps.isEmpty ? [nil] : theirApps.sorted().map { $0 })
                : [
                    try bundles[Identifier(event.originalTransactionID)]
                        ?? ReceiptStore(db).bundleID(ofOriginal: event.originalTransactionID)
                ]
            let bundle = apps.count == 1 ? apps[0] : nil
            let takers = endpoints.filter { e in apps.contains { e.accepts(type: event.type, bundleID: $0) } }.map(\.name)
            guard !takers.isEmpty else { continue }
            let id = WebhookPayload.messageID(appUserID: subscriber.appUserID, eventKey: event.key)
            let document = rendered ?? document()
            rendered = document
            let body = WebhookPayload.body(
                id: id, event: event, appUserID: subscriber.appUserID, subscriber: document, version: version, createdAt: now)
            let message = WebhookMessage(
                id: id, appUserID: subscriber.appUserID, version: version, type: event.type, bundleID: bundle,
                body: String(decoding: body, as: UTF8.self), createdAt: now)
            queued += try store.enqueue(message, to: takers, now: now)
        }
        return queued
    }
}

/// The webhook payload (Docs/webhooks.md): `{"app_user_id", "created_at", "event", "id",
/// "subscriber", "type", "version"}`, canonical JSON (keys sorted, no spaces).
package enum WebhookPayload {
    /// `evt_` and 32 hex digits of SHA-256 over the app user id, a NUL and the event's key: the
    /// same event of the same subscriber always has the same id.
    package static func messageID(appUserID: String, eventKey: String) -> String {
        var input = Array(appUserID.utf8)
        input.append(0)
        input += eventKey.utf8
        return "evt_" + WebhookSignature.hex(Array(SHA256.hash(data: input).prefix(16)))
    }

    /// The payload's bytes; `subscriber` is the document's JSON, as `GET /v1/subscribers/{id}` renders it.
    package static func body(
        id: String, event: EventRecord, appUserID: String, subscriber: [UInt8], version: Int64, createdAt: Int64
    ) -> [UInt8] {
        // The members before "subscriber", as an object whose closing brace is cut, then the rest.
        var out = JSONValue.object([
            "app_user_id": .string(appUserID), "created_at": .string(CivilTime.rfc3339(createdAt)), "event": event.json,
            "id": .string(id),
        ]).jsonBytes
        out.removeLast()
        out += #","subscriber":"#.utf8
        out += subscriber
        out += #","type":"#.utf8
        out += JSONValue.string(event.type).jsonBytes
        out += #","version":\#(version)}"#.utf8
        return out
    }
}
