import Crypto
import Entitlements
import FoundationEssentials
import JSON
import ReceiptTesting
import SwiftASN1
import Testing
import X509

@testable import AppStore

/// Docs/apple-protocols.md §3.7 against Apple's test PKI, Apple's own signed samples and a real
/// Apple-signed notification: what passes, and each refusal for its own reason.
@Suite struct SignedDataVerifierTests {
    static let fixtures = Fixtures.url("SignedData")
    static func text(_ name: String) -> String {
        let text = (try? String(contentsOf: fixtures.appending(path: name), encoding: .utf8)) ?? ""
        return String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
    static func certificate(der name: String) throws -> Certificate {
        try Certificate(derEncoded: Array(try Data(contentsOf: fixtures.appending(path: name))))
    }

    /// 2025-01-01, inside the test PKI's 2023–2033.
    static let now: Int64 = 1_735_689_600_000
    static let testRoot = try! certificate(der: "testCA.der")
    static let appleRoot = try! certificate(der: "AppleRootCA-G3.cer")

    static func verifier(
        roots: [Certificate] = [testRoot], bundles: [String] = ["com.example"], appAppleIDs: [Int64] = [1234],
        environments: Set<StoreEnvironment> = [.production, .sandbox], time: SignedDataVerifier.ValidationTime = .signedDate
    ) -> SignedDataVerifier {
        SignedDataVerifier(
            configuration: .init(
                roots: roots, bundleIDs: bundles, appAppleIDs: appAppleIDs, environments: environments, validationTime: time),
            now: { now })
    }

    static func signer(leaf: String = "testLeaf.pem", intermediate: String = "testIntermediate.pem") throws -> JWSSigner {
        try JWSSigner(keyPEM: text("testLeaf.key"), chainPEM: [text(leaf), text(intermediate), text("testCA.pem")])
    }

    /// The refusal `body` ends with; nil when it passes (another error type fails the test).
    static func refusal(_ body: () async throws -> Void) async -> SignedDataError? {
        do {
            try await body()
            return nil
        } catch let error as SignedDataError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    static let transactionPayload: JSONValue = .object([
        "transactionId": .string("2000000000000002"), "originalTransactionId": .string("2000000000000001"),
        "bundleId": .string("com.example"), "productId": .string("monthly"), "purchaseDate": .number(0, text: "1735000000000"),
        "expiresDate": .number(0, text: "1737600000000"), "type": .string("Auto-Renewable Subscription"),
        "inAppOwnershipType": .string("PURCHASED"), "environment": .string("Sandbox"),
        "signedDate": .number(0, text: "1735000000000"),
    ])

    // MARK: Apple's samples and a real notification

    @Test func applesSignedSamplesVerifyAgainstTheTestCA() async throws {
        let v = Self.verifier()
        let notification = try await v.notification(Self.text("testNotification"))
        #expect(notification.notificationType == .test)
        #expect(notification.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(
            notification.bundleID == "com.example" && notification.appAppleID == 1234 && notification.environment == "Sandbox")
        let transaction = try await v.verify(Self.text("transactionInfo"))
        try v.checkTransactionClaims(transaction)
        #expect(transaction["signedDate"]?.int64 == 1_672_956_154_000)
        let renewal = try await v.verify(Self.text("renewalInfo"))
        try v.checkRenewalClaims(renewal)
    }

    @Test func applesNegativeSamplesFailForTheirReason() async {
        let v = Self.verifier()
        let wrongBundle = await Self.refusal { _ = try await v.notification(Self.text("wrongBundleId")) }
        #expect(wrongBundle?.code == "wrong_app")
        let missing = await Self.refusal { _ = try await v.notification(Self.text("missingX5CHeaderClaim")) }
        #expect(missing == .malformed("the header has no x5c"))
        // Apple's transactionInfo sample is for com.example: another configured app refuses it.
        let other = await Self.refusal {
            try await Self.verifier(bundles: ["com.other"]).checkTransactionClaims(v.verify(Self.text("transactionInfo")))
        }
        #expect(other?.code == "wrong_app")
    }

    @Test func realAppleSignedNotificationVerifiesAgainstRootG3AtItsSignedDate() async throws {
        let body = try JSONValue.parse(Array(Self.text("v2-test-notification-signed-payload.json").utf8))
        let jws = try #require(body["signedPayload"]?.string)
        let notification = try await Self.verifier(roots: [Self.appleRoot], bundles: ["com.Abilities"]).notification(jws)
        #expect(notification.notificationType == .test && notification.signedDate == 1_662_122_492_884)
        #expect(notification.notificationUUID == "5e09dcfc-205e-4ea1-9883-96676f394992")
        // Its leaf expired in 2023: at "now" it no longer verifies; and Apple's test CA is not its root.
        let atNow = await Self.refusal {
            _ = try await Self.verifier(roots: [Self.appleRoot], bundles: ["com.Abilities"], time: .now).notification(jws)
        }
        #expect(atNow == .notValidAt(.leaf, Self.now))
        let testRoot = await Self.refusal { _ = try await Self.verifier(bundles: ["com.Abilities"]).notification(jws) }
        #expect(testRoot?.code == "untrusted_chain")
    }

    // MARK: Data we sign with Apple's test leaf key

    @Test func signedWithTheTestLeafVerifies() async throws {
        let jws = try Self.signer().sign(Self.transactionPayload)
        let t = try await Self.verifier().transaction(jws)
        #expect(t.transactionID == "2000000000000002" && t.originalTransactionID == "2000000000000001")
        #expect(t.expiresDate == 1_737_600_000_000 && t.inAppOwnershipType == "PURCHASED" && t.isUpgraded == false)
    }

    @Test func anAppTransactionIsVerifiedAndItsAppAndEnvironmentChecked() async throws {
        func payload(bundle: String = "com.example", type: String = "Production", appleID: Int64 = 1234) -> JSONValue {
            .object(strings: [
                "bundleId": .string(bundle), "receiptType": .string(type), "appAppleId": .int(appleID),
                "appTransactionId": .string("704289572311"), "applicationVersion": .string("3.2"),
                "originalApplicationVersion": .string("2.0"), "originalPurchaseDate": .int(1_600_000_000_000),
                "receiptCreationDate": .int(1_735_600_000_000), "originalPlatform": .string("iOS"),
                "signedDate": .int(1_735_689_000_000),
            ])
        }
        let app = try await Self.verifier().appTransaction(try Self.signer().sign(payload()))
        #expect(app.appTransactionID == "704289572311" && app.bundleID == "com.example" && app.appAppleID == 1234)
        #expect(app.originalApplicationVersion == "2.0" && app.originalPurchaseDate == 1_600_000_000_000)
        #expect(app.environment == "Production" && app.originalPlatform == "iOS")
        #expect(
            await Self.refusal {
                _ = try await Self.verifier().appTransaction(try Self.signer().sign(payload(bundle: "com.other")))
            }
                == .wrongApp("bundleId com.other is not configured"))
        #expect(
            await Self.refusal { _ = try await Self.verifier().appTransaction(try Self.signer().sign(payload(appleID: 99))) }
                == .wrongApp("appAppleId 99 is not configured"))
        #expect(
            await Self.refusal {
                _ = try await Self.verifier(environments: [.production]).appTransaction(
                    try Self.signer().sign(payload(type: "Sandbox")))
            } == .wrongEnvironment("Sandbox"))
        // Sandbox needs no app Apple id.
        let sandbox = try await Self.verifier().appTransaction(try Self.signer().sign(payload(type: "Sandbox", appleID: 99)))
        #expect(sandbox.environment == "Sandbox")
    }

    @Test func aRealtimeRequestIsVerifiedAndItsAppAndEnvironmentChecked() async throws {
        func payload(environment: String = "Production", appleID: Int64 = 1234, product: String = "monthly") -> JSONValue {
            .object(strings: [
                "originalTransactionId": .string("2000000000000001"), "appAppleId": .int(appleID),
                "productId": .string(product), "userLocale": .string("en-US"),
                "requestIdentifier": .string("6f1c1c0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"), "signedDate": .int(1_735_689_000_000),
                "environment": .string(environment),
            ])
        }
        let request = try await Self.verifier().realtimeRequest(try Self.signer().sign(payload()))
        #expect(request.originalTransactionID == "2000000000000001" && request.productID == "monthly")
        #expect(request.userLocale == "en-US" && request.requestIdentifier == "6f1c1c0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f")
        #expect(request.signedDate == 1_735_689_000_000 && request.environment == "Production" && request.appAppleID == 1234)
        #expect(
            await Self.refusal { _ = try await Self.verifier().realtimeRequest(try Self.signer().sign(payload(appleID: 99))) }
                == .wrongApp("appAppleId 99 is not configured"))
        #expect(
            await Self.refusal {
                _ = try await Self.verifier(environments: [.production]).realtimeRequest(
                    try Self.signer().sign(payload(environment: "Sandbox")))
            } == .wrongEnvironment("Sandbox"))
        // A body that is not a request, or whose signature does not cover it, is refused.
        #expect(
            await Self.refusal {
                _ = try await Self.verifier().realtimeRequest(
                    try Self.signer().sign(.object(strings: ["productId": .string("x")])))
            }?.code == "invalid_jws")
        let parts = try Self.signer().sign(payload()).split(separator: ".")
        let forged = try Self.signer().sign(payload(product: "yearly")).split(separator: ".")
        #expect(
            await Self.refusal { _ = try await Self.verifier().realtimeRequest("\(parts[0]).\(forged[1]).\(parts[2])") }
                == .invalidSignature)
    }

    @Test func tamperedPayloadOrSignatureIsRefused() async throws {
        let jws = try Self.signer().sign(Self.transactionPayload)
        let parts = jws.split(separator: ".").map(String.init)
        var other = Self.transactionPayload
        if case .object(var fields) = other {
            fields["expiresDate"] = .number(0, text: "4102444800000")
            other = .object(fields)
        }
        let tamperedPayload = [parts[0], JWSSigner.base64URL(other.jsonBytes), parts[2]].joined(separator: ".")
        #expect(await Self.refusal { _ = try await Self.verifier().transaction(tamperedPayload) } == .invalidSignature)
        var signature = Array(CompactJWS.base64URLDecode(Array(parts[2].utf8))!)
        signature[10] ^= 0x01
        let tamperedSignature = [parts[0], parts[1], JWSSigner.base64URL(signature)].joined(separator: ".")
        #expect(await Self.refusal { _ = try await Self.verifier().transaction(tamperedSignature) } == .invalidSignature)
        // A DER signature (not JOSE's raw R‖S) is refused too.
        let der = try Self.signer().key.signature(for: Array("\(parts[0]).\(parts[1])".utf8)).derRepresentation
        let derSigned = [parts[0], parts[1], JWSSigner.base64URL(Array(der))].joined(separator: ".")
        #expect(await Self.refusal { _ = try await Self.verifier().transaction(derSigned) } == .invalidSignature)
    }

    @Test func certificatesWithoutApplesMarkersAreRefused() async throws {
        let badIntermediate = try Self.signer(
            leaf: "testInvalidIntermediateLeaf.pem", intermediate: "testInvalidOIDIntermediate.pem")
        #expect(
            await Self.refusal { _ = try await Self.verifier().transaction(badIntermediate.sign(Self.transactionPayload)) }
                == .missingMarker(.intermediate))
        let badLeaf = try Self.signer(leaf: "testInvalidOIDLeaf.pem")
        #expect(
            await Self.refusal { _ = try await Self.verifier().transaction(badLeaf.sign(Self.transactionPayload)) }
                == .missingMarker(.leaf))
    }

    @Test func aChainToAnotherRootIsRefusedWhateverX5cSends() async throws {
        let forged = try ForgedPKI()
        let jws = try JWSSigner(key: forged.leafKey, chain: [forged.leaf, forged.intermediate, forged.root])
            .sign(Self.transactionPayload)
        let refusal = await Self.refusal { _ = try await Self.verifier().transaction(jws) }
        #expect(refusal?.code == "untrusted_chain")
        // The same chain verifies when its root is the configured anchor: the refusal was the root's.
        _ = try await Self.verifier(roots: [forged.root]).transaction(jws)
    }

    @Test func certificatesOutsideTheirValidityAtSignedDateAreRefused() async throws {
        for signedDate: Int64 in [2_000_000_000_000, 1_600_000_000_000] {  // 2033-05 (expired), 2020-09 (not yet valid)
            var payload = Self.transactionPayload
            if case .object(var fields) = payload {
                fields["signedDate"] = .number(0, text: String(signedDate))
                payload = .object(fields)
            }
            let jws = try Self.signer().sign(payload)
            #expect(await Self.refusal { _ = try await Self.verifier().transaction(jws) } == .notValidAt(.leaf, signedDate))
            // Validated at "now" (2025) instead, the same data passes.
            _ = try await Self.verifier(time: .now).transaction(jws)
        }
    }

    @Test func aRememberedChainIsStillCheckedForValidityAndSignature() async throws {
        let v = Self.verifier()
        let signer = try Self.signer()
        _ = try await v.transaction(signer.sign(Self.transactionPayload))  // the chain is now remembered
        var late = Self.transactionPayload
        if case .object(var fields) = late {
            fields["signedDate"] = .number(0, text: "2000000000000")
            late = .object(fields)
        }
        #expect(await Self.refusal { _ = try await v.transaction(signer.sign(late)) } == .notValidAt(.leaf, 2_000_000_000_000))
        let parts = try signer.sign(Self.transactionPayload).split(separator: ".").map(String.init)
        var longer = Self.transactionPayload
        if case .object(var fields) = longer {
            fields["expiresDate"] = .number(0, text: "4102444800000")
            longer = .object(fields)
        }
        let otherPayload = [parts[0], JWSSigner.base64URL(longer.jsonBytes), parts[2]].joined(separator: ".")
        #expect(await Self.refusal { _ = try await v.transaction(otherPayload) } == .invalidSignature)
        let forged = try ForgedPKI()
        let foreign = JWSSigner(key: forged.leafKey, chain: [forged.leaf, forged.intermediate, forged.root])
        #expect(
            await Self.refusal { _ = try await v.transaction(foreign.sign(Self.transactionPayload)) }?.code == "untrusted_chain")
        _ = try await v.transaction(signer.sign(Self.transactionPayload))
    }

    @Test func claimsMustMatchTheConfiguredAppAndEnvironment() async throws {
        let jws = try Self.signer().sign(Self.transactionPayload)
        #expect(await Self.refusal { _ = try await Self.verifier(bundles: ["com.other"]).transaction(jws) }?.code == "wrong_app")
        #expect(
            await Self.refusal { _ = try await Self.verifier(environments: [.production]).transaction(jws) }
                == .wrongEnvironment("Sandbox"))
        var xcode = Self.transactionPayload
        if case .object(var fields) = xcode {
            fields["environment"] = .string("Xcode")
            xcode = .object(fields)
        }
        #expect(
            await Self.refusal { _ = try await Self.verifier().transaction(Self.signer().sign(xcode)) }
                == .wrongEnvironment("Xcode"))
    }

    @Test func productionNotificationsMustNameAConfiguredAppAppleID() async throws {
        func notification(environment: String, appAppleID: Int64?) -> JSONValue {
            var data: [Identifier: JSONValue] = ["bundleId": .string("com.example"), "environment": .string(environment)]
            if let appAppleID { data["appAppleId"] = .number(Double(appAppleID), text: String(appAppleID)) }
            return .object([
                "notificationType": .string("TEST"), "notificationUUID": .string("u-\(environment)-\(appAppleID ?? 0)"),
                "signedDate": .number(0, text: "1735000000000"), "data": .object(data),
            ])
        }
        let signer = try Self.signer()
        _ = try await Self.verifier().notification(signer.sign(notification(environment: "Production", appAppleID: 1234)))
        _ = try await Self.verifier().notification(signer.sign(notification(environment: "Sandbox", appAppleID: nil)))
        for wrong: Int64? in [999, nil] {
            let jws = try signer.sign(notification(environment: "Production", appAppleID: wrong))
            #expect(await Self.refusal { _ = try await Self.verifier().notification(jws) }?.code == "wrong_app")
        }
    }

    @Test func nestedSignedDataIsVerifiedOnItsOwn() async throws {
        let signer = try Self.signer()
        let good = try signer.sign(Self.transactionPayload)
        let parts = good.split(separator: ".").map(String.init)
        var signature = Array(CompactJWS.base64URLDecode(Array(parts[2].utf8))!)
        signature[0] ^= 0x80
        let badInner = [parts[0], parts[1], JWSSigner.base64URL(signature)].joined(separator: ".")
        func outer(_ inner: String, bundle: String = "com.example") throws -> String {
            try signer.sign(
                .object([
                    "notificationType": .string("DID_RENEW"), "notificationUUID": .string("n-1"),
                    "signedDate": .number(0, text: "1735000000000"),
                    "data": .object([
                        "bundleId": .string(bundle), "environment": .string("Sandbox"), "signedTransactionInfo": .string(inner),
                    ]),
                ]))
        }
        let ok = try await Self.verifier().notification(outer(good))
        #expect(ok.transaction?.transactionID == "2000000000000002")
        #expect(await Self.refusal { _ = try await Self.verifier().notification(outer(badInner)) } == .invalidSignature)
        // An outer notification for one app cannot carry another app's transaction.
        let twoApps = try outer(good, bundle: "com.example.two")
        let refusal = await Self.refusal {
            _ = try await Self.verifier(bundles: ["com.example", "com.example.two"]).notification(twoApps)
        }
        #expect(refusal?.code == "wrong_app")
    }

    /// RESCIND_CONSENT carries `appData` with a signed AppTransaction: verified on its own, and of
    /// the notification's app.
    @Test func aRescindConsentsAppTransactionIsVerifiedOnItsOwn() async throws {
        let signer = try Self.signer()
        func app(_ bundle: String) throws -> String {
            try signer.sign(
                .object([
                    "bundleId": .string(bundle), "receiptType": .string("Sandbox"), "appTransactionId": .string("704"),
                ]))
        }
        func outer(_ inner: String) throws -> String {
            try signer.sign(
                .object([
                    "notificationType": .string("RESCIND_CONSENT"), "notificationUUID": .string("n-2"),
                    "signedDate": .number(0, text: "1735000000000"),
                    "appData": .object([
                        "bundleId": .string("com.example"), "environment": .string("Sandbox"),
                        "signedAppTransactionInfo": .string(inner),
                    ]),
                ]))
        }
        let verifier = Self.verifier(bundles: ["com.example", "com.example.two"])
        let ok = try await verifier.notification(outer(app("com.example")))
        #expect(ok.appTransaction?.appTransactionID == "704" && ok.bundleID == "com.example")
        #expect(await Self.refusal { _ = try await verifier.notification(outer(app("com.example.two"))) }?.code == "wrong_app")
        let good = try app("com.example")
        let parts = good.split(separator: ".").map(String.init)
        var signature = Array(CompactJWS.base64URLDecode(Array(parts[2].utf8))!)
        signature[0] ^= 0x80
        let forged = [parts[0], parts[1], JWSSigner.base64URL(signature)].joined(separator: ".")
        #expect(await Self.refusal { _ = try await verifier.notification(outer(forged)) } == .invalidSignature)
    }

    @Test func malformedInputIsRefusedAsFormat() async throws {
        let signer = try Self.signer()
        let v = Self.verifier()
        for text in ["", "a.b", "a.b.c.d", "!!.e30.AA", "e30.e30.AA"] {
            #expect(await Self.refusal { _ = try await v.transaction(text) }?.code == "invalid_jws", "\(text)")
        }
        let hs256 = try signer.sign(Self.transactionPayload, header: ["alg": .string("HS256")])
        #expect(await Self.refusal { _ = try await v.transaction(hs256) } == .malformed("alg must be ES256"))
        let two = try signer.sign(Self.transactionPayload, header: ["x5c": .array([.string("AAAA"), .string("AAAA")])])
        #expect(await Self.refusal { _ = try await v.transaction(two) } == .malformed("x5c must hold 3 certificates, it holds 2"))
        let junk = try signer.sign(
            Self.transactionPayload, header: ["x5c": .array([.string("not base64!"), .string("AAAA"), .string("AAAA")])])
        #expect(await Self.refusal { _ = try await v.transaction(junk) }?.code == "invalid_certificate")
    }
}

