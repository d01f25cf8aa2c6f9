package import Entitlements
package import Identifiers
package import JSON
import Storage

/// The identifiers that name a person's purchases or Apple Account, as the subscriber document
/// and explanations write them, and an answer to an app (a public key: anyone's) cut down to
/// those it proved it holds (Docs/security.md "The public key is public"). Identifiers are their
/// bytes: proving one spelling of an id shows no other.
package enum PurchaseIdentifiers {
    /// The members whose values are such identifiers.
    package static let members: Set<Identifier> = [
        "original_transaction_id", "store_transaction_id", "transaction_id", "app_transaction_id", "order_id",
        "purchase_token",
    ]

    /// Every identifier `value` names, at any depth.
    package static func all(in value: JSONValue) -> Set<Identifier> {
        var found: Set<Identifier> = []
        func walk(_ v: JSONValue) {
            switch v {
            case .object(let fields):
                for (key, member) in fields {
                    if case .string(let text) = member, members.contains(key) {
                        found.insert(Identifier(text))
                    } else {
                        walk(member)
                    }
                }
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(value)
        return found
    }

    /// The identifiers `facts` state: what posting them proves the poster holds.
    package static func of(_ facts: VerifiedFacts) -> Set<Identifier> {
        var ids: Set<Identifier> = []
        for p in facts.purchases {
            ids.insert(Identifier(p.fact.transactionID))
            ids.insert(Identifier(p.fact.originalTransactionID))
            if let app = p.fact.appTransactionID { ids.insert(Identifier(app)) }
        }
        return ids
    }

    /// `proof` and every identifier of the purchases it names: an entry (a subscription, a
    /// purchase) naming one proven identifier is the poster's to see whole, its
    /// `app_transaction_id` included, whichever store stated which.
    package static func widened(_ proof: Set<Identifier>, in value: JSONValue) -> Set<Identifier> {
        var shown = proof
        func walk(_ v: JSONValue) {
            switch v {
            case .object(let fields):
                let own = fields.compactMap { key, member -> Identifier? in
                    guard members.contains(key), case .string(let text) = member else { return nil }
                    return Identifier(text)
                }
                if own.contains(where: proof.contains) { shown.formUnion(own) }
                fields.values.forEach(walk)
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(value)
        return shown
    }

    /// What a hidden identifier reads as inside text (an explanation's words).
    package static let hidden = "(hidden)"

    /// `value` with every identifier not in `keeping` written `null`, and written ``hidden``
    /// where text quotes it (an explanation's decision): what an app may be shown.
    package static func redacted(_ value: JSONValue, keeping: Set<Identifier>) -> JSONValue {
        let hiding = all(in: value).subtracting(keeping).sorted { $0.string.utf8.count > $1.string.utf8.count }
        guard !hiding.isEmpty else { return value }
        let hidden = Set(hiding)
        func walk(_ v: JSONValue, member: Identifier?) -> JSONValue {
            switch v {
            case .object(let fields):
                var out: [Identifier: JSONValue] = [:]
                for (key, inner) in fields { out[key] = walk(inner, member: key) }
                return .object(out)
            case .array(let items): return .array(items.map { walk($0, member: member) })
            case .string(let text) where member.map(members.contains) == true:
                return hidden.contains(Identifier(text)) ? .null : v
            case .string(let text):
                var bytes = Array(text.utf8)
                for id in hiding { bytes = replacing(Array(id.string.utf8), in: bytes) }
                return .string(String(decoding: bytes, as: UTF8.self))
            default: return v
            }
        }
        return walk(value, member: nil)
    }

    /// `text` with every run of `id`'s bytes written ``hidden``: by bytes, as the ids are told
    /// apart (`String`'s search would also find another spelling of the id). A match of valid
    /// UTF-8 in valid UTF-8 begins and ends on a character's bytes, so the text stays valid.
    static func replacing(_ id: [UInt8], in text: [UInt8]) -> [UInt8] {
        guard !id.isEmpty, text.count >= id.count else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var i = 0
        while i < text.count {
            if i + id.count <= text.count, text[i] == id[0], text[i..<(i + id.count)].elementsEqual(id) {
                out += hidden.utf8
                i += id.count
            } else {
                out.append(text[i])
                i += 1
            }
        }
        return out
    }
}
