import FoundationEssentials

/// What receiptd answers when Apple asks which retention message to show a customer who may be
/// about to cancel (`Config/retention.json`, Docs/retention.md): rules in order, the first whose
/// conditions all hold chooses the answer.
public struct RetentionRules: Sendable, Equatable {
    public var rules: [RetentionRule]

    public init(rules: [RetentionRule] = []) {
        self.rules = rules
    }
}

/// One rule: a name (stable: it is recorded with every answer and counted), its conditions, its answer.
public struct RetentionRule: Sendable, Equatable {
    public var name: String
    public var when: RetentionConditions
    public var answer: RetentionAnswer

    public init(name: String, when: RetentionConditions = RetentionConditions(), answer: RetentionAnswer) {
        self.name = name
        self.when = when
        self.answer = answer
    }
}

/// Conditions on the subscription Apple names and its customer; an absent one always holds.
public struct RetentionConditions: Sendable, Equatable {
    /// The subscription's product (Apple's `productId`) is one of these.
    public var products: [String]?
    /// The current period is a free trial (true), or is not (false).
    public var inTrial: Bool?
    /// The current period is at an introductory price (pay as you go or up front), or is not.
    public var inIntroductoryOffer: Bool?
    /// A payment is failing: billing retry, grace period or account hold (true), or none (false).
    public var billingIssue: Bool?
    /// Days of paid service in this subscription.
    public var minTenureDays: Int64?
    public var maxTenureDays: Int64?
    /// The current period's price, at least / at most, per currency (milliunits; a customer paying
    /// in a currency not named does not match).
    public var minPricePaid: [String: Int64]?
    public var maxPricePaid: [String: Int64]?
    /// Promotional offers signed for the customer before, at most.
    public var maxPriorOffers: Int?
    /// The storefront of the subscription's newest transaction (Apple's alpha-3).
    public var storefronts: [String]?
    /// The customer's locale (Apple's `userLocale`), or its language: `en` matches `en-US`.
    public var locales: [String]?

    public init(
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
public enum RetentionAnswer: Sendable, Equatable {
    /// A text message, with or without an image.
    case message(UUID)
    /// A switch-plan message suggesting another product of the same subscription group.
    case alternateProduct(message: UUID, productID: String)
    /// A promotional-offer message; receiptd signs the offer (for `productID`, by default the
    /// subscription's own product) when Config/offers.json allows the customer `offerID`.
    case promotionalOffer(message: UUID, offerID: String, productID: String?, format: Format)

    public enum Format: String, Sendable, Equatable {
        /// The original API's signature (`promotionalOfferSignatureV1`).
        case v1
        /// StoreKit's 2025 signed request (`promotionalOfferSignatureV2`).
        case jws
    }

    public var message: UUID {
        switch self {
        case .message(let id), .alternateProduct(let id, _), .promotionalOffer(let id, _, _, _): id
        }
    }

    /// `message`, `alternate_product` or `promotional_offer`: how answers are recorded and counted.
    public var kind: String {
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
