package import Entitlements
import Identifiers
import JSON

/// Stored Play facts mapped again from the envelope they were read from (`receiptd rederive`),
/// through the one mapping (``PlayRecord/facts``); nil when the envelope no longer reads or no
/// longer states the fact.
extension PlayRecord {
    /// A stored Play transaction, found again by its transaction id.
    package static func remapped(_ stored: Stated<Purchase>) -> Stated<Purchase>? {
        guard let json = try? JSONValue.parse(Array(stored.rawJSON.utf8)), let play = PlayRecord(json: json),
            let fact = play.facts.purchases.first(where: { $0.transactionID.isExactly(stored.fact.transactionID) })
        else { return nil }
        return Stated(fact, bundleID: stored.bundleID, rawJSON: stored.rawJSON)
    }

    /// A stored Play renewal snapshot, found again by its subscription.
    package static func remapped(_ stored: Stated<RenewalObservation>) -> Stated<RenewalObservation>? {
        let original = stored.fact.renewal.originalTransactionID
        guard let json = try? JSONValue.parse(Array(stored.rawJSON.utf8)), let play = PlayRecord(json: json),
            let renewal = play.facts.renewals.first(where: { $0.originalTransactionID.isExactly(original) })
        else { return nil }
        var observation = stored.fact
        observation.renewal = renewal
        return Stated(observation, bundleID: stored.bundleID, rawJSON: stored.rawJSON)
    }
}
