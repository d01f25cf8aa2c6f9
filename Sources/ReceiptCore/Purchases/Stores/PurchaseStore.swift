package import Entitlements
package import Identifiers
package import JSON

/// The seam a store plugs into receiptd through: its name and rules (``Store``), how a posted
/// purchase of it is read and asked of it, and how its stored facts are read again. What it
/// answers are facts (``VerifiedFacts``, each naming ``store``), and from there every store's
/// purchases take the one road (``VerifyStorePurchase``, ``SubscriberState``): the ownership
/// policy, one save, the derivation, the document, events and webhooks.
///
/// Apple's and Google's purchases are verified by use cases of their own (verifyReceipt's
/// fallbacks, StoreKit 2's proofs, Play's acknowledgements), which end on the same road; their
/// entries in the table of stores are ``StoredFactsMapping/shipped`` and the edge's readers.
package protocol PurchaseStore: Sendable {
    /// What a posted purchase claims, read from POST /v1/receipts's body before the store is asked.
    associatedtype Claim: Sendable

    var store: Store { get }
    var mapping: StoredFactsMapping { get }

    /// Reads the claim from the body (a JSON object with `app_user_id` and `store`); a bad field
    /// is ``ReceiptError/invalidRequest(_:)`` naming it.
    func claim(in body: JSONValue) throws(ReceiptError) -> Claim

    /// Asks the store about the claim: the facts it states, and the purchase identifiers the
    /// claim proves (what an app's answer may name). A store that cannot answer now throws
    /// ``ReceiptError/storeUnavailable(_:storeStatus:retryAfterSeconds:lastKnown:)`` (the use
    /// case fills in what the person had); one that knows no such purchase, another refusal.
    func verify(_ claim: Claim) async throws(ReceiptError) -> StoreAnswer
}

/// A store's answer about a posted purchase.
package struct StoreAnswer: Sendable {
    package var facts: VerifiedFacts
    /// The purchase identifiers (transaction and original transaction ids) the claim proves.
    package var proven: Set<Identifier>
    /// What the claim proves about who has the purchase: the device's proof (a signed answer, a
    /// token only the buyer's device holds) may move a purchase under the ownership policy; a
    /// bare id (an order number printed in an e-mail) posted with an app's key never moves one
    /// someone else holds (Docs/security.md "The public key is public"). Said by the store, never
    /// assumed.
    package var possession: Possession

    package init(facts: VerifiedFacts, proven: Set<Identifier>, possession: Possession) {
        self.facts = facts
        self.proven = proven
        self.possession = possession
    }
}
