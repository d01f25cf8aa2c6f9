package import FoundationEssentials

/// What receiptd answers when Apple asks which retention message to show a customer who may be
/// about to cancel (`Config/retention.json`, Docs/retention.md): rules in order, the first whose
/// conditions all hold chooses the answer.
package struct RetentionRules: Sendable, Equatable {
    package var rules: [RetentionRule]

    package init(rules: [RetentionRule] = []) {
        self.rules = rules
    }
}

/// One rule: a name (stable: it is recorded with every answer and counted), its conditions, its answer.
package struct RetentionRule: Sendable, Equatable {
    package var name: String
    package var when: RetentionConditions
    package var answer: RetentionAnswer

    package init(name: String, when: RetentionConditions = RetentionConditions(), answer: RetentionAnswer) {
        self.name = name
        self.when = when
        self.answer = answer
    }
}

/// Conditions on the subscription Apple names and its customer; an absent one always holds.
package struct RetentionConditions: Sendable, Equatable {
    /// The subscription's product (Apple's `productId`) is one of these.
    package var products: [String]?
    /// The current period is a free trial (true), or is not (false).
    package var inTrial: Bool?
    /// The current period is at an introductory price (pay as you go or up front), or is not.
    package var inIntroductoryOffer: Bool?
    /// A payment is failing: billing retry, grace period or account hold (true), or none (false).
    package var billingIssue: Bool?
    /// Days of paid service in this subscription.
    package var minTenureDays: Int64?
    package var maxTenureDays: Int64?
    /// The current period's price, at least / at most, per currency (milliunits; a customer paying
    /// in a currency not named does not match).
    package var minPricePaid: [String: Int64]?
    package var maxPricePaid: [String: Int64]?
    /// Promotional offers signed for the customer before, at most.
    package var maxPriorOffers: Int?
    /// The storefront of the subscription's newest transaction (Apple's alpha-3).
    package var storefronts: [String]?
    /// The customer's locale (Apple's `userLocale`), or its language: `en` matches `en-US`.
    package var locales: [String]?

    package init(
        products: [String]? = nil, inTrial: Bool? = nil, inIntroductoryOffer: Bool? = nil, billingIssue: Bool? = nil,
        minTenureDays: Int64? = nil, maxTenureDays: Int64? = nil, minPricePaid: [String: Int64]? = nil,
        maxPricePaid: [String: Int64]? = nil, maxPriorOffers: Int? = nil, storefronts: [String]? = nil, locales: [String]? = nil
    ) {
        self.products = products
        self.inTrial = inTrial
        self.inIntroductoryOffer = inIntroductoryOffer
        self.billingIssue = billingIssue
        self.minTenureDays = minTenureDays
        self.maxTenureDays = maxTenureDays
        self.minPricePaid = minPricePaid
        self.maxPricePaid = maxPricePaid
        self.maxPriorOffers = maxPriorOffers
        self.storefronts = storefronts
        self.locales = locales
    }
}

/// Apple's three kinds of real-time answer, each naming a message set up in App Store Connect
/// through the Retention Messaging API (Apple's `RealtimeResponseBody`).
package enum RetentionAnswer: Sendable, Equatable {
    /// A text message, with or without an image.
    case message(UUID)
    /// A switch-plan message suggesting another product of the same subscription group.
    case alternateProduct(message: UUID, productID: String)
    /// A promotional-offer message; receiptd signs the offer (for `productID`, by default the
    /// subscription's own product) when Config/offers.json allows the customer `offerID`.
    case promotionalOffer(message: UUID, offerID: String, productID: String?, format: Format)

    package enum Format: String, Sendable, Equatable {
        /// The original API's signature (`promotionalOfferSignatureV1`).
        case v1
        /// StoreKit's 2025 signed request (`promotionalOfferSignatureV2`).
        case jws
    }

    package var message: UUID {
        switch self {
        case .message(let id), .alternateProduct(let id, _), .promotionalOffer(let id, _, _, _): id
        }
    }

    /// `message`, `alternate_product` or `promotional_offer`: how answers are recorded and counted.
    package var kind: String {
        switch self {
        case .message: "message"
        case .alternateProduct: "alternate_product"
        case .promotionalOffer: "promotional_offer"
        }
    }

    var inWords: String {
        switch self {
        case .message: "a message"
        case .alternateProduct(_, let product): "a switch to \(product)"
        case .promotionalOffer(_, let offer, _, _): "promotional offer \(offer)"
        }
    }
}
