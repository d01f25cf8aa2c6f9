import AppStore
import Crypto
import Foundation
import FoundationEssentials
import HTTPServer
import JSON
import SwiftASN1
import Synchronization
@_spi(CMS) import X509

// The bearer JWT checked as Apple would, and the answers' shapes: queries, JSON and error
// bodies, and the PKCS#7 app receipt the simulator hands out.
extension ServerAPISimulator {
    /// The bearer JWT, checked as Apple would: ES256 by the key of the app its `bid` names (the
    /// main app's, or another account's app's), `kid`, `typ`, and every claim (`iss`, `aud`, `bid`,
    /// `iat` not in the future, `exp` after now and at most 60 minutes after `iat`).
    func authorized(_ header: String?, now: Int64) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let parts = header.dropFirst(7).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let h = JWSSigner.base64URLDecoded(parts[0]).flatMap({ try? JSONValue.parse($0) }),
            let c = JWSSigner.base64URLDecoded(parts[1]).flatMap({ try? JSONValue.parse($0) }),
            let raw = JWSSigner.base64URLDecoded(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw),
            let bid = c["bid"]?.string, let key = bid == bundleID ? key : otherKeys[bid]
        else { return false }
        guard h["alg"]?.string == "ES256", h["typ"]?.string == "JWT", h["kid"]?.string == key.keyID else { return false }
        let seconds = now / 1000
        guard c["iss"]?.string == key.issuerID, c["aud"]?.string == "appstoreconnect-v1",
            let iat = c["iat"]?.int64, let exp = c["exp"]?.int64, iat <= seconds + 60, exp > seconds, exp - iat <= 3_600
        else { return false }
        return key.publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8))
    }

    static func query(_ target: String) -> [String: String] {
        guard let q = target.firstIndex(of: "?") else { return [:] }
        var out: [String: String] = [:]
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            if kv.count == 2 { out[kv[0]] = kv[1].removingPercentEncoding ?? kv[1] }
        }
        return out
    }

    static func json(_ value: JSONValue) -> HTTPResponse {
        HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: value.jsonBytes)
    }

    static func error(_ status: Int, _ code: Int64, _ message: String, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(
            status: HTTPStatus(code: status), headers: headers,
            body: JSONValue.object(["errorCode": .int(code), "errorMessage": .string(message)]).jsonBytes)
    }

    static let notFound = error(404, 4_040_010, "Transaction id not found.")

    /// An app receipt as devices hold one: PKCS#7 SignedData (swift-certificates' CMS, signed by the
    /// test leaf) around the receipt's attribute SET, with one in-app purchase attribute (17) per
    /// transaction id, each holding its `transaction_id` (1703) and `original_transaction_id` (1705).
    package static func appReceipt(bundleID: String, transactions: [(id: String, original: String)]) -> String {
        func attribute(_ type: Int, _ value: [UInt8], into coder: inout DER.Serializer) throws {
            try coder.appendConstructedNode(identifier: .sequence) { c in
                try c.serialize(type)
                try c.serialize(1)
                try c.serialize(ASN1OctetString(contentBytes: value[...]))
            }
        }
        func utf8(_ text: String) throws -> [UInt8] {
            var c = DER.Serializer()
            try c.serialize(ASN1UTF8String(text))
            return c.serializedBytes
        }
        func set(_ build: (inout DER.Serializer) throws -> Void) throws -> [UInt8] {
            var c = DER.Serializer()
            try c.appendConstructedNode(identifier: .set) { try build(&$0) }
            return c.serializedBytes
        }
        let payload = try! set { c in
            try attribute(2, utf8(bundleID), into: &c)
            for t in transactions {
                let purchase = try set { p in
                    try attribute(1703, utf8(t.id), into: &p)
                    try attribute(1705, utf8(t.original), into: &p)
                }
                try attribute(17, purchase, into: &c)
            }
        }
        let signed = try! CMS.sign(
            payload, certificate: SimulatorPKI.leaf, privateKey: Certificate.PrivateKey(SimulatorPKI.leafKey), detached: false)
        return Data(signed).base64EncodedString()
    }
}
