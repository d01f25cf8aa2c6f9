import FoundationEssentials
import SwiftASN1

/// A transaction id read out of an app receipt (Docs/apple-protocols.md §4.5), to ask the App Store
/// Server API about the customer: the PKCS#7 ContentInfo is BER-parsed with swift-asn1 (SignedData,
/// its encapsulated content, the receipt's attribute SET, each in-app purchase's attribute SET),
/// and the `transaction_id` (1703) or `original_transaction_id` (1705) met last is the answer.
///
/// Nothing is verified here: the id is only a key to ask Apple with, and everything stored comes
/// from Apple's signed answer to that question.
package enum AppReceipt {
    /// Why a receipt could not be read (never echoes its bytes).
    package struct Unreadable: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    static let bundleIdentifier: Int64 = 2
    static let inAppPurchase: Int64 = 17
    static let transactionID: Int64 = 1703
    static let originalTransactionID: Int64 = 1705
    static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]

    /// The last transaction id in the receipt's in-app purchases; nil when it holds none.
    package static func transactionID(base64 receipt: String) throws(Unreadable) -> String? {
        guard let bytes = Data(base64Encoded: receipt, options: .ignoreUnknownCharacters), !bytes.isEmpty else {
            throw Unreadable(description: "the receipt is not base64")
        }
        return try transactionID(der: Array(bytes))
    }

    package static func transactionID(der bytes: [UInt8]) throws(Unreadable) -> String? {
        do {
            let payload = try content(of: BER.parse(bytes))
            var found: String?
            for attribute in try attributes(BER.parse(payload)) where attribute.type == inAppPurchase {
                for field in try attributes(BER.parse(attribute.value))
                where field.type == transactionID || field.type == originalTransactionID {
                    let text = try ASN1UTF8String(berEncoded: BER.parse(field.value))
                    found = String(text)
                }
            }
            return found
        } catch let error as Unreadable {
            throw error
        } catch {
            throw Unreadable(description: "the receipt is not a PKCS#7 app receipt (\(error))")
        }
    }

    /// The app the receipt names (attribute 2, `bundle_id`): which App Store Connect account's
    /// shared secret goes with it. Nothing is verified: Apple's answer states the app again.
    package static func bundleID(base64 receipt: String) throws(Unreadable) -> String? {
        guard let bytes = Data(base64Encoded: receipt, options: .ignoreUnknownCharacters), !bytes.isEmpty else {
            throw Unreadable(description: "the receipt is not base64")
        }
        do {
            let payload = try content(of: BER.parse(Array(bytes)))
            for attribute in try attributes(BER.parse(payload)) where attribute.type == bundleIdentifier {
                return String(try ASN1UTF8String(berEncoded: BER.parse(attribute.value)))
            }
            return nil
        } catch let error as Unreadable {
            throw error
        } catch {
            throw Unreadable(description: "the receipt is not a PKCS#7 app receipt (\(error))")
        }
    }

    /// ContentInfo → `[0]` SignedData → encapContentInfo → `[0]` OCTET STRING: the receipt payload.
    static func content(of root: ASN1Node) throws -> [UInt8] {
        try BER.sequence(root, identifier: .sequence) { nodes in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard type == signedData else { throw Unreadable(description: "the receipt's content is not SignedData") }
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { signed in
                try BER.sequence(signed, identifier: .sequence) { fields in
                    _ = try Int(berEncoded: &fields)  // version
                    guard let digests = fields.next(), digests.identifier == .set else {
                        throw Unreadable(description: "SignedData has no digestAlgorithms")
                    }
                    guard let encapsulated = fields.next() else { throw Unreadable(description: "SignedData has no content") }
                    while fields.next() != nil {}  // certificates, crls, signerInfos: not needed to read an id
                    return try BER.sequence(encapsulated, identifier: .sequence) { inner in
                        _ = try ASN1ObjectIdentifier(berEncoded: &inner)
                        return try BER.explicitlyTagged(&inner, tagNumber: 0, tagClass: .contextSpecific) { octets in
                            Array(try ASN1OctetString(berEncoded: octets).bytes)
                        }
                    }
                }
            }
        }
    }

    /// A SET OF `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    static func attributes(_ node: ASN1Node) throws -> [(type: Int64, value: [UInt8])] {
        try BER.set(node, identifier: .set) { nodes in
            var out: [(Int64, [UInt8])] = []
            while let attribute = nodes.next() {
                out.append(
                    try BER.sequence(attribute, identifier: .sequence) { fields in
                        let type = try Int64(berEncoded: &fields)
                        _ = try Int64(berEncoded: &fields)
                        let value = try ASN1OctetString(berEncoded: &fields)
                        return (type, Array(value.bytes))
                    })
            }
            return out
        }
    }
}
