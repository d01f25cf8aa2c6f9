import CryptoExtras
import CurlTransport
import ReceiptTesting
import Synchronization
import Testing

@testable import GooglePlay

/// Answers Google's keys from a list that the test changes (Google rotating them).
final class RotatingKeys: HTTPTransport {
    let state = Mutex<(jwks: [UInt8], fetches: Int, down: Bool)>(([], 0, false))

    func send(_ request: OutboundRequest) async -> TransportResult {
        state.withLock { s in
            s.fetches += 1
            return s.down ? .response(status: 503, body: []) : .response(status: 200, body: s.jwks)
        }
    }
}

@Suite("Google Play: Google's signing keys, fetched and kept")
struct SigningKeyCacheTests {
    @Test func keysAreKeptAnHourAndFetchedAgainForANewKeyAtMostOnceAMinute() async throws {
        let clock = TestClock()
        let transport = RotatingKeys()
        let first = ServiceAccountTests.key.publicKey
        transport.state.withLock { $0.jwks = SigningKeys.jwks(["k1": first]) }
        let cache = SigningKeyCache(url: "https://www.googleapis.com/oauth2/v3/certs", transport: transport, clock: clock.wall)
        #expect(try await cache.keys(for: "k1").keys.keys.sorted() == ["k1"])
        #expect(try await cache.keys(for: "k1").keys.count == 1)
        #expect(transport.state.withLock { $0.fetches } == 1)
        // Google adds k2: a token naming it fetches again, but not twice within a minute.
        transport.state.withLock { $0.jwks = SigningKeys.jwks(["k1": first, "k2": first]) }
        clock.advance(by: 30_000)
        #expect(try await cache.keys(for: "k2").keys["k2"] == nil)
        clock.advance(by: 31_000)
        #expect(try await cache.keys(for: "k2").keys["k2"] != nil)
        #expect(transport.state.withLock { $0.fetches } == 2)
        // After an hour the keys are fetched again; Google down keeps the ones in hand.
        clock.advance(by: 3_600_000)
        transport.state.withLock { $0.down = true }
        #expect(try await cache.keys(for: "k1").keys.count == 2)
        #expect(transport.state.withLock { $0.fetches } == 3)
    }

    @Test func configuredKeysAreNeverFetched() async throws {
        let cache = SigningKeyCache(fixed: SigningKeys(keys: ["k1": ServiceAccountTests.key.publicKey]))
        #expect(try await cache.keys(for: "unknown").keys.keys.sorted() == ["k1"])
    }
}
