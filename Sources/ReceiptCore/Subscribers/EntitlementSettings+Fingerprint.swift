extension EntitlementSettings {
    /// FNV-1a 64 of the settings' canonical text (``canonicalText(_:)``): the same for the same
    /// rules, catalog and policy in every process, whatever order their dictionaries hold, and
    /// different when any of them differs. A kept document is read only by a process whose
    /// settings have the fingerprint it was derived with (``Storage/DocumentStore``), so an
    /// instance started with new entitlements derives again rather than serve the old answer.
    package var fingerprint: String { SubscriberDocument.fnv1a64([Array(Self.canonicalText(self).utf8)]) }

    /// `value` written out field by field, by reflection, so that a field added to the settings
    /// joins without anyone listing it: a type's name, then its members in declaration order; a
    /// dictionary's or a set's members sorted by their own text (Swift's hashing is seeded per
    /// process, so their iteration order is not); a leaf (a string, a number, a case without a
    /// payload) as `String(reflecting:)` writes it, its bytes as they are.
    static func canonicalText(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        let type = String(reflecting: mirror.subjectType)
        guard !mirror.children.isEmpty else {
            // An enum case without a payload, an empty collection or a leaf.
            switch mirror.displayStyle {
            case .collection?, .dictionary?, .set?, .optional?: return "\(type)[]"
            default: return "\(type)(\(String(reflecting: value)))"
            }
        }
        var members = mirror.children.map { ($0.label.map { "\($0):" } ?? "") + canonicalText($0.value) }
        switch mirror.displayStyle {
        case .dictionary?, .set?: members.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        default: break
        }
        return "\(type)[\(members.joined(separator: ","))]"
    }
}