/// A root, intermediate and leaf shaped like Apple's (markers included) but from nobody Apple knows.
struct ForgedPKI {
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let leafKey = P256.Signing.PrivateKey()

    init() throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let from = Date(timeIntervalSince1970: 1_672_531_200)  // 2023
        let until = Date(timeIntervalSince1970: 2_000_000_000)  // 2033
        let rootName = try DistinguishedName { CommonName("Apple Root CA - G3") }
        let intermediateName = try DistinguishedName { CommonName("Worldwide Developer Relations") }
        let leafName = try DistinguishedName { CommonName("Receipt Signing") }
        let ca = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true))
        }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: from, notValidAfter: until,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256, extensions: ca,
            issuerPrivateKey: .init(rootKey))
        var intermediateExtensions = ca
        try intermediateExtensions.append(
            Certificate.Extension(oid: SignedDataVerifier.intermediateMarker, critical: false, value: [0x05, 0x00]))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: from,
            notValidAfter: until, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: intermediateExtensions, issuerPrivateKey: .init(rootKey))
        var leafExtensions = Certificate.Extensions()
        try leafExtensions.append(
            Certificate.Extension(oid: SignedDataVerifier.leafMarker, critical: false, value: [0x05, 0x00]))
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: from, notValidAfter: until,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256, extensions: leafExtensions,
            issuerPrivateKey: .init(intermediateKey))
    }
}

