/// Why the derivation decided what it did: a stable rule id, the decision in words, and the facts
/// it used (which transaction, which renewal field, the time it compared against).
public struct Explanation: Sendable, Equatable {
    /// A stable identifier of the rule that decided, e.g. `active_period`, `refunded_current_period`.
    public var rule: String
    /// The decision in words, for a person.
    public var decision: String
    public var facts: [Fact]

    public init(rule: String, decision: String, facts: [Fact]) {
        self.rule = rule
        self.decision = decision
        self.facts = facts
    }
}

/// One named fact; names are snake_case and stable.
public struct Fact: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case text(String)
        /// Epoch milliseconds; shown as RFC 3339.
        case time(Int64)
        case flag(Bool)
        case number(Int64)
    }

    public var name: String
    public var value: Value

    public init(_ name: String, _ value: Value) {
        self.name = name
        self.value = value
    }

    public static func text(_ name: String, _ value: String?) -> Fact? { value.map { Fact(name, .text($0)) } }
    public static func time(_ name: String, _ value: Int64?) -> Fact? { value.map { Fact(name, .time($0)) } }
    public static func flag(_ name: String, _ value: Bool?) -> Fact? { value.map { Fact(name, .flag($0)) } }
    public static func number(_ name: String, _ value: Int64?) -> Fact? { value.map { Fact(name, .number($0)) } }
}
