import CryptoExtras
import GooglePlay
import HTTPServer
import JSON
import ReceiptTesting
import Testing

@testable import GooglePlaySimulator

@Suite("Google Play simulator: the token endpoint and the API's gate")
struct GooglePlaySimulatorTests {
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let email = "receiptd@app.iam.gserviceaccount.com"
    static let tokenURI = "http://127.0.0.1:1/token"

    static func simulator(_ clock: TestClock) -> GooglePlaySimulator {
        GooglePlaySimulator(
            configuration: .init(
                packageNames: ["com.example.app"], clientEmail: email, publicKey: key.publicKey, tokenURI: tokenURI),
            clock: clock.wall)
    }

    static func request(_ method: HTTPMethod, _ target: String, body: [UInt8] = [], bearer: String? = nil) -> HTTPRequest {
        var headers: HTTPHeaders = [:]
        if let bearer { headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        return HTTPRequest(method: method, target: target, headers: headers, body: body)
    }

    static func form(_ assertion: String) -> [UInt8] {
        Array(ServiceAccountKey.tokenRequestBody(assertion: assertion).utf8)
    }

    static func assertion(
        key: _RSA.Signing.PrivateKey = key, email: String = email, aud: String = tokenURI, now: Int64
    ) throws -> String {
        let account = try ServiceAccountKey(
            json: ServiceAccountKey.keyFile(clientEmail: email, privateKeyID: "k1", privateKey: key, tokenURI: aud))
        return try account.assertion(now: now)
    }

    @Test func aGoodAssertionIsGrantedATokenTheAPIAccepts() throws {
        let clock = TestClock()
        let sim = Self.simulator(clock)
        let granted = sim.respond(Self.request(.post, "/token", body: Self.form(try Self.assertion(now: clock.now))))
        #expect(granted.status == .ok)
        let body = try JSONValue.parse(granted.body)
        #expect(body["token_type"]?.string == "Bearer" && body["expires_in"]?.int64 == 3_600)
        let access = try #require(body["access_token"]?.string)
        let token = sim.purchase(.active, tag: "a")
        let path = "/androidpublisher/v3/applications/com.example.app/purchases/subscriptionsv2/tokens/\(token)"
        #expect(sim.respond(Self.request(.get, path, bearer: access)).status == .ok)
        #expect(sim.respond(Self.request(.get, path)).status == .unauthorized)
        #expect(sim.respond(Self.request(.get, path, bearer: "ya29.forged")).status == .unauthorized)
        clock.advance(by: 3_600_000)
        #expect(sim.respond(Self.request(.get, path, bearer: access)).status == .unauthorized)  // expired
    }

    @Test func aTamperedExpiredOrStrangersAssertionIsRefused() throws {
        let clock = TestClock()
        let sim = Self.simulator(clock)
        let good = try Self.assertion(now: clock.now)
        var parts = good.split(separator: ".").map(String.init)
        // The claims rewritten (another issuer) under the original signature.
        parts[1] = Base64URL.encode(
            Array(#"{"aud":"\#(Self.tokenURI)","exp":9999999999,"iat":1,"iss":"evil@x","scope":"x"}"#.utf8))
        let refusals = [
            parts.joined(separator: "."),
            try Self.assertion(key: try _RSA.Signing.PrivateKey(keySize: .bits2048), now: clock.now),
            try Self.assertion(email: "other@app.iam.gserviceaccount.com", now: clock.now),
            try Self.assertion(aud: "https://oauth2.googleapis.com/token", now: clock.now),
            try Self.assertion(now: clock.now - 3_700_000),  // expired
            try Self.assertion(now: clock.now + 600_000),  // issued in the future
            "not.a.jwt",
        ]
        for assertion in refusals {
            let answer = sim.respond(Self.request(.post, "/token", body: Self.form(assertion)))
            #expect(answer.status == .badRequest)
            #expect(try JSONValue.parse(answer.body)["error"]?.string == "invalid_grant")
        }
        #expect(sim.respond(Self.request(.post, "/token", body: Array("grant_type=password".utf8))).status == .badRequest)
        #expect(sim.respond(Self.request(.post, "/token", body: Self.form(good))).status == .ok)
    }

    @Test func controlsScriptPurchasesRefundsAndOutages() throws {
        let clock = TestClock()
        let sim = Self.simulator(clock)
        let bought = sim.respond(
            Self.request(.post, "/control/google/purchase", body: Array(#"{"scenario":"paused","tag":"u1"}"#.utf8)))
        #expect(try JSONValue.parse(bought.body)["purchase_token"]?.string == "gp1.paused.u1")
        #expect(
            sim.respond(Self.request(.post, "/control/google/purchase", body: Array(#"{"scenario":"nope"}"#.utf8))).status
                == .badRequest)
        #expect(
            sim.respond(Self.request(.post, "/control/google/void", body: Array(#"{"purchase_token":"gp1.paused.u1"}"#.utf8)))
                .status
                == .noContent)
        #expect(
            sim.respond(Self.request(.post, "/control/google/outage", body: Array(#"{"seconds":5}"#.utf8))).status == .noContent)
        let access = try JSONValue.parse(
            sim.respond(Self.request(.post, "/token", body: Self.form(try Self.assertion(now: clock.now)))).body)["access_token"]!
            .string!
        let path = "/androidpublisher/v3/applications/com.example.app/purchases/subscriptionsv2/tokens/gp1.paused.u1"
        #expect(sim.respond(Self.request(.get, path, bearer: access)).status == .serviceUnavailable)
        clock.advance(by: 5_000)
        let answer = sim.respond(Self.request(.get, path, bearer: access))
        #expect(try SubscriptionPurchase(try JSONValue.parse(answer.body)).state == .expired)  // voided
    }

    @Test func formValuesArePercentDecoded() {
        #expect(GooglePlaySimulator.percentDecoded("urn%3Aietf%3Aparams+x") == "urn:ietf:params x")
        #expect(GooglePlaySimulator.percentDecoded("bad%4") == nil)
    }
}

@Suite("Google Play simulator: Pub/Sub's pushes")
struct GooglePlaySimulatorPushTests {
    @Test func aPushIsSignedWithTheKeyItServesAndNamesTheToken() throws {
        let clock = TestClock()
        let pushKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let sim = GooglePlaySimulator(
            configuration: .init(
                packageNames: ["com.example.app"], clientEmail: GooglePlaySimulatorTests.email,
                publicKey: GooglePlaySimulatorTests.key.publicKey, tokenURI: GooglePlaySimulatorTests.tokenURI, pushKey: pushKey),
            clock: clock.wall)
        let certs = sim.respond(GooglePlaySimulatorTests.request(.get, "/oauth2/v3/certs"))
        let keys = try SigningKeys(jwks: certs.body)
        let answer = sim.respond(
            GooglePlaySimulatorTests.request(
                .post, "/control/google/push", body: Array(#"{"purchase_token":"gp1.active.p","notification_type":2}"#.utf8)))
        let pushed = try JSONValue.parse(answer.body)
        let authorization = try #require(pushed["authorization"]?.string)
        try PushTokenPolicy(audience: GooglePlaySimulator.pushAudience, email: GooglePlaySimulator.pushAccount)
            .verify(String(authorization.dropFirst(7)), keys: keys, now: clock.now)
        let push = try PlayPush(body: pushed["body"]!.jsonBytes)
        #expect(push.notification.kind == .subscription(type: 2, purchaseToken: "gp1.active.p"))
        #expect(push.notification.packageName == "com.example.app")
        let voided = try #require(sim.push("gp1.coins.p", voided: true))
        let voidedPush = try PlayPush(body: voided.body)
        guard case .voidedPurchase(_, let order?, let type, _) = voidedPush.notification.kind else {
            Issue.record("a voided purchase")
            return
        }
        #expect(order.hasPrefix("GPA.") && type == 2)
    }
}