@Suite struct AppleRootCATests {
    @Test func theBuiltInRootIsAppleRootCAG3() throws {
        var serializer = DER.Serializer()
        try serializer.serialize(AppleRootCA.g3)
        let file = Array(try Data(contentsOf: SignedDataVerifierTests.fixtures.appending(path: "AppleRootCA-G3.cer")))
        #expect(serializer.serializedBytes == file)
        let fingerprint = SHA256.hash(data: file).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(fingerprint == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
    }
}

/// Numbers from a stranger's JWS. Every date of a notification, a transaction and renewal
/// info at the edges of `Int64` (as a number or a string) is refused as `invalid_jws`, with the
/// process alive; the validation time is checked before anything is done with it, so a chain that
/// does not lead to the configured root cannot reach arithmetic on it either.
@Suite struct HostileDateTests {
    /// What an attacker writes into a date: Int64's edges as JSON numbers and as strings, values that
    /// round up to 2^63 as a Double, past Int64, negative, and text.
    static let edges: [JSONValue] = [
        .number(0, text: "9223372036854775807"), .string("9223372036854775807"), .number(0, text: "9223372036854775296"),
        .string("9223372036854775296"), .number(9.223372036854775808e18, text: "9.223372036854776e+18"),
        .string("9223372036854775808"), .number(0, text: "-9223372036854775808"), .string("-1"),
        .number(0, text: "253402300800000"), .string("soon"), .bool(true),
    ]

