package import Entitlements
import Identifiers
package import JSON
import Storage

/// The identifiers that name a person's purchases or Apple Account, as the subscriber document
/// and explanations write them, and an answer to an app (a public key: anyone's) cut down to
/// those it proved it holds (Docs/security.md "The public key is public").
package enum PurchaseIdentifiers {
    /// The members whose values are such identifiers.
    package static let members: Set<Identifier> = [
        "original_transaction_id", "store_transaction_id", "transaction_id", "app_transaction_id", "order_id",
        "purchase_token",
    ]

    /// Every identifier `value` names, at any depth.
    package static func all(in value: JSONValue) -> Set<String> {
        var found: Set<String> = []
        func walk(_ v: JSONValue) {
            switch v {
            case .object(let fields):
                for (key, member) in fields {
                    if case .string(let text) = member, members.contains(key) { found.insert(text) } else { walk(member) }
                }
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(value)
        return found
    }

    /// The identifiers `facts` state: what posting them proves the poster holds.
    package static func of(_ facts: VerifiedFacts) -> Set<String> {
        var ids: Set<String> = []
        for p in facts.purchases {
            ids.insert(p.fact.transactionID)
            ids.insert(p.fact.originalTransactionID)
            if let app = p.fact.appTransactionID { ids.insert(app) }
        }
        return ids
    }

    /// `proof` and every identifier of the purchases it names: an entry (a subscription, a
    /// purchase) naming one proven identifier is the poster's to see whole, its
    /// `app_transaction_id` included, whichever store stated which.
    package static func widened(_ proof: Set<String>, in value: JSONValue) -> Set<String> {
        var shown = proof
        func walk(_ v: JSONValue) {
            switch v {
            case .object(let fields):
                let own = fields.compactMap { key, member -> String? in
                    guard members.contains(key), case .string(let text) = member else { return nil }
                    return text
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
    package static func redacted(_ value: JSONValue, keeping: Set<String>) -> JSONValue {
        let hiding = all(in: value).subtracting(keeping).sorted { $0.utf8.count > $1.utf8.count }
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
                return hidden.contains(text) ? .null : v
            case .string(var text):
                for id in hiding where text.contains(id) { text = text.replacing(id, with: Self.hidden) }
                return .string(text)
            default: return v
            }
        }
        return walk(value, member: nil)
    }
}
