package import Clocks
package import CurlTransport
import Synchronization

/// Google's ID-token keys, fetched from their URL (https://www.googleapis.com/oauth2/v3/certs, or
/// the simulator's) and kept for `maxAge`; fetched again sooner when a token names a key not in
/// hand (Google rotates them), at most once every `minRefetchMs`. Configured keys, when given,
/// are used as they are and nothing is fetched.
package final class SigningKeyCache: Sendable {
    let url: String
    let transport: (any HTTPTransport)?
    let clock: WallClock
    let maxAgeMs: Int64
    let minRefetchMs: Int64
    private let state: Mutex<(keys: SigningKeys?, fetchedAt: Int64)>

    package init(
        url: String, transport: any HTTPTransport, clock: WallClock = .system, maxAgeMs: Int64 = 3_600_000,
        minRefetchMs: Int64 = 60_000
    ) {
        self.url = url
        self.transport = transport
        self.clock = clock
        self.maxAgeMs = maxAgeMs
        self.minRefetchMs = minRefetchMs
        state = Mutex((nil, .min))
    }

    /// Fixed keys (`googlePlay.notifications.jwksFile`): never fetched.
    package init(fixed: SigningKeys) {
        url = ""
        transport = nil
        clock = .system
        maxAgeMs = .max
        minRefetchMs = .max
        state = Mutex((fixed, .max))
    }

    /// Keys that should include `kid`: the ones in hand when fresh and holding it, else fetched.
    package func keys(for kid: String?) async throws(GooglePlayError) -> SigningKeys {
        let now = clock.now()
        let (held, fetchedAt) = state.withLock { ($0.keys, $0.fetchedAt) }
        if let held {
            let fresh = transport == nil || now - fetchedAt < maxAgeMs
            let knows = kid.map { held.keys[$0] != nil } ?? true
            if (fresh && knows) || transport == nil || now - fetchedAt < minRefetchMs { return held }
        }
        guard let transport else { throw .unexpectedAnswer("no signing keys") }
        switch await transport.send(OutboundRequest(method: .get, url: url, timeout: .seconds(10))) {
        case .response(200, let body, _):
            let keys = try SigningKeys(jwks: body)
            state.withLock { $0 = (keys, now) }
            return keys
        case .response(let status, _, _):
            if let held { return held }
            throw .unexpectedAnswer("Google's signing keys answered HTTP \(status)")
        case .failure(let why):
            if let held { return held }
            throw .unexpectedAnswer("Google's signing keys could not be fetched: \(why)")
        }
    }
}