    static func with(_ payload: JSONValue, _ field: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var fields) = payload else { return payload }
        fields[Identifier(field)] = value
        return .object(fields)
    }

    static let renewalPayload: JSONValue = .object([
        "originalTransactionId": .string("2000000000000001"), "productId": .string("monthly"),
        "autoRenewStatus": .number(1, text: "1"), "environment": .string("Sandbox"),
        "signedDate": .number(0, text: "1735000000000"),
    ])

    @Test(arguments: edges) func signedDateOutOfRangeIsInvalidJWSBeforeTheChain(_ value: JSONValue) async throws {
        let signer = try SignedDataVerifierTests.signer()
        let jws = try signer.sign(Self.with(SignedDataVerifierTests.transactionPayload, "signedDate", value))
        // The configured root is Apple's: the test chain is a stranger's self-made chain with the markers.
        for roots in [[SignedDataVerifierTests.appleRoot], [SignedDataVerifierTests.testRoot]] {
            let refusal = await SignedDataVerifierTests.refusal {
                _ = try await SignedDataVerifierTests.verifier(roots: roots).transaction(jws)
            }
            #expect(refusal?.code == "invalid_jws", "\(value) with \(roots.count) root")
        }
    }

    @Test(arguments: ["purchaseDate", "originalPurchaseDate", "expiresDate", "revocationDate"], edges)
    func transactionDatesOutOfRangeAreInvalidJWS(_ field: String, _ value: JSONValue) async throws {
        let jws = try SignedDataVerifierTests.signer().sign(Self.with(SignedDataVerifierTests.transactionPayload, field, value))
        let refusal = await SignedDataVerifierTests.refusal {
            _ = try await SignedDataVerifierTests.verifier().transaction(jws)
        }
        #expect(refusal?.code == "invalid_jws", "\(field) = \(value)")
    }

