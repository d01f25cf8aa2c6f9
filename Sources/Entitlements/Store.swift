import Identifiers
import Synchronization

/// The store that stated a purchase, with its rules as data. Facts name it rather than assume
/// Apple's, so the derivation, events, webhooks, the console and erasure take any store's
/// purchases as they are, and where stores differ they read the store's ``StoreRules``, never
/// which store it is. A store is its name on the wire and in storage (`transactions.store`);
/// two stores are the same when their names are the same bytes.
///
/// receiptd ships ``appStore`` and ``playStore``. Another store is one more value, declared by
/// its target and made known with ``register(_:)`` before any of its facts are read back.
package struct Store: Sendable, Hashable, CustomStringConvertible {
    /// `app_store`, `play_store`: `store` in requests, `transactions.store`, event facts.
    package let rawValue: String
    package let rules: StoreRules

    package init(_ rawValue: String, rules: StoreRules) {
        self.rawValue = rawValue
        self.rules = rules
    }

    package static func == (a: Store, b: Store) -> Bool { a.rawValue.isExactly(b.rawValue) }
    package func hash(into hasher: inout Hasher) { hasher.combine(Identifier(rawValue)) }
    package var description: String { rawValue }

    /// How explanations name it: "Apple refunded the current period".
    package var displayName: String { rules.displayName }

    /// Apple's App Store: verifyReceipt, StoreKit 2's signed data, the App Store Server API.
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    package static let appStore = Store(
        "app_store",
        rules: StoreRules(
            displayName: "Apple", purchaseNoun: "App Store", errorName: "app_store", nameInSentences: "The App Store",
            misconfigured: "receiptd's App Store settings were refused by Apple.", commission: .appleServiceYear,
            readsStatedState: false, offers: .byKind, namedInEvents: false))

    /// Google Play: the Play Developer API's purchases.
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    package static let playStore = Store(
        "play_store",
        rules: StoreRules(
            displayName: "Google Play", purchaseNoun: "Google Play", errorName: "google_play", nameInSentences: "Google Play",
            misconfigured: "Google Play refused receiptd's service account; see the server's log.",
            commission: .playServiceFee, readsStatedState: true, offers: .byPhase, namedInEvents: true))

    private static let known = Mutex<[Store]>([.appStore, .playStore])

    /// Every store known, receiptd's own first.
    package static var all: [Store] { known.withLock { $0 } }

    /// The store named `rawValue` (its exact bytes); nil when no store has that name. Read for
    /// every stored transaction: the shipped stores are found without the lock.
    package static func named(_ rawValue: String) -> Store? {
        if rawValue.isExactly(appStore.rawValue) { return appStore }
        if rawValue.isExactly(playStore.rawValue) { return playStore }
        return known.withLock { stores in stores.first { $0.rawValue.isExactly(rawValue) } }
    }

    /// Makes `store` known, so its facts read back with its rules; registering a name again
    /// keeps the first.
    package static func register(_ store: Store) {
        known.withLock { stores in if !stores.contains(store) { stores.append(store) } }
    }
}

/// Where stores differ, as data: each store states its rules once (``Store/appStore``,
/// ``Store/playStore``), and the code that differs reads them. One shared instance per store, so
/// every purchase naming its store carries a reference, not a copy of the rules.
package final class StoreRules: Sendable {
    /// How explanations name the store ("Apple", "Google Play").
    package let displayName: String
    /// How explanations name its purchases: "the App Store subscription of …".
    package let purchaseNoun: String
    /// How error codes name it: `app_store_unavailable`, `google_play_misconfigured`.
    package let errorName: String
    /// How an error's sentence names it: "The App Store could not answer now".
    package let nameInSentences: String
    /// The message when the store refuses receiptd's own credentials.
    package let misconfigured: String
    /// The service fee it keeps from a sale.
    package let commission: CommissionSchedule
    /// Whether the store states a subscription's state itself (Google's `subscriptionState`),
    /// which the derivation then reads before computing one from dates.
    package let readsStatedState: Bool
    /// How its transactions name the offer they were bought with.
    package let offers: OfferNaming
    /// Whether events of its purchases carry a `store` fact (every store's but the default's).
    package let namedInEvents: Bool

    package init(
        displayName: String, purchaseNoun: String, errorName: String, nameInSentences: String, misconfigured: String,
        commission: CommissionSchedule, readsStatedState: Bool, offers: OfferNaming, namedInEvents: Bool
    ) {
        self.displayName = displayName
        self.purchaseNoun = purchaseNoun
        self.errorName = errorName
        self.nameInSentences = nameInSentences
        self.misconfigured = misconfigured
        self.commission = commission
        self.readsStatedState = readsStatedState
        self.offers = offers
        self.namedInEvents = namedInEvents
    }

    /// A store's service fee, by its published schedule (Analytics' `Proceeds` computes it).
    package enum CommissionSchedule: Sendable, Equatable {
        /// Apple's: 30 %, 15 % for a developer in the Small Business Program and for an
        /// auto-renewable subscription's sales after a year of paid service (gaps up to 60 days).
        case appleServiceYear
        /// Google Play's: 15 % on auto-renewing subscriptions from their first day; other sales
        /// 15 % for a developer enrolled in the 15 % tier, else 30 %.
        case playServiceFee
    }

    /// How a transaction names its offer.
    package enum OfferNaming: Sendable, Equatable {
        /// By kind, each its own field: an offer code's name, a promotional offer's id, the
        /// trial and introductory flags without one (Apple's).
        case byKind
        /// One offer id for every phase: a trial's, an introductory price's, a developer's (Google's).
        case byPhase
    }
}
