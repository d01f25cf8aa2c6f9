import Entitlements

/// One backend that receives webhooks (`webhooks.endpoints` and `webhooks.<name>.*`).
package struct WebhookEndpoint: Sendable, Equatable {
    /// Names the endpoint in config, metrics, the admin routes and its secret's variable
    /// (`RECEIPTD_WEBHOOKS_<NAME>_SECRET`): lower-case letters and digits, starting with a letter.
    package var name: String
    package var url: String
    /// The event types it takes; nil: every type.
    package var eventTypes: Set<String>?
    /// The apps whose events it takes; nil: every app.
    package var bundleIDs: Set<String>?
    /// The signing secrets: one, or two while rotating (each signs; receivers accept either).
    package var secrets: [String]
    /// Deliveries in flight to it at once.
    package var maxConcurrent: Int
    /// One attempt ends within this.
    package var timeout: Duration
    /// Whether deliveries also carry the Standard Webhooks headers (``StandardWebhooksSignature``);
    /// its secrets are then `whsec_` keys.
    package var standardWebhooks: Bool
    /// ``timeout`` in milliseconds, rounded up.
    package var timeoutMs: Int64 { Int64((timeout / .milliseconds(1)).rounded(.up)) }

    package init(
        name: String, url: String, eventTypes: Set<String>? = nil, bundleIDs: Set<String>? = nil, secrets: [String],
        maxConcurrent: Int = 8, timeout: Duration = .seconds(10), standardWebhooks: Bool = false
    ) {
        self.name = name
        self.url = url
        self.eventTypes = eventTypes
        self.bundleIDs = bundleIDs
        self.secrets = secrets
        self.maxConcurrent = maxConcurrent
        self.timeout = timeout
        self.standardWebhooks = standardWebhooks
    }

    /// Whether an event of `type` about a purchase of the app `bundleID` goes to this endpoint
    /// (with an app filter, an event whose app is unknown does not).
    package func accepts(type: String, bundleID: String?) -> Bool {
        if let eventTypes, !eventTypes.contains(type) { return false }
        if let bundleIDs { return bundleID.map(bundleIDs.contains) ?? false }
        return true
    }

    /// Every event type there is (`GET /v1/subscribers/{id}/events`' `type`).
    package static let eventTypes = Set(LifecycleEvent.Kind.allCases.map(\.rawValue))

    /// Whether `name` can name an endpoint.
    package static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), name.utf8.count <= 32
        else { return false }
        return name.utf8.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        }
    }
}

/// Outbound webhooks: where they go and how they are delivered (`webhooks.*`).
package struct WebhookSettings: Sendable, Equatable {
    /// None: webhooks are off and nothing is written to the outbox.
    package var endpoints: [WebhookEndpoint] = []
    /// Plain-http URLs allowed (a loopback receiver in development and tests).
    package var allowHTTP = false
    package var retry = WebhookRetryPolicy()
    /// How long a claim on a delivery lasts past its attempt's timeout (a killed process's claims
    /// fall due again after it).
    package var leaseMs: Int64 = 60_000
    /// How often the outbox is looked at when nothing woke the dispatcher (other processes' writes,
    /// retries falling due).
    package var pollMs: Int64 = 1_000
    /// Delivered and failed deliveries, and their messages, are kept this long (replay reaches back as far).
    package var retentionMs: Int64 = 30 * 86_400_000

    package init(endpoints: [WebhookEndpoint] = []) { self.endpoints = endpoints }

    package func endpoint(_ name: String) -> WebhookEndpoint? { endpoints.first { $0.name == name } }
}
