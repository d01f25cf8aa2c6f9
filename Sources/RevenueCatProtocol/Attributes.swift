package import JSON

/// The attributes an SDK posts (`POST /v1/subscribers/{id}/attributes`, and a purchase's
/// `attributes`): `{"attributes": {"<name>": {"value": "<text>" | null, "updated_at_ms": <ms>}}}`.
/// Each is taken or refused on its own, as the SDKs expect: the valid ones are stored, the others
/// come back as `attribute_errors` (code 7263).
package enum Attributes {
    /// One attribute as posted: its value (nil: unset it) and the device's time of the change.
    package struct Posted: Sendable, Equatable {
        package var name: String
        package var value: String?
        package var updatedAt: Int64

        package init(name: String, value: String?, updatedAt: Int64) {
            self.name = name
            self.value = value
            self.updatedAt = updatedAt
        }
    }

    /// A name's bytes at most (receiptd's bound; RevenueCat publishes none the SDKs enforce).
    static let maxNameBytes = 255
    /// A value's bytes at most.
    static let maxValueBytes = 1_000

    /// The attributes of `body`'s `attributes` object: those taken, and an error for each refused.
    /// Throws 7264 when there is no such object to read.
    package static func read(_ body: JSONValue) throws(SDKError) -> (taken: [Posted], refused: [SDKError.AttributeError]) {
        guard case .object(let members)? = body["attributes"] else {
            throw .invalidAttributesBody("`attributes` must be an object of {\"value\", \"updated_at_ms\"} by name.")
        }
        var taken: [Posted] = []
        var refused: [SDKError.AttributeError] = []
        for (key, entry) in members.sorted(by: { $0.key.string.utf8.lexicographicallyPrecedes($1.key.string.utf8) }) {
            let name = key.string
            switch check(name, entry) {
            case .success(let posted): taken.append(posted)
            case .failure(let error): refused.append(error)
            }
        }
        return (taken, refused)
    }

    private static func check(_ name: String, _ entry: JSONValue) -> Result<Posted, SDKError.AttributeError> {
        func refuse(_ message: String) -> Result<Posted, SDKError.AttributeError> {
            .failure(.init(key: name, message: message))
        }
        guard (1...maxNameBytes).contains(name.utf8.count), !name.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            return refuse("A name is 1 to \(maxNameBytes) bytes, without control characters.")
        }
        guard case .number(_, let text)? = entry["updated_at_ms"], let updatedAt = Int64(text) ?? Double(text).map(Int64.init),
            updatedAt >= 0
        else {
            return refuse("`updated_at_ms` is required: when the device changed it, in ms since 1970.")
        }
        let value: String?
        switch entry["value"] {
        case nil, .null?: value = nil
        case .string(let text)?: value = text
        default: return refuse("`value` is a string, or null to unset it.")
        }
        if let value {
            guard value.utf8.count <= maxValueBytes else { return refuse("A value is at most \(maxValueBytes) bytes.") }
            if name == "$email", !value.isEmpty, !isEmail(value) { return refuse("Email address is not a valid email.") }
        }
        return .success(Posted(name: name, value: value, updatedAt: updatedAt))
    }

    /// An address of the form `local@domain.tld`: one `@`, something before it, a dot after it,
    /// no space.
    static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !text.contains(" ") else { return false }
        let domain = parts[1]
        guard let dot = domain.lastIndex(of: "."), dot != domain.startIndex else { return false }
        return domain.index(after: dot) != domain.endIndex
    }
}
