/// A word of Apple's vocabulary (a notification's type or subtype), typed as Apple's own libraries
/// type it: each documented word a case, a word Apple adds later kept as sent (`other`), read by
/// its exact bytes.
package protocol AppleVocabulary: Hashable, Sendable, CustomStringConvertible {
    /// Every word Apple documents.
    static var known: [Self] { get }
    /// A word this version of receiptd does not know, as Apple sent it.
    static func other(_ text: String) -> Self
    /// As Apple spells it.
    var rawValue: String { get }
}

extension AppleVocabulary {
    /// The word Apple spells `text` (its exact bytes).
    package init(_ text: String) {
        self = Self.known.first { $0.rawValue.utf8.elementsEqual(text.utf8) } ?? .other(text)
    }

    package var description: String { rawValue }
}
