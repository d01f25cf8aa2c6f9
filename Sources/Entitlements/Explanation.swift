/// Why the derivation decided what it did: a stable rule id, the decision in words, and the facts
/// it used (which transaction, which renewal field, the time it compared against).
package struct Explanation: Sendable, Equatable {
    /// A stable identifier of the rule that decided, e.g. `active_period`, `refunded_current_period`.
    package var rule: String
    /// The decision in words, for a person.
    package var decision: String
    package var facts: [Fact]

    package init(rule: String, decision: String, facts: [Fact]) {
        self.rule = rule
        self.decision = decision
        self.facts = facts
    }
}

/// One named fact; names are snake_case and stable.
package struct Fact: Sendable, Equatable {
    package enum Value: Sendable, Equatable {
        case text(String)
        /// Epoch milliseconds; shown as RFC 3339.
        case time(Int64)
        case flag(Bool)
        case number(Int64)
    }

    package var name: String
    package var value: Value

    package init(_ name: String, _ value: Value) {
        self.name = name
        self.value = value
    }

    package static func text(_ name: String, _ value: String?) -> Fact? { value.map { Fact(name, .text($0)) } }
    package static func time(_ name: String, _ value: Int64?) -> Fact? { value.map { Fact(name, .time($0)) } }
    package static func flag(_ name: String, _ value: Bool?) -> Fact? { value.map { Fact(name, .flag($0)) } }
    package static func number(_ name: String, _ value: Int64?) -> Fact? { value.map { Fact(name, .number($0)) } }
}
