import Testing

@testable import Webhooks

@Suite struct StandardWebhooksSignatureTests {
    /// The scheme's own example: its secret, message id, time and body, and the signature the
    /// reference library (PyPI `standardwebhooks`) gives for them.
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let body = Array(#"{"test": 2432232314}"#.utf8)

    @Test func theHeadersAreTheSchemesByteForByte() {
        let headers = StandardWebhooksSignature.headers(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Self.body, secrets: [Self.secret])
        #expect(
            headers == [
                "webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp: 1614265330",
                "webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            ])
    }

    @Test func twoSecretsSignTwiceAndEitherVerifiesWithinTheTolerance() {
        let other = "whsec_" + String(repeating: "QUJD", count: 8)  // 24 bytes of "ABC…"
        let headers = StandardWebhooksSignature.headers(
            id: "evt_1", timestamp: 1000, body: Self.body, secrets: [Self.secret, other])
        let signature = String(headers[2].dropFirst("webhook-signature: ".count))
        #expect(signature.split(separator: " ").count == 2)
        func verdict(_ secrets: [String], now: Int64 = 1000, body: [UInt8] = Self.body, id: String = "evt_1")
            -> WebhookSignature.Verdict
        {
            StandardWebhooksSignature.verify(
                id: id, timestamp: "1000", signature: signature, body: body, secrets: secrets, now: now)
        }
        #expect(verdict([Self.secret]) == .valid && verdict([other]) == .valid)
        #expect(verdict(["whsec_" + String(repeating: "WFla", count: 8)]) == .mismatch)
        #expect(verdict([Self.secret], body: Self.body + [0x20]) == .mismatch)
        #expect(verdict([Self.secret], id: "evt_2") == .mismatch)
        #expect(verdict([Self.secret], now: 1301) == .stale && verdict([Self.secret], now: 1300) == .valid)
        #expect(
            StandardWebhooksSignature.verify(
                id: "evt_1", timestamp: nil, signature: signature, body: Self.body, secrets: [Self.secret], now: 1000)
                == .malformed)
    }

    @Test func aSecretIsAWhsecKeyOfTwentyFourToSixtyFourBytes() {
        #expect(StandardWebhooksSignature.key(Self.secret)?.count == 24)
        #expect(StandardWebhooksSignature.key("whsec_" + String(repeating: "A", count: 86))?.count == 64)  // unpadded
        #expect(StandardWebhooksSignature.key("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == nil)  // no prefix
        #expect(StandardWebhooksSignature.key("whsec_c2hvcnQ=") == nil)  // 5 bytes
        #expect(StandardWebhooksSignature.key("whsec_not base64!") == nil)
    }
}
