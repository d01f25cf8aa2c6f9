import Entitlements
package import JSON
package import Storage

extension EventRecord {
    /// The event as `GET /v1/subscribers/{id}/events` lists it and webhooks carry it
    /// (Docs/webhooks.md): times in RFC 3339 UTC with milliseconds, its facts as stored.
    package var json: JSONValue {
        .object([
            "id": .string(String(id)), "type": .string(type), "at": .string(CivilTime.rfc3339(at)),
            "recorded_at": .string(CivilTime.rfc3339(recordedAt)),
            // A merge is about no purchase.
            "product_id": productID.isEmpty ? .null : .string(productID),
            "original_transaction_id": originalTransactionID.isEmpty ? .null : .string(originalTransactionID),
            "transaction_id": transactionID.map(JSONValue.string) ?? .null,
            "facts": (try? JSONValue.parse(Array(factsJSON.utf8))) ?? .object([:]),
        ])
    }
}