    @Test(arguments: ["gracePeriodExpiresDate", "renewalDate", "signedDate"], edges)
    func renewalDatesOutOfRangeAreInvalidJWS(_ field: String, _ value: JSONValue) async throws {
        let jws = try SignedDataVerifierTests.signer().sign(Self.with(Self.renewalPayload, field, value))
        let refusal = await SignedDataVerifierTests.refusal { _ = try await SignedDataVerifierTests.verifier().renewalInfo(jws) }
        #expect(refusal?.code == "invalid_jws", "\(field) = \(value)")
    }

    @Test(arguments: edges) func notificationSignedDateOutOfRangeIsInvalidJWS(_ value: JSONValue) async throws {
        let notification: JSONValue = .object([
            "notificationType": .string("TEST"), "notificationUUID": .string("u-1"), "signedDate": value,
            "data": .object(["bundleId": .string("com.example"), "environment": .string("Sandbox")]),
        ])
        let jws = try SignedDataVerifierTests.signer().sign(notification)
        for roots in [[SignedDataVerifierTests.appleRoot], [SignedDataVerifierTests.testRoot]] {
            let refusal = await SignedDataVerifierTests.refusal {
                _ = try await SignedDataVerifierTests.verifier(roots: roots).notification(jws)
            }
            #expect(refusal?.code == "invalid_jws", "\(value)")
        }
    }

    @Test func theRangesEndsAreAccepted() async throws {
        let signer = try SignedDataVerifierTests.signer()
        for ms in ["1735000000000", "253402300799999"] {
            let payload = Self.with(SignedDataVerifierTests.transactionPayload, "expiresDate", .string(ms))
            let t = try await SignedDataVerifierTests.verifier().transaction(try signer.sign(payload))
            #expect(t.expiresDate == Int64(ms))
        }
        let empty = Self.with(SignedDataVerifierTests.transactionPayload, "expiresDate", .null)
        #expect(try await SignedDataVerifierTests.verifier().transaction(try signer.sign(empty)).expiresDate == nil)
    }
}
