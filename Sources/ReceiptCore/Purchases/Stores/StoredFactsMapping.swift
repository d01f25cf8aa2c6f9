import AppStore
package import Entitlements
import GooglePlay

/// How one store's stored facts are read again from the raw answers kept with them (`receiptd
/// rederive`): each store maps its own JSON, chosen by the store the fact names, never by
/// trying one parser after another.
package struct StoredFactsMapping: Sendable {
    /// A stored transaction mapped again; nil when its raw answer no longer reads.
    package var purchase: @Sendable (Stated<Purchase>) -> Stated<Purchase>?
    /// A stored renewal snapshot mapped again; nil when its raw answer no longer reads.
    package var renewal: @Sendable (Stated<RenewalObservation>) -> Stated<RenewalObservation>?

    package init(
        purchase: @escaping @Sendable (Stated<Purchase>) -> Stated<Purchase>?,
        renewal: @escaping @Sendable (Stated<RenewalObservation>) -> Stated<RenewalObservation>?
    ) {
        self.purchase = purchase
        self.renewal = renewal
    }

    /// The stores receiptd ships, each by its own mapping (``AppleFacts``, ``PlayRecord``).
    package static let shipped: [Store: StoredFactsMapping] = [
        .appStore: StoredFactsMapping(purchase: AppleFacts.remapped, renewal: AppleFacts.remapped),
        .playStore: StoredFactsMapping(purchase: PlayRecord.remapped, renewal: PlayRecord.remapped),
    ]
}
