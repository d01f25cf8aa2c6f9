import ReceiptCore
import Webhooks

extension WebhookSettings {
    /// `webhooks.*`: the endpoints named by `webhooks.endpoints`, each from `webhooks.<name>.*` with
    /// its secret(s) from `RECEIPTD_WEBHOOKS_<NAME>_SECRET` (or `…_FILE`), and how they are delivered.
    static func read(_ c: ConfigLoader, bundleIDs: [String]) throws(ConfigurationError) -> WebhookSettings {
        var settings = WebhookSettings()
        // Names of the endpoints (lower-case letters and digits); each is configured under webhooks.<name>.
        let names = try c.strings("webhooks.endpoints", default: [])
        // Plain-http endpoint URLs (a receiver on loopback in development and tests).
        let allowHTTP = try c.bool("webhooks.allowHttp", default: false)
        settings.allowHTTP = allowHTTP
        for name in names {
            guard WebhookEndpoint.isValidName(name) else {
                throw ConfigurationError(
                    key: "webhooks.endpoints",
                    message: "\"\(name)\" must be lower-case letters and digits, starting with a letter, at most 32")
            }
            guard !settings.endpoints.contains(where: { $0.name == name }) else {
                throw ConfigurationError(key: "webhooks.endpoints", message: "names \"\(name)\" twice")
            }
            let prefix = "webhooks.\(name)."
            // Where its events are POSTed.
            let url = try c.string(prefix + "url", default: "")
            guard url.hasPrefix("https://") || (allowHTTP && url.hasPrefix("http://")) else {
                throw ConfigurationError(
                    key: prefix + "url", message: "must be an https:// URL (http:// only with webhooks.allowHttp)")
            }
            // The event types it takes (empty: all).
            let types = try c.strings(prefix + "events", default: [])
            for type in types where !WebhookEndpoint.eventTypes.contains(type) {
                throw ConfigurationError(
                    key: prefix + "events",
                    message: "\"\(type)\" is not an event type (\(WebhookEndpoint.eventTypes.sorted().joined(separator: ", ")))")
            }
            // The apps whose events it takes (empty: all of appStore.bundleIds).
            let apps = try c.strings(prefix + "bundleIds", default: [])
            for app in apps where !bundleIDs.contains(app) {
                throw ConfigurationError(key: prefix + "bundleIds", message: "\"\(app)\" is not in appStore.bundleIds")
            }
            // The signing secret, or two while rotating (comma-separated), from the environment only.
            let secrets = try c.secretList(prefix + "secret")
            guard (1...2).contains(secrets.count) else {
                throw ConfigurationError(
                    key: prefix + "secret",
                    message:
                        "needs one signing secret, or two while rotating, in \(ConfigLoader.environmentName(for: prefix + "secret"))"
                )
            }
            guard secrets.allSatisfy({ $0.utf8.count >= 16 }) else {
                throw ConfigurationError(key: prefix + "secret", message: "each secret must be at least 16 bytes")
            }
            // The Standard Webhooks headers beside Receiptd-Signature, for receivers that verify with
            // its libraries: the secrets are then whsec_ keys.
            let standard = try c.bool(prefix + "standardWebhooks", default: false)
            guard !standard || secrets.allSatisfy({ StandardWebhooksSignature.key($0) != nil }) else {
                throw ConfigurationError(
                    key: prefix + "secret",
                    message:
                        "with standardWebhooks, each secret must be whsec_ and the base64 of a \(StandardWebhooksSignature.keyBytes.lowerBound)–\(StandardWebhooksSignature.keyBytes.upperBound) byte key"
                )
            }
            settings.endpoints.append(
                WebhookEndpoint(
                    name: name, url: url, eventTypes: types.isEmpty ? nil : Set(types),
                    bundleIDs: apps.isEmpty ? nil : Set(apps), secrets: secrets,
                    // Deliveries in flight to it at once (different subscribers; one subscriber's go in order).
                    maxConcurrent: try c.int(prefix + "maxConcurrent", default: 8, range: 1...1_000),
                    // One attempt ends within this; no answer by then is retried.
                    timeout: try c.milliseconds(prefix + "timeoutMs", default: 10_000), standardWebhooks: standard))
        }
        settings.retry = WebhookRetryPolicy(
            // The wait after a first failed attempt; doubled per failure up to the maximum.
            firstDelayMs: Int64(try c.int("webhooks.retry.firstDelayMs", default: 30_000, range: 100...86_400_000)),
            maxDelayMs: Int64(try c.int("webhooks.retry.maxDelayMs", default: 21_600_000, range: 100...86_400_000)),
            // Attempts stop this long after the first; the delivery is then kept as failed.
            giveUpAfterMs: Int64(try c.int("webhooks.retry.giveUpAfterHours", default: 72, range: 1...720)) * 3_600_000)
        // How long a claim lasts past the attempt's timeout (a killed process's deliveries are retried after it).
        settings.leaseMs = Int64(try c.int("webhooks.leaseMs", default: 60_000, range: 1000...3_600_000))
        // How often the outbox is looked at for other processes' deliveries and retries falling due.
        settings.pollMs = Int64(try c.int("webhooks.pollMs", default: 1000, range: 10...60_000))
        // Delivered and failed deliveries are kept this long (replay reaches back as far).
        settings.retentionMs = Int64(try c.int("webhooks.retentionDays", default: 30, range: 1...3650)) * 86_400_000
        return settings
    }
}
