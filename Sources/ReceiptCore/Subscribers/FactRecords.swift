import AppStore
package import Entitlements
import Identifiers
import JSON
package import Storage

/// What the derivation computes, as storage keeps it: events as rows, explanations' facts as
/// JSON.
enum FactRecords {
    /// Events as rows; their facts become a JSON object (times as RFC 3339).
    static func eventRecords(_ events: [LifecycleEvent]) -> [EventRecord] {
        events.map { e in
            EventRecord(
                key: e.key, type: e.kind.rawValue, at: e.at, productID: e.productID,
                originalTransactionID: e.originalTransactionID,
                transactionID: e.transactionID, factsJSON: String(decoding: json(e.facts).jsonBytes, as: UTF8.self))
        }
    }

    /// Facts as a JSON object: times RFC 3339, flags booleans, numbers integers.
    static func json(_ facts: [Fact]) -> JSONValue {
        var object: [Identifier: JSONValue] = [:]
        for f in facts {
            object[Identifier(f.name)] =
                switch f.value {
                case .text(let s): .string(s)
                case .time(let ms): .string(CivilTime.rfc3339(ms))
                case .flag(let b): .bool(b)
                case .number(let n): .int(n)
                }
        }
        return .object(object)
    }
}

extension SubscriberRecord {
    /// The pure derivation's input. Stored rows are where dates enter it: each is pinned into
    /// ``AppleDate/range`` (a row stored before dates were checked on entry cannot make the
    /// derivation's arithmetic overflow). Compute it once per read or save and pass it on.
    package var pinnedFacts: Facts { facts.clamped(to: AppleDate.range) }
}
