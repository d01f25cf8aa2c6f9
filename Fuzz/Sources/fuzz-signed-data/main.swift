import Dispatch
import Foundation
import JSON
import X509

// Built with -enable-testing (Scripts/fuzz.sh) to reach Apple's fact mapping (AppleFacts) and
// the use cases' derivation.
@testable import AppStore
@testable import Entitlements
@testable import ReceiptCore
@testable import Storage

// libFuzzer entry over Apple's signed data, trusting Apple's test CA. The first byte
// picks what the rest is:
//   0: a compact JWS as text, verified as a transaction, renewal info and a notification;
//   1: transaction payload JSON, 2: renewal info payload JSON, 3: notification payload JSON
//      (a `data.signedTransactionInfo` or `signedRenewalInfo` given as an object is signed too):
//      signed with the test leaf so it passes the signature and chain, then verified, mapped to
//      stored records and facts, derived and rendered as a subscriber document.
// Nothing may trap (a conversion, an overflow, an index); a verified date outside AppleDate.range,
// or a JSON member name that does not survive a round trip, is a finding.

let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/ReceiptTesting/Fixtures/SignedData")

func fixture(_ name: String) -> String {
    guard let text = try? String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8) else {
        fatalError("fuzz-signed-data: missing fixture \(name) under \(fixtures.path)")
    }
    return text
}

let signer = try! JWSSigner(
    keyPEM: fixture("testLeaf.key"), chainPEM: [fixture("testLeaf.pem"), fixture("testIntermediate.pem"), fixture("testCA.pem")])
let testRoot = try! Certificate(derEncoded: Array(try! Data(contentsOf: fixtures.appendingPathComponent("testCA.der"))))
/// 2025-01-01, inside the test PKI's validity.
let now: Int64 = 1_735_689_600_000
let verifier = SignedDataVerifier(
    configuration: .init(roots: [testRoot], bundleIDs: ["com.example"], appAppleIDs: [1234]), now: { now })
let state = SubscriberState(
    settings: EntitlementSettings(
        rules: EntitlementRules(["premium": ["monthly", "yearly", "lifetime"]]),
        catalog: Catalog(["lifetime": .nonConsumable, "pass": .nonRenewing(CalendarDuration(iso8601: "P1M")!)]),
        policy: DerivationPolicy()))

/// Runs `body` to completion on Swift's pool; libFuzzer's thread waits.
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}

func check(_ date: Int64?, _ what: String) {
    if let date, !AppleDate.range.contains(date) { fatalError("a verified \(what) outside AppleDate.range: \(date)") }
}

/// Verified StoreKit data through the same mapping, derivation and rendering a stored purchase gets.
func mapAndDerive(_ transaction: SignedTransaction?, _ renewal: SignedRenewalInfo?, statedAt: Int64?) {
    if let t = transaction {
        check(t.purchaseDate, "purchaseDate")
        check(t.expiresDate, "expiresDate")
        check(t.revocationDate, "revocationDate")
    }
    check(renewal?.gracePeriodExpiresDate, "gracePeriodExpiresDate")
    let verified = AppleFacts.facts(transaction: transaction, renewal: renewal, statedAt: statedAt)
    let subscriber = SubscriberRecord(
        appUserID: "fuzz", version: 1, stateHash: nil, purchases: verified.purchases,
        renewals: verified.renewals.enumerated().map {
            Stated(
                RenewalObservation(observedAt: statedAt ?? now, sequence: Int64($0.offset + 1), renewal: $0.element.fact),
                rawJSON: $0.element.rawJSON)
        },
        transfers: [])
    let facts = subscriber.pinnedFacts
    for at in [now, AppleDate.range.upperBound] {
        let document = state.document(subscriber, facts: facts, now: at)
        let rendered = document.rendered(version: 1, now: at, explain: true)
        guard (try? JSONValue.parse(rendered.jsonBytes)) == rendered else { fatalError("a document does not round-trip") }
        _ = History.events(facts, appUserID: "fuzz", catalog: Catalog(), policy: .init(), asOf: at)
    }
}

/// `payload` with any nested payload given as an object signed into the JWS string Apple sends.
func signingNested(_ payload: JSONValue) -> JSONValue {
    guard case .object(var fields) = payload, case .object(var data)? = fields["data"] else { return payload }
    for key in ["signedTransactionInfo", "signedRenewalInfo"] {
        if let nested = data[Identifier(key)], case .object = nested, let jws = try? signer.sign(nested) {
            data[Identifier(key)] = .string(jws)
        }
    }
    fields["data"] = .object(data)
    return .object(fields)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignedData(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let mode = data[0] % 4
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if mode == 0 {
        let text = String(decoding: rest, as: UTF8.self)
        blocking {
            _ = try? await verifier.transaction(text)
            _ = try? await verifier.renewalInfo(text)
            _ = try? await verifier.notification(text)
        }
        return 0
    }
    guard let payload = try? JSONValue.parse(rest) else { return 0 }
    if case .object(let members) = payload {
        for name in members.keys
        where (try? JSONValue.parse(JSONValue.string(name.string).jsonBytes))?.string != name.string
            && !name.string.isEmpty
        {
            fatalError("a member name does not survive a round trip")
        }
    }
    let signed = mode == 3 ? signingNested(payload) : payload
    guard let jws = try? signer.sign(signed) else { return 0 }
    blocking {
        switch mode {
        case 1:
            if let t = try? await verifier.transaction(jws) { mapAndDerive(t, nil, statedAt: t.signedDate) }
        case 2:
            if let r = try? await verifier.renewalInfo(jws) { mapAndDerive(nil, r, statedAt: r.signedDate) }
        default:
            if let n = try? await verifier.notification(jws) {
                check(n.signedDate, "signedDate")
                mapAndDerive(n.transaction, n.renewal, statedAt: n.signedDate)
            }
        }
    }
    return 0
}
