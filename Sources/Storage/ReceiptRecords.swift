package import Entitlements
package import Identifiers

// Storage stores and returns the domain's facts (Entitlements' `Purchase`, `Renewal`,
// `Transfer`) with their provenance. It knows nothing of Apple's wire format: ReceiptCore maps
// Apple's models into facts, once.

/// A stored subscriber and everything their purchases say.
package struct SubscriberRecord: Sendable, Equatable {
    package var appUserID: String
    /// The subscriber document's version and the fingerprint it was computed with.
    package var version: Int64
    package var stateHash: String?
    /// How many writes changed their facts, and which of those the stored version, fingerprint
    /// and events were derived from: when they differ, the derivation is behind the facts.
    package var factsRevision: Int64
    package var derivedRevision: Int64
    /// Every transaction of the purchases held, by purchase date.
    package var purchases: [Stated<Purchase>]
    /// Every renewal-info snapshot of those purchases, oldest first; `sequence` is the row id.
    package var renewals: [Stated<RenewalObservation>]
    /// Every change of holder of those purchases, and of purchases taken away from this subscriber.
    package var transfers: [Transfer]
    /// Their other ids, oldest first (``Alias``).
    package var aliases: [Alias]
    /// Entitlements support gave them, oldest first (``Promotion``).
    package var promotions: [Promotion]
    /// The AppTransactions their app posted (``AppTransaction``): what grandfathering reads.
    package var appTransactions: [AppTransaction]
    /// Until when their stored product states (`product_states`) hold; 0: never written, or
    /// their facts changed since.
    package var summaryUntil: Int64
    /// The fingerprint of the settings their kept document was derived with; nil when none is
    /// kept (``DocumentStore``).
    package var documentSettings: String?

    package init(
        appUserID: String, version: Int64, stateHash: String?, factsRevision: Int64 = 0, derivedRevision: Int64 = 0,
        purchases: [Stated<Purchase>], renewals: [Stated<RenewalObservation>], transfers: [Transfer], aliases: [Alias] = [],
        promotions: [Promotion] = [], appTransactions: [AppTransaction] = [], summaryUntil: Int64 = 0,
        documentSettings: String? = nil
    ) {
        self.documentSettings = documentSettings
        self.appTransactions = appTransactions
        self.appUserID = appUserID
        self.version = version
        self.stateHash = stateHash
        self.factsRevision = factsRevision
        self.derivedRevision = derivedRevision
        self.purchases = purchases
        self.renewals = renewals
        self.transfers = transfers
        self.aliases = aliases
        self.promotions = promotions
        self.summaryUntil = summaryUntil
    }

    /// The facts without their provenance: the derivation's input.
    package var facts: Facts {
        Facts(
            purchases: purchases.map(\.fact), renewals: renewals.map(\.fact), transfers: transfers, aliases: aliases,
            promotions: promotions, appTransactions: appTransactions)
    }

    /// The canonical id and the aliases: every id the subscriber is known by.
    package var ids: [String] { [appUserID] + aliases.map(\.appUserID) }

    /// The original transaction ids this subscriber holds.
    package var originals: Set<Identifier> { Set(purchases.map { Identifier($0.fact.originalTransactionID) }) }
}

/// One lifecycle event row (`events`).
package struct EventRecord: Sendable, Equatable {
    /// Row id; 0 for an event not stored yet.
    package var id: Int64
    package var key: String
    package var type: String
    package var at: Int64
    package var productID: String
    package var originalTransactionID: String
    package var transactionID: String?
    /// A JSON object of the facts behind the event.
    package var factsJSON: String
    package var recordedAt: Int64

    package init(
        id: Int64 = 0, key: String, type: String, at: Int64, productID: String, originalTransactionID: String,
        transactionID: String?, factsJSON: String, recordedAt: Int64 = 0
    ) {
        self.id = id
        self.key = key
        self.type = type
        self.at = at
        self.productID = productID
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.factsJSON = factsJSON
        self.recordedAt = recordedAt
    }

    /// Whether two rows say the same thing (ids and recording times aside).
    package func sameContent(as other: EventRecord) -> Bool {
        var a = self
        var b = other
        (a.id, a.recordedAt, b.id, b.recordedAt) = (0, 0, 0, 0)
        return a == b
    }
}

/// One row of the verification log.
package struct VerificationLogEntry: Sendable, Equatable {
    package var appUserID: String?
    package var environment: StoreEnvironment?
    package var appleStatus: Int?
    /// A short outcome name, e.g. `valid`, `invalid_receipt`, `unavailable`.
    package var outcome: String
    package var attempts: Int
    package var latencyMs: Int64

    package init(
        appUserID: String?, environment: StoreEnvironment?, appleStatus: Int?, outcome: String, attempts: Int, latencyMs: Int64
    ) {
        self.appUserID = appUserID
        self.environment = environment
        self.appleStatus = appleStatus
        self.outcome = outcome
        self.attempts = attempts
        self.latencyMs = latencyMs
    }
}
