import Crypto
import HTTPServer
import RevenueCatProtocol

/// The public keys apps configure RevenueCat's SDKs with, each saying its store by its prefix as
/// the SDKs check it (`appl_`/`mac_`: the App Store; `goog_`: Google Play): the platform decides
/// what the SDK is given (its store's product ids) and may post (its store's purchases).
///
/// Matched as exact bytes and in constant time, as ``APIAuth`` matches receiptd's own keys. These
/// keys are public (they ship in apps): they reach only this listener; receiptd's admin API keeps
/// its own secret keys.
struct SDKKeys: Sendable {
    private let keys: [(digest: SHA256.Digest, platform: Offerings.Platform)]

    /// Keys that name no store are refused at start-up (``platform(ofKey:)``).
    init(_ keys: [String]) {
        self.keys = keys.compactMap { key in Self.platform(ofKey: key).map { (SHA256.hash(data: Array(key.utf8)), $0) } }
    }

    /// The store a key's prefix names, as the SDKs read it; nil for any other.
    static func platform(ofKey key: String) -> Offerings.Platform? {
        if key.hasPrefix("appl_") || key.hasPrefix("mac_") { return .appStore }
        if key.hasPrefix("goog_") { return .playStore }
        return nil
    }

    /// The platform of the request's bearer key; nil when it has none of these keys.
    func platform(_ request: HTTPRequest) -> Offerings.Platform? {
        guard let key = APIAuth.bearerKey(request) else { return nil }
        let presented = SHA256.hash(data: Array(key))
        var found: Offerings.Platform?
        for entry in keys where entry.digest == presented { found = entry.platform }
        return found
    }
}
